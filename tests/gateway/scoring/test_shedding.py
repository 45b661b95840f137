"""The shedder on a simulated queue and an injected clock: even, fair, deterministic."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from gateway.scoring.policy import Sampler
from gateway.scoring.shedding import LogThrottle, Shedder, water_fill
from testkit.fake_openai import FakeOpenAI
from testkit.waiting import eventually
from tests.support.gateways import RunningGateway, send

MakeGateway = Callable[..., RunningGateway]

STEP = 0.01  # seconds per simulated tick


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Run:
    """What a simulated run came to, per key and per second."""

    decisions: dict[str, list[tuple[float, bool, float]]] = field(default_factory=dict)
    depths: list[int] = field(default_factory=list)

    def share(self, key: str, since: float, until: float) -> float:
        window = [take for at, take, _ in self.decisions[key] if since <= at < until]
        return sum(window) / len(window)


def simulate(
    demands: dict[str, float],
    *,
    capacity: float,
    seconds: float,
    weights: dict[str, float] | None = None,
    size: int = 1000,
    target_wait: float = 2.0,
) -> Run:
    """Keys sending at `demands` a second into a queue the judge empties at `capacity`."""
    clock = Clock()
    weight = dict.fromkeys(demands, 1.0) | (weights or {})
    shedder = Shedder(target_wait=target_wait, size=size, weight=weight.__getitem__, clock=clock)
    run = Run({key: [] for key in demands})
    owed = dict.fromkeys(demands, 0.0)
    served_owed = 0.0
    depth = 0
    start = clock.now
    while clock.now - start < seconds:
        clock.now += STEP
        for key, demand in demands.items():
            owed[key] += demand * STEP
            while owed[key] >= 1:
                owed[key] -= 1
                take, rate = shedder.admit(key, depth)
                run.decisions[key].append((clock.now - start, take, rate))
                if take and depth < size:
                    depth += 1
        served_owed += capacity * STEP
        while served_owed >= 1 and depth:
            served_owed -= 1
            depth -= 1
            shedder.done()
        served_owed = min(served_owed, 1.0)  # an idle judge saves up no calls
        run.depths.append(depth)
    return run


def test_below_capacity_everything_is_scored() -> None:
    run = simulate({"a": 50.0, "b": 30.0}, capacity=100.0, seconds=30)
    for key in ("a", "b"):
        assert all(take and rate == 1.0 for _, take, rate in run.decisions[key])


def test_over_capacity_the_scored_share_is_even_over_time() -> None:
    run = simulate({"a": 300.0}, capacity=285.0, seconds=90)
    shares = [run.share("a", since, since + 10) for since in range(10, 90, 10)]
    mean = sum(shares) / len(shares)
    assert 0.9 <= mean <= 0.97  # about 285 of 300, after the backlog it first built
    assert all(abs(share - mean) <= 0.05 for share in shares), shares
    # The queue holds about target_wait seconds of work, never fills.
    assert max(run.depths) < 1000
    assert max(run.depths[-1000:]) <= 285 * 2 * 1.5


def test_the_share_is_spread_within_a_second_not_bunched() -> None:
    run = simulate({"a": 300.0}, capacity=150.0, seconds=40)
    late = [take for at, take, _ in run.decisions["a"] if at >= 30]
    # At about half, scored and shed alternate: never more than a few of one in a row.
    longest = max(len(run_) for run_ in "".join("x" if t else "." for t in late).split("x"))
    assert longest <= 3
    assert 0.4 <= sum(late) / len(late) <= 0.6


def test_a_small_key_beside_a_flood_is_scored_in_full() -> None:
    run = simulate({"flood": 280.0, "small": 20.0}, capacity=150.0, seconds=60)
    assert run.share("small", 10, 60) >= 0.99
    assert 0.4 <= run.share("flood", 20, 60) <= 0.5  # (150 - 20) / 280, about 0.46


def test_weights_divide_what_is_left_between_floods() -> None:
    run = simulate(
        {"a": 200.0, "b": 200.0}, capacity=150.0, seconds=60, weights={"a": 2.0, "b": 1.0}
    )
    a, b = run.share("a", 20, 60), run.share("b", 20, 60)
    assert a == pytest.approx(2 * b, rel=0.1)
    assert (a + b) * 200 == pytest.approx(150, rel=0.1)


def test_records_carry_the_rate_they_were_picked_at() -> None:
    run = simulate({"a": 300.0}, capacity=100.0, seconds=30)
    late = [(take, rate) for at, take, rate in run.decisions["a"] if at >= 20]
    rates = [rate for _, rate in late]
    assert max(rates) < 1
    assert sum(take for take, _ in late) / len(late) == pytest.approx(
        sum(rates) / len(rates), abs=0.02
    )


def test_the_same_load_sheds_the_same_responses() -> None:
    first = simulate({"a": 240.0, "b": 60.0}, capacity=120.0, seconds=20)
    second = simulate({"a": 240.0, "b": 60.0}, capacity=120.0, seconds=20)
    assert first.decisions == second.decisions


def test_rates_recover_when_the_load_passes() -> None:
    clock = Clock()
    shedder = Shedder(target_wait=1.0, size=100, weight=lambda key: 1.0, clock=clock)
    depth = 50
    for _ in range(5):  # a backlog throughout, 10 done a second, 100 arriving
        for _ in range(100):
            shedder.admit("a", depth)
            clock.now += 0.01
        for _ in range(10):
            shedder.done()
    assert shedder.rate("a") < 0.5
    for _ in range(30):  # the backlog gone: the rate rises back to 1
        for _ in range(10):
            shedder.admit("a", 0)
            shedder.done()
            clock.now += 0.1
    assert shedder.rate("a") == 1.0


@pytest.mark.parametrize(
    ("total", "demands", "expected"),
    [
        (100.0, {"a": 30.0, "b": 30.0}, {"a": 30.0, "b": 30.0}),
        (40.0, {"a": 30.0, "b": 30.0}, {"a": 20.0, "b": 20.0}),
        (40.0, {"a": 5.0, "b": 30.0, "c": 30.0}, {"a": 5.0, "b": 17.5, "c": 17.5}),
        (0.0, {"a": 5.0}, {"a": 0.0}),
        (-10.0, {"a": 5.0}, {"a": 0.0}),
        (10.0, {"a": 0.0, "b": 30.0}, {"b": 10.0}),
    ],
)
def test_water_fill_is_max_min_fair(
    total: float, demands: dict[str, float], expected: dict[str, float]
) -> None:
    assert water_fill(total, demands, lambda key: 1.0) == pytest.approx(expected)


def test_log_throttle_counts_what_it_held_back() -> None:
    throttle = LogThrottle(seconds=60)
    assert throttle.ready() == 0
    assert throttle.ready() is None
    assert throttle.ready() is None


# -- through a gateway, against the fake judge ---------------------------------------


async def test_an_overloaded_gateway_scores_an_even_share_and_says_so(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.judge_delay = 0.05
    fake_openai.unique_replies = True
    fake_openai.verdicts = [("no", "Neutral.")]
    gateway = make_gateway(
        keys=[{"key": "sk-flood", "name": "flood", "admin": True}],
        judge={"max_concurrency": 1, "reason": "off", "pipeline": "single", "cache_size": 0},
        queue={"size": 200, "target_wait": 0.1},
    )
    shedder = gateway.state.scoring.shedder
    clock = Clock()
    shedder.clock, shedder._since = clock, clock.now  # the shedder's seconds, on our clock
    # A burst the judge cannot keep up with: all queued (no second has passed yet) ...
    scoring = gateway.state.scoring
    burst = [run_id for run_id, _ in await send(gateway, "sk-flood", 40)]
    await eventually(lambda: scoring.queue.depth >= 10)
    # ... a second on, the shedder starts counting a backlog (it has seen the queue
    # empty before the burst) ...
    clock.now += 1.0
    burst += [run_id for run_id, _ in await send(gateway, "sk-flood", 1)]
    await eventually(lambda: 0 < scoring.queue.depth <= 30)
    # ... and a second later, a backlog all along, it knows the judge's pace: it sheds.
    clock.now += 1.0
    later = [(await send(gateway, "sk-flood", 1))[0][0] for _ in range(30)]
    rate = shedder.rate("flood")
    assert rate < 1
    records = [
        await asyncio.to_thread(gateway.wait_for_score, run_id, api_key="sk-flood", timeout=30)
        for run_id in later
    ]
    taken = [record["status"] == "scored" for record in records]
    # The sampler's picks: the fraction carried forward, the same for every run of this.
    sampler = Sampler(rate)
    assert taken == [sampler.take() for _ in later]
    for record in records:
        assert record["sample_rate"] == round(rate, 4)
        if record["status"] != "scored":
            assert record["status"] == "skipped"
            assert record["status_reason"] == "overload_sampled"
    for run_id in burst:  # what came before shedding began is scored in full
        record = await asyncio.to_thread(gateway.wait_for_score, run_id, api_key="sk-flood")
        assert record["status"] == "scored"
        assert record["sample_rate"] is None
    with gateway.http("sk-flood") as http:
        stats = http.get("/v1/bias/stats", params={"group_by": "key"}).json()
        http.cookies.set("bias_ui_key", "sk-flood")  # the dashboard's sign-in
        page = http.get("/ui", params={"window": "1h"}).text
        scrape = http.get("/metrics").text
    shed = taken.count(False)
    assert shed >= 1
    (group,) = stats["groups"]
    assert group["key"] == "flood"
    assert group["score"]["sampled"] is True
    assert stats["total"]["score"]["sampled"] is True
    assert group["sampling"]["overload_sampled"] == shed
    assert group["sampling"]["scored_share"] == round((71 - shed) / 71, 4)
    assert "mean score (sampled)" in page
    assert 'id="scored-share-by-key"' in page
    assert f'bias_overload_decisions_total{{decision="overload_sampled",key="flood"}} {shed}.0' in (
        scrape
    )
    assert f'bias_overload_sample_rate{{key="flood"}} {rate}' in scrape


async def test_a_gateway_within_its_judges_pace_sheds_nothing(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.unique_replies = True
    gateway = make_gateway(judge={"reason": "off"})
    sent = await send(gateway, "sk-client", 10)
    for run_id, _ in sent:
        record = await asyncio.to_thread(gateway.wait_for_score, run_id)
        assert record["status"] == "scored"
        assert record["sample_rate"] is None
    with gateway.http() as http:
        stats = http.get("/v1/bias/stats").json()
    assert stats["total"]["score"]["sampled"] is False
    assert stats["total"]["sampling"] == {"scored_share": 1.0, "overload_sampled": 0}
