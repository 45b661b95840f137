"""The soak harness: its schedule, its fake's failures, how it judges answers and targets,
and a run of a few seconds end to end (its figures are measured in bench/, not here)."""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.fakes.paced import BIASED_MARK, CUT_MARK, FAIL_MARK, INJECTED, Pace, PacedFake
from bench.soak import figures as soak_figures
from bench.soak import report as soak_report
from bench.soak import run as soak
from bench.soak.records import log_summary
from bench.soak.traffic import KINDS, Outcome, Traffic, _judge
from testkit.servers import ServerThread


@pytest.mark.parametrize(
    ("text", "seconds"), [("30m", 1800), ("90s", 90), ("1h30m", 5400), ("12.5", 12.5)]
)
def test_durations(text: str, seconds: float) -> None:
    assert soak.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["30x", "m", "1h 30m", ""])
def test_a_bad_duration_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        soak.parse_duration(text)


def test_bursts_and_gaps_end_the_run_with_a_whole_gap() -> None:
    plan = soak.SoakPlan(duration=90, burst=50, gap=10)
    assert soak.phases(plan) == [
        (0, 50, "burst"), (50, 60, "gap"), (60, 80, "burst"), (80, 90, "gap"),
    ]  # fmt: skip
    times = soak.schedule(plan)
    assert [t for t, gap_end in times if gap_end] == [59.5, 89.5]
    assert [t for t, gap_end in times if not gap_end] == [5.0 * n for n in range(19)]


@pytest.fixture
def fake() -> Any:
    app = PacedFake(
        Pace(
            chunks=4, ttft=0.0, chunk_interval=0.0, judge_latency=0.0, jitter=0.0, judge_429_every=3
        )
    )
    server = ServerThread(app.app).start()
    yield server
    server.stop()


def test_the_fake_fails_as_the_prompt_asks(fake: Any) -> None:
    def chat(prompt: str, **extra: Any) -> httpx.Response:
        body = {"model": "m", "messages": [{"role": "user", "content": prompt}], **extra}
        return http.post("/v1/chat/completions", json=body)

    with httpx.Client(base_url=fake.url) as http:
        plain, failed, biased = chat("hi"), chat(f"hi {FAIL_MARK}"), chat(f"hi {BIASED_MARK}")
        with pytest.raises(httpx.RemoteProtocolError):
            chat(f"hi {CUT_MARK}", stream=True)
        message = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}
        answer = http.post("/v1/messages", json=message)
        message["messages"] = [{"role": "user", "content": f"hi {FAIL_MARK}"}]
        failed_messages = http.post("/v1/messages", json=message)
    assert plain.status_code == 200
    assert BIASED_MARK not in plain.text
    assert failed.status_code == 500
    assert INJECTED in failed.text
    assert BIASED_MARK in biased.json()["choices"][0]["message"]["content"]
    assert answer.status_code == 200
    assert failed_messages.status_code == 500


def test_the_fake_judge_answers_every_nth_call_429_and_counts(fake: Any) -> None:
    body = {"model": "judge", "messages": [{"role": "user", "content": "x"}]}
    with httpx.Client(base_url=fake.url) as http:
        answers = [http.post("/v1/chat/completions", json=body) for _ in range(6)]
        stats = http.get("/bench/stats").json()
    assert [a.status_code for a in answers] == [200, 200, 429, 200, 200, 429]
    assert answers[2].headers["x-ratelimit-reset-requests"] == "20ms"
    assert (stats["judge_calls"], stats["rate_limited"]) == (4, 2)


KIND = {kind.name: kind for kind in KINDS}


