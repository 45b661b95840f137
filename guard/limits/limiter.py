"""`JudgeLimiter`: the one door every call of a judge client goes through.

It hands out judge slots (see `guard.limits.lanes` for who goes first), holds
calls to the request and token budgets, and to 429 pauses and their probe
(`guard.limits.pauses`); with an `AdaptiveLimit` the number of slots follows
what the judge sustains (`guard.limits.adaptive`).

A waiting call is queued; `_pump` hands out whatever may go now, on every
event that can change that (a call queued or finished, a pause or a budget's
wait over), so the order is the queue's and not the event loop's.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

from guard.clock import SYSTEM_CLOCK, Clock
from guard.errors import JudgeTimeout
from guard.limits.adaptive import AdaptiveLimit
from guard.limits.budgets import Bucket, PerSecond
from guard.limits.context import LANES, Caller, Lane, caller, remaining
from guard.limits.lanes import DEFAULT_RESERVED, LaneQueue
from guard.limits.pauses import DEFAULT_MAX_PAUSE, Gate, Pauses

__all__ = ["JudgeLimiter", "LimiterStats"]


@dataclass(slots=True)
class LimiterStats:
    """Running counts, for metrics: per lane, the calls let through, the seconds they
    waited to go, and the seconds the judge took to answer them."""

    in_flight: int = 0
    rate_limited: int = 0  # 429s seen
    calls: dict[Lane, int] = field(default_factory=lambda: dict.fromkeys(LANES, 0))  # let through
    waited: dict[Lane, float] = field(default_factory=lambda: dict.fromkeys(LANES, 0.0))  # seconds
    answering: dict[Lane, float] = field(default_factory=lambda: dict.fromkeys(LANES, 0.0))  # s


# Calls a request budget lets go at once: a twentieth of a second's worth, at least one;
# and never more than a second's worth in any one second (`PerSecond`).
# A judge's budget a minute is often kept over shorter periods: "60,000 requests/minute
# may be enforced as 1,000 requests/second" (OpenAI's rate-limit guide,
# platform.openai.com/docs/guides/rate-limits). A minute's worth at once is a burst such
# a judge refuses; calls paced at the budget's rate are not, and the twentieth absorbs
# a late timer without losing the budget's pace.
_REQUEST_BURST_SECONDS = 0.05


def _request_burst(per_minute: float) -> float:
    return max(1.0, per_minute / 60 * _REQUEST_BURST_SECONDS)


class _Waiter:
    __slots__ = ("busy", "caller", "future", "probe", "queued", "tokens")

    def __init__(self, who: Caller, tokens: int, queued: float) -> None:
        self.caller = who
        self.tokens = tokens
        self.queued = queued
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.probe = False
        self.busy = False  # the limit was in use when it went


class _Call:
    """One call let through: settle its tokens, report its 429."""

    def __init__(self, limiter: JudgeLimiter, waiter: _Waiter, sent: float) -> None:
        self._limiter = limiter
        self._waiter = waiter
        self.estimated_tokens = waiter.tokens
        self.sent = sent
        self.limited = False

    def settle(self, actual_tokens: int) -> None:
        """The tokens the call really used, once its usage is known."""
        self._limiter._settle(self.estimated_tokens, actual_tokens)

    def rate_limited(self, delay: float | None, refill: float | None = None) -> float:
        """The judge answered this call 429: pause every call (see `JudgeLimiter.rate_limited`)."""
        self.limited = True
        return self._limiter._rate_limited(delay, refill, self.sent, self._waiter.probe)


class JudgeLimiter:
    """The limits every call of one judge client shares. See `guard.limits`."""

    def __init__(
        self,
        *,
        max_concurrency: int | None = None,
        adaptive: AdaptiveLimit | None = None,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        backoff: float = 0.5,
        max_pause: float = DEFAULT_MAX_PAUSE,
        reserved: Mapping[Lane, float] = DEFAULT_RESERVED,
        on_rate_limited: Callable[[float], None] | None = None,
        on_wait: Callable[[float], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """`max_concurrency` slots, or as many as `adaptive` finds; `on_rate_limited(pause)`
        sees each 429, `on_wait(seconds)` each wait of a call; waits run on `clock`."""
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        self.max_concurrency = max_concurrency
        self.adaptive = adaptive
        self.clock = clock
        now = clock.monotonic()
        self._requests = (
            Bucket(requests_per_minute, now, burst=_request_burst(requests_per_minute))
            if requests_per_minute
            else None
        )
        self._per_second = (
            PerSecond(math.ceil(requests_per_minute / 60)) if requests_per_minute else None
        )
        self._tokens = Bucket(tokens_per_minute, now) if tokens_per_minute else None
        self._pauses = Pauses(backoff=backoff, max_pause=max_pause, paced=bool(requests_per_minute))
        self._queue: LaneQueue[_Waiter] = LaneQueue(reserved)
        self._running = dict.fromkeys(LANES, 0)
        self._tokens_per_call: float | None = None
        self._timer: asyncio.Task[None] | None = None
        self._timer_at = 0.0
        self.stats = LimiterStats()
        self.on_rate_limited = on_rate_limited
        self.on_wait = on_wait

    @property
    def limit(self) -> int | None:
        """Calls that may be in flight now (None: no limit)."""
        return self.adaptive.limit if self.adaptive is not None else self.max_concurrency

    @property
    def waiting(self) -> int:
        return len(self._queue)

    def running(self, lane: Lane) -> int:
        return self._running[lane]

    @property
    def max_pause(self) -> float:
        return self._pauses.max_pause

    def rate_limited(self, delay: float | None, refill: float | None = None) -> float:
        """Record a 429 and pause every call; returns the pause in seconds.

        `delay` is what the judge asked for (`guard.wire.rate_limit_delay`), `refill`
        when its budget is full again (`guard.wire.rate_limit_refill`); see
        `guard.limits.pauses` for the pause they make. A call's own 429 goes through
        `call.rate_limited`, which knows when it was sent.
        """
        return self._rate_limited(delay, refill, None, False)

    @contextlib.asynccontextmanager
    async def call(self, estimated_tokens: int = 0) -> AsyncIterator[_Call]:
        """Wait until one more call may go (raising `JudgeTimeout` past the deadline).

        The call goes in the lane, and for the key, that `guard.limits.calling_as` set.
        """
        waiter = await self._admit(caller(), estimated_tokens)
        call = _Call(self, waiter, self.clock.monotonic())
        self.stats.in_flight += 1
        answered = timed_out = False
        try:
            yield call
            answered = True
        except JudgeTimeout:  # the judge's own answer was too slow: the deadline is outside
            timed_out = True
            raise
        finally:
            self.stats.in_flight -= 1
            self._running[waiter.caller.lane] -= 1
            now = self.clock.monotonic()
            if call.limited:
                pass
            elif answered:
                latency = now - call.sent
                self.stats.answering[waiter.caller.lane] += latency
                self._pauses.succeeded(call.sent, probe=waiter.probe)
                if self.adaptive is not None:
                    self.adaptive.answered(latency, started=call.sent, now=now, busy=waiter.busy)
                    self.adaptive.plan(self._budget_per_second())
            else:
                self._pauses.failed(probe=waiter.probe)
                if timed_out and self.adaptive is not None:
                    self.adaptive.timed_out(started=call.sent, now=now)
            self._pump()

    async def sleep(self, seconds: float) -> None:
        """`clock.sleep`, unless it would pass the deadline: then `JudgeTimeout` at once."""
        left = remaining()
        if left is not None and seconds > left:
            raise JudgeTimeout(
                f"a judge retry is due in {seconds:.1f}s, past the deadline"
                f" ({max(left, 0):.1f}s left)"
            )
        await self.clock.sleep(seconds)

    # -- waiting for a slot ------------------------------------------------------------

    async def _admit(self, who: Caller, tokens: int) -> _Waiter:
        now = self.clock.monotonic()
        left = remaining()
        gate, paused = self._pauses.gate(now)
        if left is not None and gate is Gate.SHUT and paused > left:
            raise JudgeTimeout(
                f"the judge is rate-limited for {paused:.1f}s more, past the deadline"
                f" ({max(left, 0):.1f}s left)"
            )
        waiter = _Waiter(who, tokens, now)
        self._queue.push(waiter, who)
        self._pump()
        if waiter.future.done():
            return waiter
        try:
            async with asyncio.timeout(max(left, 0.0) if left is not None else None):
                await asyncio.shield(waiter.future)
        except TimeoutError:
            self._abandon(waiter)
            raise JudgeTimeout(
                f"no judge slot came before the deadline ({self.waiting} calls waiting)"
            ) from None
        except asyncio.CancelledError:
            self._abandon(waiter)
            raise
        return waiter

    def _abandon(self, waiter: _Waiter) -> None:
        """A waiter gave up: out of the queue, or, if it was let through meanwhile, its
        slot back."""
        if not self._queue.remove(waiter, waiter.caller):
            self._running[waiter.caller.lane] -= 1
            self._pauses.failed(probe=waiter.probe)
        if not self._queue and self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pump()

    def _pump(self) -> None:
        """Let through every waiter that may go now, in the queue's order."""
        while self._queue:
            limit = self.limit
            total = sum(self._running.values())
            if limit is not None and total >= limit:
                return
            now = self.clock.monotonic()
            gate, paused = self._pauses.gate(now)
            if gate is Gate.SHUT:
                if paused > 0:
                    self._wake_in(paused, now)
                return  # else the probe's end pumps again
            waiter = self._queue.peek(self._running, limit)
            assert waiter is not None  # the queue is not empty
            budget = self._budget_wait(waiter.tokens, now)
            if budget > 0:
                self._wake_in(budget, now)
                return
            self._queue.pop(self._running, limit)
            self._take_budget(waiter.tokens, now)
            if gate is Gate.PROBE:
                waiter.probe = True
                self._pauses.probe_sent(now)
            waiter.busy = limit is not None and (total + 1 >= limit / 2 or bool(self._queue))
            self._running[waiter.caller.lane] += 1
            self.stats.calls[waiter.caller.lane] += 1
            waiter.future.set_result(None)
            if now > waiter.queued:
                self.stats.waited[waiter.caller.lane] += now - waiter.queued
                if self.on_wait is not None:
                    self.on_wait(now - waiter.queued)

    def _wake_in(self, seconds: float, now: float) -> None:
        at = now + seconds
        if self._timer is not None and not self._timer.done() and self._timer_at <= at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        self._timer = asyncio.get_running_loop().create_task(self._wake(seconds))

    async def _wake(self, seconds: float) -> None:
        await self.clock.sleep(seconds)
        self._timer = None
        self._pump()

    # -- budgets and 429s --------------------------------------------------------------

    def _budget_wait(self, tokens: int, now: float) -> float:
        wait = 0.0
        if self._requests is not None:
            wait = self._requests.wait_for(1, now)
        if self._per_second is not None:
            wait = max(wait, self._per_second.wait_for(now))
        if self._tokens is not None:
            wait = max(wait, self._tokens.wait_for(tokens, now))
        return wait

    def _take_budget(self, tokens: int, now: float) -> None:
        if self._requests is not None:
            self._requests.take(1, now)
        if self._per_second is not None:
            self._per_second.take(now)
        if self._tokens is not None:
            self._tokens.take(tokens, now)

    def _settle(self, estimated: int, actual: int) -> None:
        if self._tokens is not None:
            self._tokens.give_back(estimated - actual)
        known = self._tokens_per_call
        self._tokens_per_call = actual if known is None else known * 0.9 + actual * 0.1

    def _budget_per_second(self) -> float | None:
        """The calls a second the budgets allow (None: no budget)."""
        rates = []
        if self._requests is not None:
            rates.append(self._requests.rate)
        if self._tokens is not None and self._tokens_per_call:
            rates.append(self._tokens.rate / self._tokens_per_call)
        return min(rates) if rates else None

    def _rate_limited(
        self, delay: float | None, refill: float | None, sent: float | None, probe: bool
    ) -> float:
        now = self.clock.monotonic()
        self.stats.rate_limited += 1
        pause = self._pauses.rate_limited(now, delay, refill, started=sent, probe=probe)
        if self.adaptive is not None:
            self.adaptive.rate_limited(started=now if sent is None else sent, now=now)
        if self.on_rate_limited is not None:
            self.on_rate_limited(pause)
        return pause
