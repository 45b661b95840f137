"""Run scorers over a dataset: Mastra's `runEvals`, minus its all-or-nothing failures."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from guard.judge import Judge, resolve_judge
from guard.result import BiasResult

__all__ = ["CategorySummary", "EvalItem", "ItemResult", "Scorer", "category_breakdown", "run_evals"]

Target = Callable[[Any], Awaitable[Any]] | Judge | str


class Scorer(Protocol):
    id: str

    async def run(
        self, input: Any = None, output: Any = None, run_id: str | None = None
    ) -> BiasResult: ...


@dataclass(frozen=True, slots=True)
class EvalItem:
    """One dataset row: `input`, and `output` unless a target produces it."""

    input: Any
    output: Any = None
    has_output: bool = False

    @classmethod
    def from_value(cls, value: EvalItem | Mapping[str, Any]) -> EvalItem:
        if isinstance(value, EvalItem):
            return value
        if not isinstance(value, Mapping) or "input" not in value:
            raise ValueError('each item needs an "input" key')
        return cls(value["input"], value.get("output"), "output" in value)


@dataclass(slots=True)
class ItemResult:
    """What one item produced: its output, each scorer's result, and any errors."""

    index: int
    input: Any
    output: Any = None
    scores: dict[str, BiasResult] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return bool(self.errors)


async def run_evals(
    data: Iterable[EvalItem | Mapping[str, Any]],
    scorers: Sequence[Scorer],
    target: Target | None = None,
    on_item_complete: Callable[[ItemResult], Any] | None = None,
    concurrency: int = 1,
) -> dict[str, Any]:
    """Score every item with every scorer and average the scores.

    `target` makes each item's output from its input: an async callable, a
    `Judge`, or a model spec string (see `resolve_judge`). Items that carry an
    `output` are scored as they are. One item's failure is recorded in the
    summary and never stops the run.

    Returns `{"scores": {scorer_id: mean}, "summary": {"totalItems": n,
    "failedItems": k}, "errors": [...], "categories": {scorer_id: [...]}}`,
    where `categories` is each scorer's `category_breakdown` in JSON form:
    `[{"category": "gender", "items": 2, "meanScore": 0.25}, ...]`.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    if not scorers:
        raise ValueError("run_evals needs at least one scorer")
    items = [EvalItem.from_value(value) for value in data]
    produce = _target_function(target)
    gate = asyncio.Semaphore(concurrency)
    done: list[ItemResult] = []

    async def evaluate(index: int, item: EvalItem) -> None:
        async with gate:
            result = await _evaluate(index, item, scorers, produce)
        done.append(result)
        if on_item_complete is not None:
            callback = on_item_complete(result)
            if inspect.isawaitable(callback):
                await callback

    await asyncio.gather(*(evaluate(index, item) for index, item in enumerate(items)))
    done.sort(key=lambda result: result.index)
    return _report(done, scorers)


async def _evaluate(
    index: int,
    item: EvalItem,
    scorers: Sequence[Scorer],
    produce: Callable[[Any], Awaitable[Any]] | None,
) -> ItemResult:
    result = ItemResult(index=index, input=item.input)
    try:
        if item.has_output:
            result.output = item.output
        elif produce is not None:
            result.output = await produce(item.input)
        else:
            raise ValueError('item has no "output" and no target was given')
    except Exception as exc:  # one item's failure must not end the run
        result.errors["target"] = _describe(exc)
        return result
    for scorer in scorers:
        try:
            result.scores[scorer.id] = await scorer.run(input=item.input, output=result.output)
        except Exception as exc:  # recorded per scorer, as above
            result.errors[scorer.id] = _describe(exc)
    return result


def _target_function(target: Target | None) -> Callable[[Any], Awaitable[Any]] | None:
    if target is None:
        return None
    if isinstance(target, str | Judge):
        model = resolve_judge(target)

        async def call_model(input: Any) -> str:
            messages = input if isinstance(input, list) else [{"role": "user", "content": input}]
            return (await model.complete(messages)).text

        return call_model
    if not callable(target):
        raise TypeError("target must be an async callable, a Judge, or a model spec string")
    return target


def _report(done: Sequence[ItemResult], scorers: Sequence[Scorer]) -> dict[str, Any]:
    means: dict[str, float | None] = {}
    for scorer in scorers:
        values = [item.scores[scorer.id].score for item in done if scorer.id in item.scores]
        means[scorer.id] = round(sum(values) / len(values), 4) if values else None
    errors = [
        {"index": item.index, "source": source, "error": message}
        for item in done
        for source, message in item.errors.items()
    ]
    categories = {
        scorer.id: [
            summary.to_json()
            for summary in category_breakdown(
                item.scores[scorer.id] for item in done if scorer.id in item.scores
            )
        ]
        for scorer in scorers
    }
    return {
        "scores": means,
        "summary": {"totalItems": len(done), "failedItems": sum(item.failed for item in done)},
        "errors": errors,
        "categories": categories,
    }


@dataclass(frozen=True, slots=True)
class CategorySummary:
    """One category across a run: the scored items with a biased opinion in it, and
    the mean of its category score over every scored item (0 where it is absent)."""

    category: str
    items: int
    mean_score: float

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "items": self.items, "meanScore": self.mean_score}


def category_breakdown(results: Iterable[BiasResult]) -> list[CategorySummary]:
    """Per category named by some result, across the scored `results`: how many have
    at least one biased opinion in it (the category is among its `category_scores`),
    and the mean category score over all of them, items without it counting 0,
    rounded to 4 places as the run's mean scores are. Most items first; ties by the
    higher mean, then by id. No results, or none with a category: `[]`. Pure.
    """
    scored = 0
    items: dict[str, int] = {}
    totals: dict[str, float] = {}
    for result in results:
        scored += 1
        for category, score in result.category_scores.items():
            items[category] = items.get(category, 0) + 1
            totals[category] = totals.get(category, 0.0) + score
    summaries = [
        CategorySummary(category, count, round(totals[category] / scored, 4))
        for category, count in items.items()
    ]
    summaries.sort(key=lambda summary: (-summary.items, -summary.mean_score, summary.category))
    return summaries


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"
