"""Request and token budgets a minute: token buckets that refill continuously."""

from __future__ import annotations

import math
from collections import deque

__all__ = ["Bucket", "PerSecond", "estimate_tokens"]


# A refill a hair short of a whole token is float rounding of the wait just slept, not a
# reason to sleep again (a wait too small to move the clock on would repeat for ever).
_ROUNDING = 1e-9


class Bucket:
    """A token bucket of `per_minute` tokens that refills continuously, holding at most
    `burst` tokens (a whole minute's by default)."""

    def __init__(self, per_minute: float, now: float, *, burst: float | None = None) -> None:
        if per_minute <= 0:
            raise ValueError("a per-minute budget must be > 0")
        self.capacity = float(per_minute if burst is None else burst)
        self.rate = per_minute / 60.0  # tokens a second
        self.tokens = self.capacity
        self.updated = now

    def _refill(self, now: float) -> None:
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    def wait_for(self, amount: float, now: float) -> float:
        """Seconds until `amount` tokens are there (0 when they are now)."""
        self._refill(now)
        amount = min(amount, self.capacity)
        if self.tokens >= amount - _ROUNDING:
            return 0.0
        return (amount - self.tokens) / self.rate

    def take(self, amount: float, now: float) -> None:
        self._refill(now)
        self.tokens -= min(amount, self.capacity)

    def give_back(self, amount: float) -> None:
        # Settling may leave a debt (negative tokens): the next calls wait it out.
        self.tokens = min(self.capacity, self.tokens + amount)


class PerSecond:
    """At most `limit` calls in any one second: a log of the last second's send times.

    Beside a paced bucket, whose burst could otherwise put a burst's worth more
    than a second's budget into one second."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a per-second limit must be >= 1")
        self.limit = limit
        self._sent: deque[float] = deque()

    def wait_for(self, now: float) -> float:
        """Seconds until one more call fits in the second before it (0: now)."""
        sent = self._sent
        while sent and sent[0] <= now - 1.0:
            sent.popleft()
        return 0.0 if len(sent) < self.limit else sent[0] + 1.0 - now

    def take(self, now: float) -> None:
        self._sent.append(now)


def estimate_tokens(texts: list[str], expected_output: int = 256) -> int:
    """A rough count before the call: about 4 characters a token, plus the answer."""
    return math.ceil(sum(len(text) for text in texts) / 4) + expected_output
