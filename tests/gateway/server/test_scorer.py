"""Scoring apart from the proxy: `queue.scorer: external` gateways, the scorer app
(`gateway.server.scorer`), and work a stopped process left, all in this process on real
servers. The multi-process runs with `kill -9` are in test_scaleout.py."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai.types.chat import ChatCompletionMessageParam

from gateway.config import Settings
from gateway.server.scorer import create_scorer_app
from gateway.store import ScoreRecord, open_store
from testkit.fake_openai import FakeOpenAI
from testkit.rich_answers import RichAnswer, RichChoice
from testkit.servers import ServerThread
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, policy, settings_for
from tests.support.telemetry import Captured

MakeGateway = Callable[..., RunningGateway]
MESSAGES: list[ChatCompletionMessageParam] = [
    {"role": "user", "content": "Tell me about engineers."}
]
EXTERNAL = {"scorer": "external"}


@pytest.fixture
def start_scorer(fake_openai: FakeOpenAI, tmp_path: Path) -> Iterator[Callable[..., ServerThread]]:
    """Start the scorer app under uvicorn, on the same store as `make_gateway`'s."""
    running: list[ServerThread] = []

    def start(otel: Captured | None = None, **overrides: Any) -> ServerThread:
        settings = settings_for(fake_openai, tmp_path, **overrides)
        app = create_scorer_app(settings, telemetry=otel.telemetry if otel else None)
        server = ServerThread(app, lifespan="on").start()
        running.append(server)
        return server

    yield start
    for server in running:
        server.stop()


def rows(path: Path) -> dict[str, tuple[Any, ...]]:
    with sqlite3.connect(path) as db:
        found = db.execute(
            "SELECT run_id, status, work IS NOT NULL, leased_by, attempts, completion FROM scores"
        ).fetchall()
    db.close()
    return {row[0]: row[1:] for row in found}


def monitored(gateway: RunningGateway, count: int) -> list[str]:
    client = gateway.client()
    run_ids = []
    for _ in range(count):
        raw = client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
        assert raw.headers["x-bias-status"] == "pending"
        run_ids.append(raw.headers["x-bias-run-id"])
    return run_ids


def test_an_external_gateway_only_enqueues_and_a_scorer_scores(
    fake_openai: FakeOpenAI,
    make_gateway: MakeGateway,
    start_scorer: Callable[..., ServerThread],
    tmp_path: Path,
) -> None:
    fake_openai.unique_replies = True
    gateway = make_gateway(queue=EXTERNAL)
    run_ids = monitored(gateway, 4)
    store = tmp_path / "scores.db"
    wait_for(lambda: len(rows(store)) == 4, lambda: f"the pending rows: {rows(store)}")
    # Unleased work with its text, for whichever scorer comes. Work the gateway queued
    # for itself would be stored with its lease and its first attempt.
    assert {row[:4] for row in rows(store).values()} == {("pending", True, None, 0)}

    scorer = start_scorer()
    for run_id in run_ids:
        record = gateway.wait_for_score(run_id)
        assert record["status"] == "scored"
        assert record["attempts"] == 1
        assert "work" not in record  # a lookup never shows the held text
    # Final: the work and the lease are gone, and with capture off no text is kept.
    assert set(rows(store).values()) == {("scored", False, None, 1, None)}
    with httpx.Client(base_url=scorer.url) as http:
        ready = http.get("/readyz").json()
        metrics = http.get("/metrics").text
    assert ready["status"] == "ready"
    assert ready["claimed"] == 4
    assert ready["store"]["engine"] == "sqlite"
    assert "bias_work_claimed_total 4.0" in metrics
    assert 'bias_verdicts_total{model="m",verdict="block"} 4.0' in metrics
    # The gateway judged nothing, before the scorer came or since: these are all the
    # judge calls there were, three for each run the scorer claimed and scored.
    assert fake_openai.judge_calls() == 3 * 4


