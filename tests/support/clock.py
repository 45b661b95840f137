"""A wall clock that moves only when a test says so: leases lapse without waiting."""

from __future__ import annotations

import time

__all__ = ["ManualClock"]


class ManualClock:
    """Wall-clock seconds (`time.time()` at the start), passed as a store's `clock`."""

    def __init__(self, now: float | None = None) -> None:
        self.now = time.time() if now is None else now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
