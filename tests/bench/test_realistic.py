"""The realistic scenario's pieces: the paced open loop against the slow fake, the figures
from a store, and the targets judged again on the committed run."""

from __future__ import annotations

import asyncio
import copy
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from bench.fakes.paced import Pace, PacedFake
from bench.harness.openloop import Load, Sent, open_loop
from bench.peers import realistic
from bench.peers.targets import realistic_targets
from testkit.servers import ServerThread

RUN = Path(__file__).resolve().parents[2] / "bench" / "results" / "realistic-latest.json"


@pytest.fixture
def slow_upstream() -> Any:
    fake = PacedFake(Pace(chunks=2, ttft=0.1, chunk_interval=0.01, judge_latency=0.1, jitter=0.3))
    server = ServerThread(fake.app).start()
    yield server
    server.stop()


def test_the_open_loop_keeps_its_pace_whatever_the_answers_do(slow_upstream: Any) -> None:
    started = time.perf_counter()
    load = asyncio.run(open_loop(slow_upstream.url, rate=40, duration=0.5))
    elapsed = time.perf_counter() - started
    assert len(load.sent) == 20
    # Open loop: all 20 were sent within the half second, though each took >= 0.12 s.
    assert max(sent.started for sent in load.sent) - load.sent[0].started < 0.6
    assert elapsed < 1.5
    figures = realistic.load_figures(load, None, None)
    assert figures["statuses"] == {"200": 20}
    assert figures["p50_ms"] >= 120


def test_the_slow_judge_rate_limits_and_reports_what_it_saw() -> None:
    fake = PacedFake(
        Pace(chunks=2, ttft=0.0, chunk_interval=0.0, judge_latency=0.01, jitter=0.0, judge_rps=2)
    )
    server = ServerThread(fake.app).start()
    try:
        import httpx

        body = {"model": "judge", "messages": [{"role": "user", "content": "x"}]}
        with httpx.Client(base_url=server.url) as http:
            statuses = [http.post("/v1/chat/completions", json=body).status_code for _ in range(4)]
            stats = http.get("/bench/stats").json()
            limited = http.post("/v1/chat/completions", json=body)
    finally:
        server.stop()
    assert statuses[:2] == [200, 200]
    assert 429 in statuses[2:]
    assert stats["judge_calls"] == 2
    assert stats["rate_limited"] == statuses.count(429)
    assert limited.headers["x-ratelimit-reset-requests"].endswith("ms")


def test_figures_from_a_store(tmp_path: Path) -> None:
    store = tmp_path / "scores.db"
    with sqlite3.connect(store) as db:
        db.execute(
            "CREATE TABLE scores (run_id TEXT, status TEXT, status_reason TEXT, reason_status"
            " TEXT, judge_calls INTEGER, judge_tokens INTEGER, created_at REAL, updated_at REAL)"
        )
        now = time.time()
        db.executemany(
            "INSERT INTO scores VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                ("a", "scored", None, "done", 3, 900, now, now + 2),
                ("b", "scored", None, "done", 3, 1100, now, now + 30),  # too late
                ("c", "skipped", "overloaded", None, None, None, now, now),
                ("d", "pending", None, None, None, None, now, now),
            ],
        )
    db.close()
    load = Load()
    for run_id in "abcd":
        sent = Sent(started=0.0, latency_ms=500.0, status=200, run_id=run_id)
        sent.ended_wall = now
        load.sent.append(sent)
    direct = {"p50_ms": 499.0, "p99_ms": 499.0}
    figures = realistic.load_figures(load, store, direct)
    assert figures["scored_within_10s"] == 0.25
    assert figures["pending_left"] == 1
    assert figures["records"] == {"scored": 2, "skipped:overloaded": 1, "pending": 1}
    assert figures["judge_calls_per_response"] == 3
    assert figures["judge_tokens_per_response"] == 1000
    assert figures["overhead_p50_ms"] == 1.0


def test_judging_the_committed_run_again_gives_its_verdicts() -> None:
    results: dict[str, Any] = json.loads(RUN.read_text())
    recorded = {target["name"]: target["status"] for target in results["targets"]}
    judged = {target.name: target.status for target in realistic_targets(results)}
    assert judged == recorded
    report = realistic.markdown(results)
    assert report.count("\n") == len(results["cells"]) + 1


def test_an_error_or_a_slow_score_is_missed() -> None:
    results: dict[str, Any] = json.loads(RUN.read_text())
    changed = copy.deepcopy(results)
    for cell in changed["cells"]:
        if cell.get("mode") == "monitor" and cell["rate"] == 100.0:
            cell["scored_within_10s"] = 0.5
        if cell.get("mode"):
            cell["errors"] = 1
    judged = {target.name: target.status for target in realistic_targets(changed)}
    assert judged["monitor, shipped config, 100 req/s"] == "missed"
    assert judged["judge limited to 1.5x the call rate"] == "missed"
