"""Policy arithmetic: verdicts from scores, and deterministic sampling. Pure code."""

from __future__ import annotations

from collections.abc import Sized

from gateway.domain import OnTamper, PolicyVerdict

__all__ = ["Sampler", "explained_for", "verdict_for", "with_tamper"]

_RANK: dict[PolicyVerdict, int] = {"pass": 0, "flag": 1, "block": 2}


def verdict_for(score: float, *, flag_threshold: float, block_threshold: float) -> PolicyVerdict:
    """A verdict is reached at `>=` its threshold; block wins over flag."""
    if score >= block_threshold:
        return "block"
    if score >= flag_threshold:
        return "flag"
    return "pass"


def with_tamper(verdict: PolicyVerdict, tamper: Sized, on_tamper: OnTamper) -> PolicyVerdict:
    """`verdict` raised to `on_tamper` when the text tampered (any finding); never lowered.

    >>> with_tamper("pass", [{"kind": "instruction"}], "flag")
    'flag'
    >>> with_tamper("block", [{"kind": "instruction"}], "flag")
    'block'
    >>> with_tamper("pass", [], "block")
    'pass'
    """
    if not len(tamper) or on_tamper == "ignore":
        return verdict
    return verdict if _RANK[verdict] >= _RANK[on_tamper] else on_tamper


def explained_for(reason_for: str, verdict: PolicyVerdict | None) -> bool:
    """Whether a score is worth explaining: any under `judge.reason_for: all`, else one
    the policy flagged or blocked (nobody reads why a passing answer passed)."""
    return reason_for == "all" or verdict in ("flag", "block")


class Sampler:
    """Picks a deterministic share `rate` of calls by carrying the fraction forward.

    Rate 0.3 scores calls 4, 7, 10, ... (every time the running sum crosses a
    whole number), so over n calls exactly floor(n * rate) or one more are
    taken, with no randomness and no `1/rate` rounding: 0.3 is not "every 3rd".
    """

    def __init__(self, rate: float) -> None:
        self.rate = _checked(rate)
        self._carry = 0.0

    def retune(self, rate: float) -> None:
        """Take `rate` from the next call on. The carried fraction stays, so the calls
        taken stay evenly spread across the change (overload shedding retunes often)."""
        self.rate = _checked(rate)

    def take(self) -> bool:
        if self.rate == 1:
            return True
        self._carry += self.rate
        if self._carry >= 1 - 1e-9:  # absorb float drift, e.g. 0.1 summed ten times
            self._carry -= 1
            return True
        return False


def _checked(rate: float) -> float:
    if not 0 < rate <= 1:
        raise ValueError(f"sample rate must be in (0, 1], got {rate}")
    return rate
