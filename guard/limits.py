"""How fast a judge may be called: calls in flight, request and token budgets, 429 pauses.

A real judge rate-limits. Without a shared view of that, each scoring retries
its own 429 on its own clock, and a burst of 429s becomes a burst of errors.
A `JudgeLimiter` is shared by every call of one judge client:

- at most `max_concurrency` calls are in flight;
- `requests_per_minute` and `tokens_per_minute` are token buckets that refill
  continuously (tokens are estimated before a call and settled after it, from
  the usage the judge reports);
- a 429 pauses every call of the client until the time the judge asked for
  (`Retry-After`, `x-ratelimit-reset-requests`, `x-ratelimit-reset-tokens`),
  or, without one, for a backoff that doubles with each 429 in a row.

How long one call may wait for all this is its caller's deadline
(`deadline(seconds)`, a context variable, so the `Judge` protocol stays as it
is): past it the call raises `JudgeTimeout`, which enforce mode turns into its
`on_judge_error` policy. Without a deadline, a call waits as long as it takes.

    limiter = JudgeLimiter(max_concurrency=64, requests_per_minute=500)
    async with limiter.call(estimated_tokens=900) as call:
        reply = ...  # one HTTP request
        call.settle(reply.usage.prompt_tokens + reply.usage.completion_tokens)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass

from guard.clock import SYSTEM_CLOCK, Clock
from guard.errors import JudgeTimeout

__all__ = [
    "JudgeLimiter",
    "LimiterStats",
    "deadline",
    "estimate_tokens",
    "remaining",
]

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "guard_judge_deadline", default=None
)


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Judge calls made inside give up (`JudgeTimeout`) `seconds` from now.

    A deadline already set and nearer wins. `None` sets none.
    """
    if seconds is None:
        yield
        return
    at = time.monotonic() + seconds
    current = _deadline.get()
    token = _deadline.set(at if current is None else min(current, at))
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining() -> float | None:
    """Seconds left before the current deadline (may be negative), or None."""
    at = _deadline.get()
    return None if at is None else at - time.monotonic()


@dataclass(slots=True)
class LimiterStats:
    """Running counts, for metrics."""

    in_flight: int = 0
    rate_limited: int = 0  # 429s seen


class _Bucket:
    """A token bucket of `per_minute` tokens that refills continuously."""

    def __init__(self, per_minute: float, now: float) -> None:
        if per_minute <= 0:
            raise ValueError("a per-minute budget must be > 0")
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.tokens = self.capacity
        self.updated = now

    def _refill(self, now: float) -> None:
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    def wait_for(self, amount: float, now: float) -> float:
        """Seconds until `amount` tokens are there (0 when they are now)."""
        self._refill(now)
        amount = min(amount, self.capacity)
        if self.tokens >= amount:
            return 0.0
        return (amount - self.tokens) / self.rate

    def take(self, amount: float, now: float) -> None:
        self._refill(now)
        self.tokens -= min(amount, self.capacity)

    def give_back(self, amount: float) -> None:
        # Settling may leave a debt (negative tokens): the next calls wait it out.
        self.tokens = min(self.capacity, self.tokens + amount)


class _Call:
    def __init__(self, limiter: JudgeLimiter, estimated_tokens: int) -> None:
        self._limiter = limiter
        self.estimated_tokens = estimated_tokens

    def settle(self, actual_tokens: int) -> None:
        """The tokens the call really used, once its usage is known."""
        bucket = self._limiter._tokens
        if bucket is not None:
            bucket.give_back(self.estimated_tokens - actual_tokens)


class JudgeLimiter:
    """The limits every call of one judge client shares. See the module docstring."""

    def __init__(
        self,
        *,
        max_concurrency: int | None = None,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        on_rate_limited: Callable[[float], None] | None = None,
        on_wait: Callable[[float], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """`on_rate_limited(pause)` sees each 429, `on_wait(seconds)` each wait of a call;
        pauses and budgets run on `clock`."""
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        self.max_concurrency = max_concurrency
        self._slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None
        self.clock = clock
        now = clock.monotonic()
        self._requests = _Bucket(requests_per_minute, now) if requests_per_minute else None
        self._tokens = _Bucket(tokens_per_minute, now) if tokens_per_minute else None
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._paused_until = 0.0
        self._strikes = 0  # 429s in a row
        self.stats = LimiterStats()
        self.on_rate_limited = on_rate_limited
        self.on_wait = on_wait

    def rate_limited(self, delay: float | None) -> float:
        """Record a 429 and pause every call; returns the pause in seconds.

        `delay` is what the judge asked for; without it the pause doubles with
        each 429 in a row, with jitter, up to `max_backoff`.
        """
        self.stats.rate_limited += 1
        self._strikes += 1
        if delay is None:
            delay = min(self.max_backoff, self.backoff * 2 ** (self._strikes - 1))
            delay *= 0.5 + random.random()  # jitter, so paused calls do not return in step
        until = self.clock.monotonic() + delay
        self._paused_until = max(self._paused_until, until)
        if self.on_rate_limited is not None:
            self.on_rate_limited(delay)
        return delay

    def succeeded(self) -> None:
        self._strikes = 0

    @contextlib.asynccontextmanager
    async def call(self, estimated_tokens: int = 0) -> AsyncIterator[_Call]:
        """Wait until one more call may go (raising `JudgeTimeout` past the deadline)."""
        started = self.clock.monotonic()
        acquired = False
        try:
            if self._slots is not None:
                await self._wait(self._slots.acquire(), "a free judge slot")
                acquired = True
            while True:
                now = self.clock.monotonic()
                wait = self._paused_until - now
                if self._requests is not None:
                    wait = max(wait, self._requests.wait_for(1, now))
                if self._tokens is not None:
                    wait = max(wait, self._tokens.wait_for(estimated_tokens, now))
                if wait <= 0:
                    break
                await self._sleep(wait)
            now = self.clock.monotonic()
            if self._requests is not None:
                self._requests.take(1, now)
            if self._tokens is not None:
                self._tokens.take(estimated_tokens, now)
            if self.on_wait is not None and now > started:
                self.on_wait(now - started)
            self.stats.in_flight += 1
            try:
                yield _Call(self, estimated_tokens)
            finally:
                self.stats.in_flight -= 1
        finally:
            if acquired and self._slots is not None:
                self._slots.release()

    async def sleep(self, seconds: float) -> None:
        """`asyncio.sleep`, unless it would pass the deadline: then `JudgeTimeout` at once."""
        await self._sleep(seconds)

    async def _sleep(self, seconds: float) -> None:
        left = remaining()
        if left is not None and seconds > left:
            raise JudgeTimeout(
                f"the judge is rate-limited for {seconds:.1f}s more, past the deadline"
                f" ({max(left, 0):.1f}s left)"
            )
        await self.clock.sleep(seconds)

    async def _wait(self, waiting: Awaitable[bool], what: str) -> None:
        left = remaining()
        if left is None:
            await waiting
            return
        try:
            await asyncio.wait_for(waiting, timeout=max(left, 0))
        except TimeoutError:
            raise JudgeTimeout(f"no {what} came before the deadline") from None


def estimate_tokens(texts: list[str], expected_output: int = 256) -> int:
    """A rough count before the call: about 4 characters a token, plus the answer."""
    return math.ceil(sum(len(text) for text in texts) / 4) + expected_output