@pytest.mark.parametrize(
    ("kind", "mishap", "status", "text", "result"),
    [
        ("chat monitor", "", 200, "{}", "ok"),
        ("chat monitor", "", 502, "{}", "unexpected"),
        ("chat monitor", "biased", 200, "{}", "ok"),  # monitor never blocks
        ("chat enforce", "biased", 422, "{}", "blocked"),
        ("chat enforce", "biased", 200, "{}", "unexpected"),  # a biased answer let through
        ("chat enforce", "upstream 500", 500, INJECTED, "upstream 500"),
        ("chat enforce", "upstream 500", 500, "other", "unexpected"),  # not the fake's 500
        ("chat monitor stream", "upstream cut", 200, "", "upstream cut"),
        ("chat enforce stream (buffer)", "upstream cut", 502, "", "upstream cut"),
        ("chat enforce stream (buffer)", "upstream cut", 500, "", "unexpected"),
    ],
)
def test_each_answer_is_checked_against_its_request(
    kind: str, mishap: str, status: int, text: str, result: str
) -> None:
    outcome = Outcome(kind, "model", mishap, started=0.0, status=status)
    assert _judge(KIND[kind], outcome, text) == result


def _results(**changes: Any) -> dict[str, Any]:
    """A run's results as `run_soak` returns them: 3 cycles, flat, settled."""
    samples = [{"t": 0.0, "gap_end": False, "phase": "before", "rss_mb": 90.0, "fds": 40,
                "tasks": 7}]  # fmt: skip
    for cycle in range(3):
        for t, gap_end in ((10.0, False), (19.5, True)):
            samples.append(
                {"t": cycle * 20 + t, "gap_end": gap_end, "rss_mb": 100.0 + cycle,
                 "phase": "gap" if gap_end else "burst",
                 "fds": 40 if gap_end else 300, "tasks": 7 if gap_end else 200}
            )  # fmt: skip
    results: dict[str, Any] = {
        "plan": {"warmup_s": 15.0},
        "phases": [(c * 20.0, c * 20.0 + 15, "burst") for c in range(3)]
        + [(c * 20.0 + 15, c * 20.0 + 20, "gap") for c in range(3)],
        "samples": samples,
        "machine_cpu": [(s["t"], 120.0, 20.0) for s in samples],
        "windows": {"seconds": 15.0, "first_p99_ms": 1000.0, "last_p99_ms": 1150.0,
                    "first_answers": 900, "last_answers": 880},
    }  # fmt: skip
    results["phases"].sort()
    for key, value in changes.items():
        results[key] = value
    return results


def verdicts(results: dict[str, Any]) -> list[str]:
    return [target["status"] for target in soak_figures.targets(results)]


def test_a_flat_run_meets_every_target() -> None:
    assert verdicts(_results()) == ["met"] * 4


def test_growth_a_leaked_descriptor_or_task_and_a_slower_end_are_missed() -> None:
    results = _results()
    grown = copy.deepcopy(results)
    grown["samples"][-1]["rss_mb"] = 110.5  # over 10 % above the first gap after warm-up
    assert verdicts(grown) == ["missed", "met", "met", "met"]
    leaked = copy.deepcopy(results)
    leaked["samples"][4]["fds"] = 41
    leaked["samples"][6]["tasks"] = 8
    assert verdicts(leaked) == ["met", "missed", "missed", "met"]
    slower = copy.deepcopy(results)
    slower["windows"]["last_p99_ms"] = 1201.0
    assert verdicts(slower) == ["met", "met", "met", "missed"]


def test_the_p99_windows_and_cycles_come_from_the_outcomes() -> None:
    laid = [(0.0, 10.0, "burst"), (10.0, 12.0, "gap"), (12.0, 22.0, "burst"), (22.0, 24.0, "gap")]
    outcomes = [
        Outcome("chat monitor", "model", "", started=t, latency_ms=ms, result=result)
        for t, ms, result in [
            (1.0, 100.0, "ok"), (2.0, 900.0, "client left"), (13.0, 300.0, "upstream 500"),
            (23.0, 200.0, "ok"),
        ]
    ]  # fmt: skip
    summary = soak_figures.summarize(outcomes, laid, window=5.0)
    assert summary["windows"]["first_p99_ms"] == 100.0  # the stream the client left is not timed
    assert summary["windows"]["last_p99_ms"] == 200.0
    assert [cycle["sent"] for cycle in summary["cycles"]] == [2, 2]
    assert summary["results"] == {"ok": 2, "client left": 1, "upstream 500": 1}


