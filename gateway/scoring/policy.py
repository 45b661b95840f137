"""Policy arithmetic: verdicts from scores and counts, and deterministic sampling. Pure code."""

from __future__ import annotations

from collections.abc import Sized
from dataclasses import dataclass
from typing import Protocol

from gateway.domain import VERDICTS, OnTamper, PolicyVerdict

__all__ = [
    "Rules",
    "Sampler",
    "VerdictRules",
    "block_reason",
    "explained_for",
    "rank",
    "verdict_for",
    "with_tamper",
]


class VerdictRules(Protocol):
    """What a verdict is reached on: a policy (`gateway.config.Policy`) or `Rules`."""

    @property
    def flag_threshold(self) -> float: ...
    @property
    def block_threshold(self) -> float: ...
    @property
    def flag_biased_opinions(self) -> int | None: ...
    @property
    def block_biased_opinions(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class Rules:
    """Verdict rules as a value (what-if's, a prefix's); a count rule of None is off."""

    flag_threshold: float
    block_threshold: float
    flag_biased_opinions: int | None = None
    block_biased_opinions: int | None = None

    @classmethod
    def of(cls, rules: VerdictRules) -> Rules:
        return cls(
            rules.flag_threshold,
            rules.block_threshold,
            rules.flag_biased_opinions,
            rules.block_biased_opinions,
        )

    def without_block(self) -> Rules:
        """The same rules, unable to block (a prefix on too few verdicts to block)."""
        return Rules(self.flag_threshold, float("inf"), self.flag_biased_opinions, None)


def verdict_for(score: float, biased: int, rules: VerdictRules) -> PolicyVerdict:
    """The verdict on a text of `score` with `biased` biased opinions.

    Each rule is met at `>=`: the score at a threshold, or the count of biased
    opinions at its `*_biased_opinions` (unset: that count rule is off); block wins
    over flag. The count rules keep padding from diluting a verdict: one biased
    opinion among many neutral ones scores low, but it is still one.

    >>> verdict_for(0.1, 1, Rules(0.5, 0.8, flag_biased_opinions=1))
    'flag'
    >>> verdict_for(0.1, 1, Rules(0.5, 0.8, 1, block_biased_opinions=1))
    'block'
    """
    if score >= rules.block_threshold or _reaches(biased, rules.block_biased_opinions):
        return "block"
    if score >= rules.flag_threshold or _reaches(biased, rules.flag_biased_opinions):
        return "flag"
    return "pass"


def _reaches(biased: int, at: int | None) -> bool:
    return at is not None and biased >= at


def block_reason(score: float | None, biased: int | None, rules: VerdictRules) -> str:
    """Why `rules` block a text, in words: each block rule it meets (the score's when
    none is known to be met, as a prefix's block may rest on another text's).

    >>> block_reason(0.1, 2, Rules(0.5, 0.8, 1, 2))
    '2 biased opinions are at or above block_biased_opinions (2)'
    """
    met = []
    if score is not None and score >= rules.block_threshold:
        met.append(_score_reason(score, rules))
    at = rules.block_biased_opinions
    if biased is not None and at is not None and biased >= at:
        opinions = "biased opinion is" if biased == 1 else "biased opinions are"
        met.append(f"{biased} {opinions} at or above block_biased_opinions ({at})")
    return "; ".join(met) if met else _score_reason(score or 0.0, rules)


def _score_reason(score: float, rules: VerdictRules) -> str:
    return f"score {score:g} is at or above the block threshold {rules.block_threshold:g}"


def rank(verdict: PolicyVerdict) -> int:
    """A verdict's severity, for finding the worst: pass < flag < block."""
    return VERDICTS.index(verdict)


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
    return verdict if rank(verdict) >= rank(on_tamper) else on_tamper


def explained_for(reason_for: str, verdict: PolicyVerdict | None) -> bool:
    """Whether a score is worth explaining: any under `judge.explanations.scope: all`, else one
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
