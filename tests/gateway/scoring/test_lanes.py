"""The lane a scoring's judge calls go in: enforce, monitor or explain, by key.

The order the limiter hands slots out in is tested in tests/guard/limits; here,
that the gateway puts each kind of work in its lane, and a key's weight with it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gateway.config import Settings
from gateway.scoring.lanes import enforcing, explaining, monitoring
from gateway.scoring.request import ScoreRequest
from guard.limits import JudgeLimiter, Lane, caller
from tests.gateway.conftest import RunningGateway
from tests.support.fake_openai import FakeOpenAI

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
    assert calls == {Lane.ENFORCE: 2, Lane.MONITOR: 0, Lane.EXPLAIN: 1}

    with gateway.http("sk-watch") as http:
        watched = http.post("/v1/chat/completions", json=CHAT)
    record = gateway.wait_for_score(watched.headers["x-bias-run-id"], api_key="sk-watch")
    assert record["reason_status"] == "done"
    # A monitor job explains at once, but its explanation is still the last lane's.
    assert calls == {Lane.ENFORCE: 2, Lane.MONITOR: 2, Lane.EXPLAIN: 2}
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
