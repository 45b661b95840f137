"""What a judge call carries to the limiter without the `Judge` protocol knowing it.

Two context variables: the caller's deadline, and who is calling (its lane and
API key). Both are set by the code that starts a scoring and read by the
limiter inside the judge client; asyncio copies them into the tasks a scoring
starts, so they hold for every call it makes.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["LANES", "Caller", "Lane", "caller", "calling_as", "deadline", "remaining"]


class Lane(StrEnum):
    """Whose judge call it is, most urgent first (see `LANES`)."""

    ENFORCE = "enforce"  # a client's response waits for it
    MONITOR = "monitor"  # a verdict recorded after the response went out
    EXPLAIN = "explain"  # an explanation written after its score
    PROBE = "probe"  # a live probe's replayed answers (`gateway.probe`): nobody waits


LANES = (Lane.ENFORCE, Lane.MONITOR, Lane.EXPLAIN, Lane.PROBE)


@dataclass(frozen=True, slots=True)
class Caller:
    """The lane of a judge call, and the key whose traffic it judges (its share's weight)."""

    lane: Lane = Lane.MONITOR
    key: str = ""
    weight: float = 1.0


_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "guard_judge_deadline", default=None
)
_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "guard_judge_caller", default=None
)
_NOBODY = Caller()


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


@contextlib.contextmanager
def calling_as(lane: Lane, key: str | None = None, weight: float = 1.0) -> Iterator[None]:
    """Judge calls made inside go in `lane`, on behalf of `key` (None: no key),
    which is served `weight` times as often as a key of weight 1 in that lane.

    >>> with calling_as(Lane.ENFORCE, "team-a"):
    ...     caller().lane
    <Lane.ENFORCE: 'enforce'>
    """
    if not weight > 0:
        raise ValueError("a key's weight must be > 0")
    token = _caller.set(Caller(lane, key or "", weight))
    try:
        yield
    finally:
        _caller.reset(token)


def caller() -> Caller:
    """Who the current judge calls are for (monitor, no key, unless `calling_as` said)."""
    return _caller.get() or _NOBODY
