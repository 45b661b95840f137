"""Micro-batches of monitored answers against the fake judge: mapping, retries, enforce."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from gateway.config import Batching, JudgeSettings
from gateway.observability.metrics import Metrics
from gateway.scoring.batching import Batcher, BatchPlan
from guard import create_bias_scorer
from testkit.fake_openai import FakeOpenAI, Fault
from testkit.waiting import eventually
from tests.support.gateways import RunningGateway, policy
from tests.support.texts import TEXTS, script

MakeGateway = Callable[..., RunningGateway]
ANSWERS = [*TEXTS, "The train leaves at nine."]
BATCHED = {"pipeline": "single", "reason": "off", "batch_size": 4, "batch_linger": 2.0}


async def answer_each(gateway: RunningGateway, fake: FakeOpenAI) -> list[dict[str, Any]]:
    """One monitored chat per answer, one after the other; their final records."""
    run_ids = []
    async with gateway.async_client() as client:
        for text in ANSWERS:
            fake.reply = text
            raw = await client.chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": "Hi"}]
            )
            run_ids.append(raw.headers["x-bias-run-id"])
    return [await asyncio.to_thread(gateway.wait_for_score, run_id) for run_id in run_ids]


def verdicts(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (
            record["status"],
            record["score"],
            record["verdict"],
            record["categories"],
            record["result"]["analyzeStepResult"],
            record["result"]["preprocessStepResult"],
        )
        for record in records
    ]


async def test_a_batch_maps_each_verdict_list_back_to_its_answer(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    script(fake_openai)
    alone = await answer_each(
        make_gateway(judge={"pipeline": "single", "reason": "off"}), fake_openai
    )
    assert fake_openai.steps().count("assess") == 4
    fake_openai.requests.clear()
    batched = await answer_each(make_gateway(judge=BATCHED), fake_openai)
    judge_steps = [step for step in fake_openai.steps() if step != "chat"]
    assert judge_steps == ["assess_batch"]
    assert verdicts(batched) == verdicts(alone)
    assert [record["score"] for record in batched] == [1.0, 0.0, 0.5, 0.0]
    # The one call is on one record: the records add up to what the judge was asked.
    assert sum(record["judge_calls"] for record in batched) == 1


async def test_a_failed_batch_is_judged_again_one_by_one(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    script(fake_openai)
    fake_openai.fail(Fault(step="assess_batch", status=500))
    records = await answer_each(make_gateway(judge=BATCHED), fake_openai)
    judge_steps = [step for step in fake_openai.steps() if step != "chat"]
    assert judge_steps == ["assess_batch", *["assess"] * 4]
    assert [record["score"] for record in records] == [1.0, 0.0, 0.5, 0.0]


async def test_an_answer_for_the_wrong_texts_is_judged_again_one_by_one(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    script(fake_openai)
    short: dict[str, Any] = {
        "answers": [{"text": n, "verdicts": []} for n in (1, 2, 3)]
    }  # one list missing
    # Read, but not a fit: the structured retry is not asked, the texts go alone.
    fake_openai.fail(Fault(step="assess_batch", content=json.dumps(short)))
    gateway = make_gateway(judge=BATCHED)
    records = await answer_each(gateway, fake_openai)
    judge_steps = [step for step in fake_openai.steps() if step != "chat"]
    assert judge_steps == ["assess_batch", *["assess"] * 4]
    assert [record["status"] for record in records] == ["scored"] * 4
    assert [record["score"] for record in records] == [1.0, 0.0, 0.5, 0.0]
    with gateway.http() as http:
        scrape = http.get("/metrics").text
    assert 'bias_judge_batches_total{outcome="retried_alone"} 1.0' in scrape


async def test_enforce_never_waits_for_a_batch(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    script(fake_openai)
    fake_openai.reply = ANSWERS[1]
    gateway = make_gateway(judge={**BATCHED, "batch_linger": 5.0}, **policy(mode="enforce"))
    async with gateway.async_client() as client:
        raw = await asyncio.wait_for(
            client.chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": "Hi"}]
            ),
            timeout=4,  # well within the linger: it was judged alone, at once
        )
    assert raw.headers["x-bias-status"] == "scored"
    assert [step for step in fake_openai.steps() if step != "chat"] == ["assess"]


async def test_closing_gives_up_the_open_batch_without_a_judge_call(
    fake_openai: FakeOpenAI,
) -> None:
    scorer = create_bias_scorer(
        "judge", base_url=fake_openai.base_url, max_retries=0, pipeline="single", reason="off"
    )
    batcher = Batcher(scorer, BatchPlan(size=8, linger=30.0, max_chars=2000), metrics=Metrics())
    waiting = asyncio.ensure_future(batcher.run(ANSWERS[0], "r1"))
    await eventually(lambda: len(batcher._open) == 1)
    await batcher.close()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert fake_openai.judge_calls() == 0
    await scorer.judge.aclose()


def test_a_batch_plan_needs_more_than_one_answer_and_the_single_pipeline() -> None:
    assert BatchPlan.of(JudgeSettings()) is None
    assert BatchPlan.of(JudgeSettings(pipeline="single", batching=Batching(size=1))) is None
    batching = Batching(size=8, linger=0.02)
    plan = BatchPlan.of(JudgeSettings(pipeline="single", batching=batching))
    assert plan == BatchPlan(size=8, linger=0.02, max_chars=2000)
