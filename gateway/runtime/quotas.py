"""Per-key request limits: requests a minute and requests at once, checked before
any upstream or judge call, so that one leaked or runaway key cannot spend what the
others need.

`KeyQuota` is the arithmetic for one key (a token bucket that refills
continuously, and a count of requests in flight), pure and driven by the clock
it is given; `Quotas` keeps one per key and turns a refusal into `RateLimited`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from gateway.config import KeySettings, LimitSettings
from gateway.errors import RateLimited

__all__ = ["KeyQuota", "Limit", "Quotas"]

Limit = Literal["requests_per_minute", "concurrent_requests"]


class KeyQuota:
    """One key's limits; either may be None (no limit)."""

    def __init__(
        self, requests_per_minute: float | None, concurrent_requests: int | None, now: float
    ) -> None:
        self.per_minute = requests_per_minute
        self.at_once = concurrent_requests
        self.tokens = requests_per_minute or 0.0
        self.updated = now
        self.in_flight = 0

    def admit(self, now: float) -> tuple[Limit, float] | None:
        """Take a place for one request: None, or the limit it is past and the seconds
        until a retry could pass it."""
        if self.at_once is not None and self.in_flight >= self.at_once:
            return "concurrent_requests", 1.0
        if self.per_minute is not None:
            rate = self.per_minute / 60.0
            self.tokens = min(self.per_minute, self.tokens + (now - self.updated) * rate)
            self.updated = now
            if self.tokens < 1:
                return "requests_per_minute", (1 - self.tokens) / rate
            self.tokens -= 1
        self.in_flight += 1
        return None

    def release(self) -> None:
        self.in_flight -= 1


class Quotas:
    """One `KeyQuota` per client key that has limits (its own, or `limits`)."""

    def __init__(
        self,
        keys: list[KeySettings],
        defaults: LimitSettings,
        *,
        on_limited: Callable[[str, Limit], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        previous: Quotas | None = None,
    ) -> None:
        """`previous`: the quotas of the config this one replaces (a reload). A key whose
        name and limits stay keeps its quota, so its requests in flight and the minute's
        budget it spent still count."""
        self.clock = clock
        self.on_limited = on_limited
        self._quotas: dict[str, KeyQuota] = {}
        kept = previous._quotas if previous is not None else {}
        for key in keys:
            per_minute = key.requests_per_minute or defaults.requests_per_minute
            at_once = key.concurrent_requests or defaults.concurrent_requests
            if per_minute is None and at_once is None:
                continue
            quota = kept.get(key.name)
            if quota is None or (quota.per_minute, quota.at_once) != (per_minute, at_once):
                quota = KeyQuota(per_minute, at_once, clock())
            self._quotas[key.name] = quota

    def admit(self, key: KeySettings | None) -> KeyQuota | None:
        """The quota whose place the request now holds (`release` it once the response
        is sent), or None for a key without limits; raises `RateLimited`."""
        quota = self._quotas.get(key.name) if key is not None else None
        if quota is None:
            return None
        refused = quota.admit(self.clock())
        if refused is None:
            return quota
        limit, retry_after = refused
        assert key is not None
        if self.on_limited is not None:
            self.on_limited(key.name, limit)
        what = "requests a minute" if limit == "requests_per_minute" else "requests at once"
        raise RateLimited(
            f"Rate limit reached for key {key.name!r}: too many {what}.",
            retry_after=retry_after,
        )
