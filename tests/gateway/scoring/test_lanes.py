"""The lane a scoring's judge calls go in: enforce, monitor or explain, by key.

The order the limiter hands slots out in is tested in tests/guard/limits; here,
that the gateway puts each kind of work in its lane, and a key's weight with it.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.config import Settings
from gateway.scoring.lanes import enforcing, explaining, monitoring
from gateway.scoring.request import ScoreRequest
from gateway.server.app import create_app
from guard.limits import JudgeLimiter, Lane, caller
from testkit.fake_openai import FakeOpenAI
from testkit.servers import ServerThread
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, settings_for
from tests.support.lane_judge import LaneJudge

KEYS = {
    "keys": [
        {"key": "sk-strict", "name": "strict", "policy": "strict", "weight": 3},
        {"key": "sk-watch", "name": "watch", "policy": "default"},
    ],
    "policies": {"default": {"mode": "monitor"}, "strict": {"mode": "enforce"}},
}
MakeGateway = Callable[..., RunningGateway]
CHAT = {"model": "m", "messages": [{"role": "user", "content": "Tell me about engineers."}]}


def limiter_of(gateway: RunningGateway) -> JudgeLimiter:
    limiter = getattr(gateway.state.scoring.scorer.judge, "limiter", None)
    assert isinstance(limiter, JudgeLimiter)
    return limiter


def test_each_kind_of_judge_call_goes_in_its_lane(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.unique_replies = True
    gateway = make_gateway(judge={"reason": "deferred", "reason_for": "all"}, **KEYS)
    calls = limiter_of(gateway).stats.calls
    with gateway.http("sk-strict") as http:
        enforced = http.post("/v1/chat/completions", json=CHAT)
    assert enforced.headers["x-bias-status"] == "scored"
    gateway.wait_for_score(enforced.headers["x-bias-run-id"], api_key="sk-strict", reason=True)
    # Faithful: extract, then judge, in enforce's lane; the explanation came after the
    # response, in the last lane.
    assert calls == {Lane.ENFORCE: 2, Lane.MONITOR: 0, Lane.EXPLAIN: 1, Lane.PROBE: 0}

    with gateway.http("sk-watch") as http:
        watched = http.post("/v1/chat/completions", json=CHAT)
    record = gateway.wait_for_score(watched.headers["x-bias-run-id"], api_key="sk-watch")
    assert record["reason_status"] == "done"
    # A monitor job explains at once, but its explanation is still the last lane's.
    assert calls == {Lane.ENFORCE: 2, Lane.MONITOR: 2, Lane.EXPLAIN: 2, Lane.PROBE: 0}
    with gateway.http("sk-watch") as http:
        scrape = http.get("/metrics").text
    assert 'bias_judge_lane_calls{lane="explain"} 2.0' in scrape
    assert 'bias_judge_lane_wait_seconds{lane="enforce"}' in scrape
    assert 'bias_judge_lane_answer_seconds{lane="monitor"}' in scrape


@pytest.mark.parametrize(
    ("key_name", "weight"), [("strict", 3.0), ("watch", 1.0), ("unknown", 1.0), (None, 1.0)]
)
def test_a_scorings_key_and_its_weight_go_with_its_calls(
    key_name: str | None, weight: float
) -> None:
    settings = Settings.model_validate({"upstream": {"base_url": "http://127.0.0.1:9"}, **KEYS})
    request = ScoreRequest("run", settings.policies["strict"], "enforce", key_name=key_name)
    with enforcing(request, settings):
        assert caller().lane is Lane.ENFORCE
        assert (caller().key, caller().weight) == (key_name or "", weight)
        with explaining():  # an inline explanation the response waits for
            assert caller().lane is Lane.ENFORCE
        with explaining(deferred=True):
            assert (caller().lane, caller().weight) == (Lane.EXPLAIN, weight)
    with monitoring(request, settings):
        assert caller().lane is Lane.MONITOR
        with explaining():
            assert (caller().lane, caller().key) == (Lane.EXPLAIN, key_name or "")


def test_a_keys_weight_must_be_positive() -> None:
    bad = {**KEYS, "keys": [{"key": "sk-a", "name": "a", "weight": 0}]}
    with pytest.raises(ValueError, match="greater than 0"):
        Settings.model_validate({"upstream": {"base_url": "http://127.0.0.1:9"}, **bad})


def test_auto_concurrency_starts_low_and_its_limit_is_a_metric(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(
        judge={"max_concurrency": "auto", "concurrency_start": 3, "concurrency_ceiling": 40}
    )
    limiter = limiter_of(gateway)
    assert limiter.adaptive is not None
    assert (limiter.limit, limiter.adaptive.ceiling) == (3, 40)
    with gateway.http() as http:
        assert "bias_judge_concurrency_limit 3.0" in http.get("/metrics").text


def test_auto_concurrency_must_start_within_its_ceiling() -> None:
    judge = {"max_concurrency": "auto", "concurrency_start": 50, "concurrency_ceiling": 40}
    with pytest.raises(ValueError, match="must not exceed"):
        Settings.model_validate({"upstream": {"base_url": "http://127.0.0.1:9"}, "judge": judge})


LONG = " ".join(f"I think topic {n:02d} matters to every team." for n in range(8))
ENFORCE_HEADERS = {"x-bias-mode": "enforce"}


@pytest.mark.parametrize(
    ("delivery", "stream"),
    [({"stream_policy": "windowed"}, True), ({"stream_policy": "buffer"}, True), ({}, False)],
    ids=["windowed", "buffer", "prejudge-stream"],
)
def test_an_enforced_stream_is_judged_before_monitor_work_already_waiting(
    fake_openai: FakeOpenAI, tmp_path: Path, delivery: dict[str, Any], stream: bool
) -> None:
    """One judge slot, held by a monitor call, with more monitor calls queued behind it:
    the enforced answer's windows go next, whichever delivery judges them in windows
    (`windowed`, `buffer` with `prejudge_buffer`, a whole answer under `prejudge: stream`)."""
    fake_openai.unique_replies = True  # no cache hit spares a judge call
    fake_openai.reply = "Monitor reply."
    lane_judge = LaneJudge(max_concurrency=1)
    settings = settings_for(
        fake_openai,
        tmp_path,
        upstream={"prejudge": "stream"},
        judge={"pipeline": "single", "max_concurrency": 8, "reason": "off"},
        policies={
            "default": {
                "mode": "monitor",
                "allow_client_override": True,
                "window_chars": 100,
                "context_chars": 40,
                **delivery,
            }
        },
    )
    server = ServerThread(create_app(settings, judge=lane_judge), lifespan="on").start()
    limiter = lane_judge.limiter
    lane_judge.gate.clear()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            for _ in range(5):  # one holds the slot, four wait for it
                assert http.post("/v1/chat/completions", json=CHAT).status_code == 200
            wait_for(lambda: limiter.waiting == 4, lambda: f"{limiter.waiting} monitor calls")
            fake_openai.reply = LONG
            with ThreadPoolExecutor(1) as pool:
                body = {**CHAT, "stream": stream}
                answer = pool.submit(
                    http.post, "/v1/chat/completions", json=body, headers=ENFORCE_HEADERS
                )
                wait_for(lambda: limiter.waiting > 4, "the enforced answer's first window")
                lane_judge.gate.set()
                response = answer.result(timeout=30)
            assert response.status_code == 200
            score = f"/v1/bias/scores/{response.headers['x-bias-run-id']}"
            wait_for(lambda: http.get(score).json().get("status") == "scored", score)
    finally:
        lane_judge.gate.set()
        server.stop()

    windows = [seen for seen in lane_judge.seen if "topic" in seen.text]
    assert len(windows) >= 2  # judged in windows, not whole
    assert {(seen.lane, seen.key) for seen in windows} == {(Lane.ENFORCE, "")}
    # Served by the order of lanes: the held monitor call, then the enforced windows that
    # were waiting, before the monitor calls queued ahead of them.
    assert lane_judge.seen[0].lane is Lane.MONITOR
    assert lane_judge.seen[1] is windows[0]
