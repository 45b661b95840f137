"""The monitor queue against a slow fake judge: keys served in turn, by weight."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from gateway.config import Policy
from gateway.observability.metrics import Metrics
from gateway.scoring.queue import MonitorQueue
from gateway.scoring.request import ScoreRequest
from guard.bias.fence import unfenced
from testkit.fake_openai import FakeOpenAI
from testkit.waiting import eventually
from tests.support.gateways import RunningGateway, send

MakeGateway = Callable[..., RunningGateway]
KEYS = [
    {"key": "sk-flood", "name": "flood"},
    {"key": "sk-small", "name": "small"},
]


def judged_order(fake: FakeOpenAI, texts: dict[str, str]) -> list[str]:
    """Whose text each extraction call judged, in the order the judge saw them."""
    order: list[str] = []
    for recorded in fake.requests:
        if recorded.step != "preprocess":
            continue
        judged = unfenced(str(recorded.body["messages"][-1]["content"])) or ""
        order.extend(owner for text, owner in texts.items() if judged.rstrip().endswith(text))
    return order


async def flood_then_small(fake: FakeOpenAI, make_gateway: MakeGateway, **keys: Any) -> list[str]:
    fake.judge_delay = 0.05
    fake.unique_replies = True
    fake.verdicts = [("no", "Neutral.")]
    gateway = make_gateway(
        keys=[{**key, **keys.get(key["name"], {})} for key in KEYS],
        judge={"max_concurrency": 1, "reason": "off", "cache_size": 0},
    )
    # The judge holds its first call until both keys' jobs are queued, so what is judged
    # before the small key arrives does not depend on how fast the machine sends.
    fake.judge_open.clear()
    try:
        flood = await send(gateway, "sk-flood", 14)
        await eventually(lambda: gateway.state.scoring.queue.waiting("flood") == 13)
        small = await send(gateway, "sk-small", 4)
        await eventually(lambda: gateway.state.scoring.queue.waiting("small") == 4)
    finally:
        fake.judge_open.set()
    texts = {text: "flood" for _, text in flood} | {text: "small" for _, text in small}
    for api_key, sent in (("sk-flood", flood), ("sk-small", small)):
        for run_id, _ in sent:
            record = await asyncio.to_thread(gateway.wait_for_score, run_id, api_key=api_key)
            assert record["status"] == "scored"
    order = judged_order(fake, texts)
    assert sorted(order) == ["flood"] * 14 + ["small"] * 4
    return order


async def test_a_flooding_key_takes_turns_with_a_small_one(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    order = await flood_then_small(fake_openai, make_gateway)
    # First come, first served would judge the small key's four after the flood's 14.
    # In turns, from the small key's arrival on (the flood's first was at the judge),
    # they alternate: the small key's last is judged within its first eight turns.
    arrived = order.index("small")
    assert arrived <= 2
    assert order[arrived : arrived + 8] == ["small", "flood"] * 4


async def test_a_weighted_key_is_served_as_often_as_its_weight_says(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    order = await flood_then_small(fake_openai, make_gateway, small={"weight": 3.0})
    arrived = order.index("small")
    assert arrived <= 2
    # Weight 3 against 1: three of the small key's turns to each of the flood's.
    assert order[arrived : arrived + 5].count("small") >= 3
    assert order[arrived : arrived + 6].count("small") == 4


async def test_work_claimed_from_the_store_takes_turns_by_key_too() -> None:
    """What `accept` queues (claimed work, `gateway.work.claims`) waits in its key's line."""
    judged: list[str] = []
    release = asyncio.Event()

    async def runner(request: ScoreRequest, texts: list[str]) -> None:
        await release.wait()  # the first job holds the one slot until all are queued
        judged.append(request.key_name or "")

    queue = MonitorQueue(runner, size=20, concurrency=1, full_wait=0.0, metrics=Metrics())
    queue.start()
    claimed = [("flood", n) for n in range(6)] + [("small", n) for n in range(3)]
    for key, n in claimed:
        job = ScoreRequest(run_id=f"{key}-{n}", policy=Policy(), mode="monitor", key_name=key)
        assert await queue.accept(job, ["text"])
    release.set()
    await eventually(lambda: len(judged) == len(claimed))
    # All nine were queued before the first pick: the keys alternate while both wait.
    assert judged == ["flood", "small"] * 3 + ["flood"] * 3
    await queue.stop()
