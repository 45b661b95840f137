"""429 pauses: how long, capped, and the half-open probe that ends them.

A 429 pauses every call of the client:

- for what `Retry-After` asked, or an estimate from OpenAI's reset headers
  (`guard.wire.rate_limit_delay`), never longer than `max_pause`;
- without either, for a short backoff that doubles with each 429 in a row,
  no longer than the time the judge says its budget is full again (`refill`)
  nor `max_pause`.

When the pause is over the breaker is half-open: one call goes first, as a
probe. If it succeeds, the rest follow at once; if it gets a 429, a new pause
begins. Any success of a call that started after the last 429 ends the storm:
the streak of 429s is forgotten and nothing is paused.

When a request budget paces the calls (`paced`), the calls that follow a pause
go at the budget's pace, not as a herd, so a pause can be as short as the judge
allows: a `Retry-After` (whole seconds) is bounded by `refill` too, and the
probe can be cut short. A judge
refuses a call at its door, so a 429 comes back in about a round trip, while an
answer takes the whole generation (a second or more): a probe still out after
three times the slowest recent refusal took was let in, and the rest follow
then instead of idling the judge for the probe's whole answer (if the probe is
refused after all, a new pause begins and the slower refusal is remembered).
A pause shorter than a refusal takes (a judge whose budget is back in a few
milliseconds) needs no probe at all: its verdict would come after the pause has
ended. Without a budget every waiting call would go at once when the gate
opens, so the pause is what `Retry-After` asked and the rest wait for the
probe's answer.

Pure state on times given to it, so it is tested on a fake clock.
"""

from __future__ import annotations

import random
from enum import Enum

__all__ = ["DEFAULT_MAX_PAUSE", "Gate", "Pauses"]

# A judge asking for longer (`Retry-After: 86400`) is asked again after this long by one
# probe call: a cost of a dozen calls a minute, against an outage as long as the header
# said. It also leaves an enforced request (30 s to its score by default) time to wait
# out a whole pause and still be judged.
DEFAULT_MAX_PAUSE = 5.0
# A probe out this many times the slowest recent refusal was let in (see above).
_ADMITTED_AFTER = 3.0
# Each new refusal time counts fully; older ones fade by this factor at each 429.
_REFUSAL_FADE = 0.8


class Gate(Enum):
    OPEN = "open"  # calls go
    PROBE = "probe"  # one call may go, as the probe
    SHUT = "shut"  # paused, or the probe is out


class Pauses:
    """The 429 state of one judge client. See the module docstring."""

    def __init__(
        self, *, backoff: float = 0.5, max_pause: float = DEFAULT_MAX_PAUSE, paced: bool = False
    ) -> None:
        if backoff <= 0 or max_pause <= 0:
            raise ValueError("backoff and max_pause must be > 0")
        self.backoff = backoff
        self.max_pause = max_pause
        self.paced = paced  # a request budget paces the calls (see the module docstring)
        self.until = 0.0  # paused until then
        self.half_open = False  # after a pause: the next call is a probe
        self.probing = False  # the probe is out
        self.strikes = 0  # 429s in a row
        self.last_429 = float("-inf")
        self.refusal: float | None = None  # seconds a 429 took to come back, recently
        self.probe_at = 0.0  # when the probe went

    def gate(self, now: float) -> tuple[Gate, float]:
        """Whether a call may go now; with `SHUT`, the seconds until that may change (0
        while a probe is out and no refusal was timed: its end is the next event)."""
        if now < self.until:
            return Gate.SHUT, self.until - now
        if not self.half_open:
            return Gate.OPEN, 0.0
        if not self.probing:
            return Gate.PROBE, 0.0
        if not self.paced or self.refusal is None:
            return Gate.SHUT, 0.0
        admitted = self.probe_at + _ADMITTED_AFTER * self.refusal
        return (Gate.OPEN, 0.0) if now >= admitted else (Gate.SHUT, admitted - now)

    def probe_sent(self, now: float) -> None:
        self.probing = True
        self.probe_at = now

    def rate_limited(
        self,
        now: float,
        delay: float | None,
        refill: float | None = None,
        *,
        started: float | None = None,
        probe: bool = False,
    ) -> float:
        """Record a 429 at `now` for a call sent at `started`; returns the pause it starts.

        The 429s of calls sent before the last one are the same storm seen again (they
        were all in flight when it began): they do not lengthen the backoff."""
        if started is None or started >= self.last_429:
            self.strikes += 1
        if started is not None:
            took = max(0.0, now - started)
            self.refusal = took if self.refusal is None else max(took, self.refusal * _REFUSAL_FADE)
        self.last_429 = now
        if probe:
            self.probing = False
        if delay is None:
            delay = self.backoff * 2 ** min(self.strikes - 1, 30)
            delay *= 0.5 + random.random()  # jitter, so paused clients do not return in step
            if refill is not None:
                delay = min(delay, refill)
        elif refill is not None and self.paced:  # a Retry-After of whole seconds, bounded
            delay = min(delay, refill)
        delay = min(max(0.0, delay), self.max_pause)
        self.until = max(self.until, now + delay)
        # Paced, a pause shorter than a refusal takes (the judge's budget is back in a few
        # ms) ends without a probe: the probe's verdict would come after the pause ends.
        short = self.paced and self.refusal is not None and delay < self.refusal
        self.half_open = self.half_open or not short
        return delay

    def succeeded(self, started: float, *, probe: bool = False) -> None:
        """A call that started at `started` got an answer: if it started after the last
        429 (or was the probe), the storm is over."""
        if probe or started >= self.last_429:
            self.strikes = 0
            self.until = 0.0
            self.half_open = self.probing = False

    def failed(self, *, probe: bool) -> None:
        """A call ended without an answer that says anything about 429s (a timeout, a
        5xx, a cancelled wait): if it was the probe, the next call probes instead."""
        if probe:
            self.probing = False
