"""Scoring against a slow, rate-limited judge: concurrency, 429s, deadlines, backlog.

Behaviour, not speed: how many judge calls run at once, what a 429 burst ends
as, what an enforced response does past its deadline. Timing targets live in
bench/.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from testkit.fake_openai import FakeOpenAI, Fault
from testkit.waiting import eventually
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
CHAT = {"model": "m", "messages": [{"role": "user", "content": "Tell me about engineers."}]}


async def post_many(gateway: RunningGateway, count: int) -> list[Any]:
    async with gateway.async_client() as client:
        calls = [
            client.chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": f"Question {index}"}]
            )
            for index in range(count)
        ]
        return list(await asyncio.gather(*calls))


async def test_monitor_scores_many_responses_at_once(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.judge_delay = 0.3
    fake_openai.unique_replies = True
    gateway = make_gateway()
    answers = await post_many(gateway, 40)
    for answer in answers:
        record = await asyncio.to_thread(gateway.wait_for_score, answer.headers["x-bias-run-id"])
        assert record["status"] == "scored"
    # Four workers allowed four judge calls at once; now the judge's own pace is the bound.
    assert fake_openai.judge_peak_in_flight >= 20


async def test_max_concurrency_bounds_judge_calls_in_flight(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.judge_delay = 0.05
    fake_openai.judge_gather = 5  # each call waits for five at once: the bound is reached
    fake_openai.unique_replies = True
    gateway = make_gateway(judge={"max_concurrency": 5})
    answers = await post_many(gateway, 30)
    for answer in answers:
        record = await asyncio.to_thread(gateway.wait_for_score, answer.headers["x-bias-run-id"])
        assert record["status"] == "scored"
    assert fake_openai.judge_peak_in_flight == 5


async def test_a_burst_of_429s_ends_in_scores_not_errors(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.unique_replies = True
    fake_openai.fail(
        *(Fault(step="preprocess", status=429, headers={"retry-after": "0.2"}) for _ in range(15))
    )
    gateway = make_gateway(judge={"max_retries": 0})
    answers = await post_many(gateway, 20)
    statuses = [
        (await asyncio.to_thread(gateway.wait_for_score, a.headers["x-bias-run-id"]))["status"]
        for a in answers
    ]
    assert statuses == ["scored"] * 20
    with gateway.http() as http:
        scrape = http.get("/metrics").text
    assert "bias_judge_rate_limited_total 15.0" in scrape


def test_a_429_pauses_the_whole_judge_client(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="preprocess", status=429, headers={"retry-after": "1"}))
    gateway = make_gateway(**policy(mode="enforce"))
    started = time.monotonic()
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=CHAT)
    assert response.headers["x-bias-status"] == "scored"
    assert time.monotonic() - started >= 0.9  # waited out the Retry-After, then scored
    assert fake_openai.steps().count("preprocess") == 2


def test_the_rate_limit_headers_of_a_judge_are_honoured(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.judge_max_rps = 2  # the fake answers 429 with x-ratelimit-reset-requests
    fake_openai.unique_replies = True
    gateway = make_gateway(judge={"max_retries": 0, "reason": "inline"}, **policy(mode="enforce"))
    with gateway.http() as http:
        responses = [http.post("/v1/chat/completions", json=CHAT) for _ in range(2)]
    assert [r.headers["x-bias-status"] for r in responses] == ["scored", "scored"]
    assert fake_openai.rate_limited >= 1  # the second scoring met the limit and waited


def test_enforce_past_its_deadline_follows_on_judge_error(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="preprocess", status=429, headers={"retry-after": "30"}))
    allow = make_gateway(judge={"enforce_deadline": 0.5}, **policy(mode="enforce"))
    started = time.monotonic()
    with allow.http() as http:
        response = http.post("/v1/chat/completions", json=CHAT)
    assert time.monotonic() - started < 5
    assert response.status_code == 200
    assert response.headers["x-bias-status"] == "error"
    assert response.headers["x-bias-error"] == "JudgeTimeout"
    record = allow.wait_for_score(response.headers["x-bias-run-id"])
    # The record says what went wrong where a score keeps its explanation.
    assert (record["status_reason"], record["reason_status"]) == ("JudgeTimeout", None)
    assert "rate-limited" in record["reason"]

    fake_openai.fail(Fault(step="preprocess", status=429, headers={"retry-after": "30"}))
    block = make_gateway(
        judge={"enforce_deadline": 0.5}, **policy(mode="enforce", on_judge_error="block")
    )
    with block.http() as http:
        response = http.post("/v1/chat/completions", json=CHAT)
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "bias_judge_unavailable"


async def test_a_rate_limited_judge_means_backlog_then_overloaded_never_error(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.unique_replies = True
    fake_openai.fail(
        *(Fault(step="preprocess", status=429, headers={"retry-after": "1"}) for _ in range(50))
    )
    gateway = make_gateway(
        queue={"size": 2, "drain_deadline": 0.1}, judge={"max_concurrency": 1, "max_retries": 0}
    )
    answers = await post_many(gateway, 8)
    headers = [answer.headers for answer in answers]
    skipped = [h for h in headers if h["x-bias-status"] == "skipped"]
    assert skipped
    assert {h["x-bias-skip-reason"] for h in skipped} == {"overloaded"}

    def statuses() -> set[str]:
        with gateway.http() as http:
            return {
                http.get(f"/v1/bias/scores/{h['x-bias-run-id']}").json()["status"] for h in headers
            }

    # Until a text goes to the judge a second time (the 429 waited out and asked again),
    # or a record ends in error (the 429 taken for a failure).
    await eventually(
        lambda: retried_preprocess(fake_openai) or "error" in statuses(),
        lambda: f"a preprocess call asked again; steps {fake_openai.steps()}",
    )
    assert retried_preprocess(fake_openai)
    # The backlog waits: queued work pending, the rest skipped, nothing ended in error.
    assert statuses() == {"pending", "skipped"}


def retried_preprocess(fake: FakeOpenAI) -> bool:
    """Whether the judge was asked the same preprocess question twice."""
    asked = [json.dumps(r.body["messages"]) for r in fake.requests if r.step == "preprocess"]
    return len(asked) > len(set(asked))
