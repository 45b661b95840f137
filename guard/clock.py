"""The clock that waiting code reads, so that tests can run it without waiting.

Code that sleeps or measures time takes a `Clock` (the system's by default);
a test hands it `guard.testing.FakeClock`, whose `sleep` moves time on at once.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock"]


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return after `seconds` of this clock."""
        ...


class SystemClock:
    """`time.monotonic` and `asyncio.sleep` themselves (no wrapper on every reading)."""

    monotonic = staticmethod(time.monotonic)
    sleep = staticmethod(asyncio.sleep)


SYSTEM_CLOCK: Clock = SystemClock()