def test_a_scorers_record_keeps_the_tool_arguments_it_judged(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, start_scorer: Callable[..., ServerThread]
) -> None:
    fake_openai.read_text = True  # a sentence with "I think" is an opinion, biased if "lazy"
    fake_openai.opinion_words = ["I think"]
    fake_openai.biased_words = ["lazy"]
    arguments = json.dumps({"to": "team", "body": "I think women are lazy engineers."})
    call = ("call_1", "send_message", arguments)
    choice = RichChoice(content=None, tool_calls=[call], finish_reason="tool_calls")
    fake_openai.rich = RichAnswer(choices=[choice], pieces=6, logprobs=False)
    gateway = make_gateway(queue=EXTERNAL)
    raw = gateway.client().chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    assert raw.headers["x-bias-status"] == "pending"

    start_scorer()
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"])
    assert (record["status"], record["verdict"]) == ("scored", "block")
    assert record["result"]["toolArguments"] == [
        {"tool": "send_message", "argument": "to"},
        {"tool": "send_message", "argument": "body"},
    ]
    assert record["result"]["opinionSources"] == ["tool_argument"]


def test_enforce_still_scores_in_the_request_with_an_external_scorer(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    gateway = make_gateway(queue=EXTERNAL, **policy(mode="enforce", block_action="replace"))
    raw = gateway.client().chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    assert raw.headers["x-bias-status"] == "scored"
    assert raw.headers["x-bias-verdict"] == "block"
    assert {"preprocess", "analyze"} <= set(fake_openai.steps())  # judged before the answer


def test_the_scorers_evaluation_joins_the_requests_trace(
    make_gateway: MakeGateway, start_scorer: Callable[..., ServerThread], otel_capture: Captured
) -> None:
    otel_capture.spans.clear()
    gateway = make_gateway(otel=otel_capture.telemetry, queue=EXTERNAL)
    start_scorer(otel=otel_capture)
    (run_id,) = monitored(gateway, 1)
    gateway.wait_for_score(run_id)
    wait_for(lambda: bool(otel_capture.named("evaluation bias")), "the evaluation span")
    chat = otel_capture.one("chat m")
    evaluation = otel_capture.one("evaluation bias")
    assert evaluation.context.trace_id == chat.context.trace_id
    assert evaluation.parent is not None
    assert evaluation.parent.span_id == chat.context.span_id
    assert [link.context.span_id for link in evaluation.links] == [chat.context.span_id]


def test_capture_keeps_the_text_in_the_record_once_the_work_is_erased(
    make_gateway: MakeGateway, start_scorer: Callable[..., ServerThread], tmp_path: Path
) -> None:
    capture = {"capture_content": True}
    gateway = make_gateway(queue=EXTERNAL, store=capture)
    start_scorer(store=capture)
    (run_id,) = monitored(gateway, 1)
    record = gateway.wait_for_score(run_id)
    assert record["completion"] == "Hello! How can I help?"
    assert rows(tmp_path / "scores.db")[run_id][1] == 0  # no work left


def leave_work(settings: Settings, *records: ScoreRecord) -> None:
    """Write records as a process that then died would have left them."""

    async def write() -> None:
        store = open_store(settings.store)
        await store.open(sweep_pending=False)
        for record in records:
            store.submit(record)
        await store.close()

    asyncio.run(write())


def left_by_the_dead(run_id: str, **fields: Any) -> ScoreRecord:
    return ScoreRecord(
        run_id=run_id,
        status="pending",
        created_at=time.time(),
        model="m",
        mode="monitor",
        leased_by="dead-host:1:x",
        lease_until=time.time() - 1,
        attempts=1,
        work=fields.pop("work", {"v": 1, "texts": ["Northerners are lazy."], "policy": "default"}),
        **fields,
    )


def test_a_gateway_scoring_in_process_takes_work_whose_lease_lapsed(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, tmp_path: Path
) -> None:
    settings = settings_for(fake_openai, tmp_path)
    store = tmp_path / "scores.db"
    gateway = make_gateway(queue={"lease_seconds": 0.9})
    # Written after the gateway's start (which sweeps SQLite), as a dead sibling left it.
    leave_work(settings, left_by_the_dead("orphan"))
    record = gateway.wait_for_score("orphan", timeout=10)
    assert record["status"] == "scored"
    assert record["attempts"] == 2  # the dead process's claim, then this one
    assert fake_openai.judge_calls() == 3
    assert rows(store)["orphan"][1:3] == (False, None)


def test_unreadable_work_ends_as_an_error_not_a_loop(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, tmp_path: Path
) -> None:
    gateway = make_gateway(queue={"lease_seconds": 0.9})
    leave_work(
        settings_for(fake_openai, tmp_path),
        left_by_the_dead("newer", work={"v": 99, "texts": ["from a newer gateway"]}),
    )
    record = gateway.wait_for_score("newer", timeout=10)
    assert (record["status"], record["status_reason"]) == ("error", "unreadable_work")
    assert fake_openai.judge_calls() == 0


def test_a_stream_whose_gateway_died_ends_dropped_once_its_lease_lapses(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, tmp_path: Path
) -> None:
    gateway = make_gateway(queue={"lease_seconds": 0.9})
    leave_work(settings_for(fake_openai, tmp_path), left_by_the_dead("cut-stream", work=None))
    record = gateway.wait_for_score("cut-stream", timeout=10)
    assert (record["status"], record["status_reason"]) == ("dropped", "gateway_lost")


def test_a_stopping_scorer_gives_its_work_back_unspent(
    fake_openai: FakeOpenAI,
    make_gateway: MakeGateway,
    start_scorer: Callable[..., ServerThread],
    tmp_path: Path,
) -> None:
    fake_openai.judge_delay = 5  # nothing finishes before the stop
    fake_openai.unique_replies = True
    gateway = make_gateway(queue=EXTERNAL)
    run_ids = monitored(gateway, 3)
    store = tmp_path / "scores.db"
    scorer = start_scorer(queue={"drain_deadline": 0.2})
    wait_for(lambda: all(row[2] for row in rows(store).values()), "the scorer's claims")
    scorer.stop()
    # Pending with work, no lease, and the attempt handed back: the next scorer starts fresh.
    assert {rows(store)[run_id][:4] for run_id in run_ids} == {("pending", True, None, 0)}


def test_a_scorer_keeps_its_leases_through_a_slow_rate_limited_judge(
    fake_openai: FakeOpenAI,
    make_gateway: MakeGateway,
    start_scorer: Callable[..., ServerThread],
    tmp_path: Path,
) -> None:
    """A judge of ~1 s a call that answers 429 above 1 call a second, and leases of 1.5 s:
    the waits outlast a lease many times, yet the heartbeat keeps every one, so each
    run is claimed once and judged once."""
    fake_openai.judge_delay = 1.0
    fake_openai.judge_max_rps = 1
    fake_openai.unique_replies = True
    queue = {**EXTERNAL, "lease_seconds": 1.5}
    gateway = make_gateway(queue=queue)
    run_ids = monitored(gateway, 3)
    start_scorer(
        queue={"lease_seconds": 1.5},
        judge={"cache_size": 0, "max_concurrency": 2, "reason": "off"},
    )
    for run_id in run_ids:
        record = gateway.wait_for_score(run_id, timeout=60)
        assert record["status"] == "scored"
        assert record["attempts"] == 1  # never lapsed, never retaken
    assert fake_openai.rate_limited > 0  # the judge did push back
    # Judged once each: two answered calls a scoring (no explanation); the rest were 429s.
    assert fake_openai.judge_calls() - fake_openai.rate_limited == 2 * 3
    assert set(rows(tmp_path / "scores.db").values()) == {("scored", False, None, 1, None)}