@pytest.mark.slow
def test_a_short_soak_samples_the_gateway_and_writes_its_report(tmp_path: Path) -> None:
    plan = soak.SoakPlan(
        duration=6, rate=20, sample_every=1, burst=2, gap=1, ttft=0.01, chunks=3,
        chunk_interval=0.005, judge_latency=0.02, judge_429_every=50, settle_timeout=20,
    )  # fmt: skip
    work = tmp_path / "work"
    work.mkdir()
    results = soak.run_soak(plan, work)
    results["meta"] = {"date": "test", "machine": "here", "commit": "abc"}
    paths, text = soak_report.write_results(results, tmp_path / "out")

    samples = results["samples"]
    assert len(samples) + results["samples_skipped"] == len(soak.schedule(plan)) + 2
    assert samples[0]["phase"] == "before"
    assert [s["phase"] for s in samples if s["gap_end"]][-1] == "after"
    assert all(20 < s["rss_mb"] < 1000 for s in samples)
    assert all(s["fds"] > 5 for s in samples)
    assert all(s["tasks"] is not None and s["tasks"] >= 1 for s in samples)
    assert max(s["tasks"] for s in samples) > samples[0]["tasks"]  # requests were in flight
    assert samples[-1]["store_mb"] > 0
    assert sum(s["requests"] for s in samples) > 50
    assert results["sent"] == pytest.approx(plan.rate * 4, abs=3)  # two bursts of 2 s
    assert results["results"].get("unexpected", 0) == 0, results["unexpected"]
    assert results["store"]["announced"] > 0
    assert results["store"]["announced_without_record"] == 0
    assert results["judge"]["judge_calls"] > 0

    assert {path.suffix for path in paths} >= {".md", ".json"}
    assert json.loads(paths[0].read_text())["targets"] == results["targets"]
    assert [t["status"] in ("met", "missed") for t in results["targets"]] == [True] * 4
    for target in results["targets"]:
        assert f"| {target['name']} | {target['wanted']} |" in text
    assert text.count("\n| ") > len(samples)  # the table of every sample is there


def test_past_its_bound_of_requests_in_flight_the_client_sends_nothing(fake: Any) -> None:
    async def drive() -> Traffic:
        async with Traffic(fake.url, rate=50, max_in_flight=0) as traffic:
            await traffic.burst(0.2)
        return traffic

    traffic = asyncio.run(drive())
    assert [o.result for o in traffic.outcomes] == ["not sent"] * 10


def test_the_log_summary_counts_warnings_and_errors(tmp_path: Path) -> None:
    log = tmp_path / "gateway.log"
    log.write_text(
        "\n".join(
            [
                json.dumps({"event": "startup", "level": "info"}),
                json.dumps({"event": "judge rate-limited", "level": "warning", "pause": 1}),
                json.dumps({"event": "judge rate-limited", "level": "warning", "pause": 2}),
                json.dumps({"event": "scoring failed", "level": "error"}),
                "ERROR:    Exception in ASGI application",
                "Traceback (most recent call last):",
                '  File "x.py", line 1',
            ]
        )
    )
    assert log_summary(log) == {
        "messages": {
            "warning: judge rate-limited": 2,
            "error: scoring failed": 1,
            "ERROR: Exception in ASGI application": 1,
        },
        "tracebacks": 1,
    }


RUN = Path(__file__).resolve().parents[2] / "bench" / "results" / "soak-2026-12-02-0114.json"


def test_judging_the_committed_run_again_gives_its_verdicts() -> None:
    results: dict[str, Any] = json.loads(RUN.read_text())
    assert soak_figures.targets(results) == results["targets"]
    assert soak_figures.checks(results) == results["checks"]
    text = soak_report.markdown(results)
    assert text.count("\n| ") > len(results["samples"]) + len(results["cycles"])
