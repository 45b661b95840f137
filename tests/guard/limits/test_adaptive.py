"""`max_concurrency: auto`: the limit grows while the judge keeps up, and backs off."""

from __future__ import annotations

import pytest

from guard.limits import AdaptiveLimit


def round_trip(limit: AdaptiveLimit, now: float, latency: float = 1.0) -> None:
    """As many answers as the limit allows, all sent at `now`."""
    for _ in range(limit.limit):
        limit.answered(latency, started=now, now=now + latency, busy=True)


def test_it_doubles_each_round_trip_until_the_first_back_off() -> None:
    limit = AdaptiveLimit(start=8, ceiling=1000)
    seen = []
    for step in range(5):
        round_trip(limit, float(step))
        seen.append(limit.limit)
    assert seen == [16, 32, 64, 128, 256]


def test_it_stays_within_its_ceiling() -> None:
    limit = AdaptiveLimit(start=8, ceiling=50)
    for step in range(10):
        round_trip(limit, float(step))
    assert limit.limit == 50


def test_an_idle_limit_does_not_grow() -> None:
    limit = AdaptiveLimit(start=8, ceiling=1000)
    for _ in range(100):
        limit.answered(1.0, started=0.0, now=1.0, busy=False)
    assert limit.limit == 8


def test_a_429_cuts_it_once_per_round_trip_then_it_grows_slowly() -> None:
    limit = AdaptiveLimit(start=100, ceiling=1000, decrease=0.8)
    limit.rate_limited(started=10.0, now=10.0)
    assert limit.limit == 80
    for _ in range(30):  # the same burst's other 429s: sent before the cut
        limit.rate_limited(started=9.5, now=10.1)
    assert limit.limit == 80
    round_trip(limit, 11.0)
    assert limit.value == pytest.approx(81, abs=0.05)  # one slot a round trip after a back-off


def test_rising_latency_cuts_it() -> None:
    limit = AdaptiveLimit(start=64, ceiling=1000, tolerance=2.0)
    round_trip(limit, 0.0, latency=1.0)
    grown = limit.limit
    for n in range(20):  # the judge slows down: answers take four times as long
        limit.answered(4.0, started=10.0 + n, now=14.0 + n, busy=True)
    assert limit.limit < grown
    assert not limit.slow_start


def test_latency_that_holds_keeps_it_growing() -> None:
    limit = AdaptiveLimit(start=8, ceiling=1000, tolerance=2.0)
    for step in range(3):
        round_trip(limit, float(step), latency=1.5 if step % 2 else 1.0)
    assert limit.limit == 64


def test_a_budget_caps_it_at_what_the_budget_needs() -> None:
    limit = AdaptiveLimit(start=8, ceiling=1000)
    for step in range(8):
        round_trip(limit, float(step), latency=0.5)
    limit.plan(100.0)  # 100 calls a second at 0.5 s each: about 50 in flight
    assert limit.limit == 56  # 100 x 0.5 x 1.1 + 1
    limit.plan(None)
    assert limit.limit > 56


@pytest.mark.parametrize(
    "bad",
    [{"start": 0}, {"start": 20, "ceiling": 10}, {"tolerance": 1.0}, {"decrease": 1.0}],
)
def test_bad_settings_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        AdaptiveLimit(**bad)  # type: ignore[arg-type]
