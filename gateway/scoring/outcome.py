"""What a scoring came to: `Outcome`, one value per scored response."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.domain import PolicyVerdict, ReasonStatus, Status
from guard import BiasResult

__all__ = ["Outcome"]


@dataclass(slots=True)
class Outcome:
    """What a scoring came to; `decide()` turns it into what the client sees."""

    run_id: str
    status: Status
    score: float | None = None
    verdict: PolicyVerdict | None = None
    reason: str | None = None  # the judge's explanation of a score
    status_reason: str | None = None  # skip reason, or the judge error's type
    error: str | None = None  # what the judge error said
    result: BiasResult | None = None
    judge_ms: float | None = None
    cached: bool = False  # the verdicts came from the content-hash cache
    reason_status: ReasonStatus | None = None  # for scored outcomes
    text_index: int = 0  # which of the request's texts (choices) decided the score
    # An answer judged in windows: [{start, end, score, verdict, judge_ms, ...}], in order.
    windows: list[dict[str, Any]] | None = None

    @property
    def biased_opinions(self) -> int | None:
        """How many of the deciding text's opinions the judge found biased."""
        return self.result.biased_count if self.result is not None else None

    @property
    def categories(self) -> list[str]:
        """The categories of bias found in the deciding text, most frequent first."""
        return self.result.categories if self.result is not None else []

    @property
    def tamper(self) -> list[dict[str, str]]:
        """What in the answer addressed the judge: [{kind, excerpt}], in the detector's order."""
        return self.result.tamper if self.result is not None else []

    @property
    def tamper_kinds(self) -> list[str]:
        return [finding["kind"] for finding in self.tamper]

    @property
    def normalised(self) -> list[str]:
        """The steps that changed the text the judge read (`guard.integrity.normalise`)."""
        return self.result.normalised if self.result is not None else []
