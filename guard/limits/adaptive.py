"""`max_concurrency: auto`: find the concurrency the judge sustains, AIMD-style.

The limit starts low and grows while answers come back as fast as before and no
429 comes: by one slot per answer at first (it doubles each round trip, a slow
start like TCP's), by one slot per round trip after the first back-off. A 429,
a call that timed out, or answers taking `tolerance` times longer than the
fastest seen, cut it by a factor (`decrease`), at most once per round trip:
the answers to calls sent before a cut say nothing about the new limit.

The judge's request and token budgets, when known, cap it too: by Little's law
a judge that answers in L seconds needs no more than budget-per-second x L
calls in flight, and sending more only buys 429s.

Pure state on times and latencies given to it, so it is tested without a judge.
"""

from __future__ import annotations

__all__ = ["AdaptiveLimit"]


class AdaptiveLimit:
    """The concurrency limit of one judge client. See the module docstring."""

    def __init__(
        self,
        *,
        start: int = 8,
        ceiling: int = 512,
        floor: int = 1,
        tolerance: float = 2.0,
        decrease: float = 0.9,
    ) -> None:
        if not 1 <= floor <= start <= ceiling:
            raise ValueError("the limits must be ordered: 1 <= floor <= start <= ceiling")
        if tolerance <= 1 or not 0 < decrease < 1:
            raise ValueError("tolerance must be > 1 and decrease between 0 and 1")
        self.value = float(start)
        self.ceiling = ceiling
        self.floor = floor
        self.tolerance = tolerance
        self.decrease = decrease
        self.slow_start = True
        self.fastest: float | None = None  # the fastest answer seen, in seconds
        self.latency: float | None = None  # a moving average of recent answers
        self.cut_at = float("-inf")  # when the limit was last cut
        self.budget_cap: float | None = None  # from the budgets, given the latency

    @property
    def limit(self) -> int:
        cap = self.ceiling if self.budget_cap is None else min(self.ceiling, self.budget_cap)
        return max(self.floor, int(min(self.value, cap)))

    def plan(self, per_second: float | None) -> None:
        """Cap the limit at what a budget of `per_second` calls needs at the current
        latency (None: no budget), with a tenth to spare for latency's noise."""
        if per_second is None or self.latency is None:
            self.budget_cap = None
            return
        self.budget_cap = per_second * self.latency * 1.1 + 1

    def answered(self, latency: float, *, started: float, now: float, busy: bool) -> None:
        """A call sent at `started` was answered in `latency` seconds; `busy` says whether
        the limit was in use when it went (an idle limit learns nothing by growing)."""
        self.fastest = latency if self.fastest is None else min(self.fastest, latency)
        # The fastest answer drifts up slowly, so a judge that has become slower for good
        # is the new normal after a while rather than a reason to shrink for ever.
        self.fastest += (latency - self.fastest) * 0.001
        self.latency = latency if self.latency is None else self.latency * 0.9 + latency * 0.1
        if self.latency > self.tolerance * self.fastest:
            self._cut(started, now)
        elif busy:
            self.value = min(self.ceiling, self.value + (1 if self.slow_start else 1 / self.value))

    def rate_limited(self, *, started: float, now: float) -> None:
        """A call sent at `started` got a 429."""
        self._cut(started, now)

    def timed_out(self, *, started: float, now: float) -> None:
        """A call sent at `started` got no answer in time: latency past any tolerance."""
        self._cut(started, now)

    def _cut(self, started: float, now: float) -> None:
        if started < self.cut_at:
            return
        self.slow_start = False
        self.value = max(float(self.floor), self.value * self.decrease)
        self.cut_at = now
        if self.latency is not None and self.fastest is not None:
            # Start the average afresh, or one slow spell would cut again at every answer.
            self.latency = min(self.latency, self.tolerance * self.fastest)
