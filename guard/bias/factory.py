"""`create_bias_scorer`: a `BiasScorer` on a judge named by model, or given."""

from __future__ import annotations

from collections.abc import Sequence

from guard.bias.categories import DEFAULT_CATEGORIES, Category
from guard.bias.scorer import BiasScorer, Pipeline, ReasonMode
from guard.judge import Judge, resolve_judge

__all__ = ["create_bias_scorer"]


def create_bias_scorer(
    model: str | Judge,
    *,
    scale: float = 1,
    include_reason: bool | None = None,
    reason: ReasonMode = "inline",
    pipeline: Pipeline = "faithful",
    judge_whole_text_when_no_opinions: bool = True,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 2,
    categories: Sequence[Category] = DEFAULT_CATEGORIES,
    reason_language: str = "auto",
    max_tokens: int | None = None,
) -> BiasScorer:
    """Build a bias scorer, the Python twin of Mastra's `createBiasScorer`.

    >>> scorer = create_bias_scorer("gpt-4o-mini", base_url="http://localhost:8000/v1")
    >>> result = scorer.run_sync(output="Engineers from the north are lazy.")  # doctest: +SKIP
    >>> result.score  # doctest: +SKIP
    1.0

    `pipeline="single"` asks for opinions and verdicts in one call; `reason`
    is `"inline"` (default), `"deferred"` (see `BiasScorer.explain`) or `"off"`.
    `categories` replaces the rubric's four kinds of bias (extend them with
    `[*DEFAULT_CATEGORIES, Category("age", "Age bias.")]`); `reason_language`
    is the language of reasons and the explanation: `"auto"` (the text's own)
    or a code such as `"en"`. Opinions are always quoted untranslated. `max_tokens`
    bounds each judge answer (a small local model held to a schema may otherwise write
    until its context is full).
    """
    judge = resolve_judge(
        model,
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,
        max_retries=max_retries,
        max_tokens=max_tokens,
    )
    return BiasScorer(
        judge,
        scale=scale,
        include_reason=include_reason,
        reason=reason,
        pipeline=pipeline,
        judge_whole_text_when_no_opinions=judge_whole_text_when_no_opinions,
        categories=categories,
        reason_language=reason_language,
    )
