"""The judge limiter: slots, budgets, 429 pauses and deadlines."""

from __future__ import annotations

import asyncio

import pytest

from guard import JudgeTimeout
from guard.limits import JudgeLimiter, deadline, estimate_tokens, remaining
from guard.testing import FakeClock
from guard.wire import rate_limit_delay


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"Retry-After": "0.5"}, 0.5),
        # A reset header is when the budget is full again, not a wait.
        ({"x-ratelimit-reset-requests": "250ms"}, None),
        ({"x-ratelimit-reset-tokens": "6m0s"}, None),
        ({"x-ratelimit-reset-requests": "1m30.5s", "retry-after": "2"}, 2.0),
        # With the limit and what is left, it tells when the next request comes.
        (
            {
                "x-ratelimit-reset-requests": "6m0s",
                "x-ratelimit-limit-requests": "500",
                "x-ratelimit-remaining-requests": "20",
            },
            0.75,
        ),
        ({"x-ratelimit-reset-requests": "soon"}, None),
        ({"retry-after": "later"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "-3"}, 0.0),
        ({}, None),
    ],
)
def test_rate_limit_delay(headers: dict[str, str], seconds: float | None) -> None:
    assert rate_limit_delay(headers) == seconds


async def test_slots_bound_calls_in_flight() -> None:
    limiter = JudgeLimiter(max_concurrency=3)
    peak = 0

    async def one() -> None:
        nonlocal peak
        async with limiter.call():
            peak = max(peak, limiter.stats.in_flight)
            await asyncio.sleep(0.01)

    await asyncio.gather(*(one() for _ in range(12)))
    assert peak == 3
    assert limiter.stats.in_flight == 0


async def test_a_429_pauses_every_call_of_the_client() -> None:
    clock = FakeClock()
    limiter = JudgeLimiter(clock=clock)
    assert limiter.rate_limited(0.3) == 0.3
    started = clock.now
    async with limiter.call():
        waited = clock.now - started
    assert waited == pytest.approx(0.3)
    assert limiter.stats.rate_limited == 1
    async with limiter.call():  # the pause is over: the next call goes at once
        pass
    assert clock.now - started == pytest.approx(0.3)


async def test_a_request_budget_holds_the_next_call_until_it_refills() -> None:
    clock = FakeClock()
    limiter = JudgeLimiter(requests_per_minute=2, clock=clock)
    for _ in range(2):
        async with limiter.call():
            pass
    assert clock.sleeps == []
    async with limiter.call():
        pass
    assert sum(clock.sleeps) == pytest.approx(30.0)  # two a minute: one every 30 s


def test_backoff_without_a_delay_grows_with_each_429_in_a_row() -> None:
    limiter = JudgeLimiter(backoff=1.0, max_pause=8.0)
    pauses = [limiter.rate_limited(None) for _ in range(6)]
    assert 0.5 <= pauses[0] <= 1.5
    assert 4 <= pauses[3] <= 8  # 8 with jitter, capped
    assert all(pause <= 8 for pause in pauses)  # capped at max_pause, jitter included


async def test_a_pause_past_the_deadline_is_a_timeout_at_once() -> None:
    clock = FakeClock()
    limiter = JudgeLimiter(clock=clock)
    limiter.rate_limited(30)
    with deadline(0.5), pytest.raises(JudgeTimeout, match="rate-limited"):
        async with limiter.call():
            pass
    assert clock.sleeps == []  # it did not wait for the pause first


async def test_a_request_budget_past_the_deadline_is_a_timeout() -> None:
    limiter = JudgeLimiter(requests_per_minute=2)
    for _ in range(2):
        async with limiter.call():
            pass
    with deadline(0.2), pytest.raises(JudgeTimeout):
        async with limiter.call():
            pass


async def test_a_token_budget_is_settled_with_the_real_usage() -> None:
    limiter = JudgeLimiter(tokens_per_minute=1000)
    async with limiter.call(estimated_tokens=900) as call:
        call.settle(100)  # the call used far fewer than estimated
    with deadline(0.2):
        async with limiter.call(estimated_tokens=800):
            pass  # fits: 1000 - 100 are left
    with deadline(0.2), pytest.raises(JudgeTimeout):
        async with limiter.call(estimated_tokens=800):
            pass


async def test_no_free_slot_before_the_deadline_is_a_timeout() -> None:
    limiter = JudgeLimiter(max_concurrency=1)
    async with limiter.call():
        with deadline(0.1), pytest.raises(JudgeTimeout, match="slot"):
            async with limiter.call():
                pass
    assert limiter.stats.in_flight == 0


def test_deadlines_nest_and_the_nearer_one_wins() -> None:
    assert remaining() is None
    with deadline(10):
        outer = remaining()
        with deadline(100):
            inner = remaining()
            assert inner is not None
            assert outer is not None
            assert inner <= outer
        with deadline(None):
            assert remaining() is not None
    assert remaining() is None


def test_estimate_tokens() -> None:
    assert estimate_tokens(["a" * 400], expected_output=0) == 100
    assert estimate_tokens([], expected_output=256) == 256


@pytest.mark.parametrize("bad", [{"max_concurrency": 0}, {"requests_per_minute": -1}])
def test_bad_limits_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        JudgeLimiter(**bad)  # type: ignore[arg-type]
