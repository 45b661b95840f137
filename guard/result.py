"""The scorer's result, shaped like Mastra's when dumped by alias."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from guard.wire import Usage

__all__ = [
    "AnalyzeStepResult",
    "AssessStepResult",
    "AssessedOpinion",
    "BiasResult",
    "PreprocessStepResult",
    "Verdict",
]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class PreprocessStepResult(_Model):
    opinions: list[str]


class Verdict(_Model):
    """A judge's verdict on one opinion: biased or not (`result`), why, and which kinds.

    `result` is the judge's answer as given ("yes" means biased, read by
    `guard.is_biased`). This is not a policy decision on a response: the
    gateway's pass/flag/block is its own `PolicyVerdict`.
    """

    result: str
    reason: str
    # Ids of the kinds of bias found (`guard.bias.categories`); none when unbiased.
    categories: list[str] = Field(default_factory=list)


class AnalyzeStepResult(_Model):
    """The analyze step's answer: one `Verdict` per opinion, in order."""

    results: list[Verdict]


class AssessedOpinion(_Model):
    """One entry of the single-call pipeline's answer: an opinion and its verdict."""

    opinion: str
    result: str
    reason: str
    categories: list[str] = Field(default_factory=list)


class AssessStepResult(_Model):
    verdicts: list[AssessedOpinion]


class BiasResult(_Model):
    """One bias-scorer run.

    `result.model_dump(by_alias=True)` gives Mastra's field names (`runId`,
    `preprocessStepResult`, ...); the attributes are snake_case.
    """

    run_id: str
    preprocess_step_result: PreprocessStepResult
    preprocess_prompt: str | None
    analyze_step_result: AnalyzeStepResult
    analyze_prompt: str | None
    score: float
    reason: str | None
    generate_reason_prompt: str | None
    scale: float
    judge_model: str
    judge_calls: int
    durations_ms: dict[str, float] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    # What each step cost: judge calls (a corrective retry counts) and tokens.
    calls_by_step: dict[str, int] = Field(default_factory=dict)
    usage_by_step: dict[str, Usage] = Field(default_factory=dict)
    pipeline: str = "faithful"  # "faithful" (Mastra's steps) or "single" (one call)
    # Per category, biased opinions naming it / all opinions * scale (an addition to
    # Mastra's fields): {"gender": 0.5}. Only categories some verdict names.
    category_scores: dict[str, float] = Field(default_factory=dict)
    # The text was read as hostile input (additions to Mastra's fields): the steps that
    # changed the judged view (`guard.integrity.normalise`), and what in the text
    # addressed the judge, [{"kind", "excerpt"}] (`guard.integrity.tamper`).
    normalised: list[str] = Field(default_factory=list)
    tamper: list[dict[str, str]] = Field(default_factory=list)

    @property
    def categories(self) -> list[str]:
        """The categories of bias found, most frequent first (`category_scores`' keys)."""
        return list(self.category_scores)

    @property
    def tamper_kinds(self) -> list[str]:
        """The kinds of tamper found, in the detector's order."""
        return [finding["kind"] for finding in self.tamper]

    @property
    def biased_count(self) -> int:
        from guard.bias.score import is_biased

        return sum(1 for verdict in self.analyze_step_result.results if is_biased(verdict.result))

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")
