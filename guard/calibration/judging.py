"""Judge every labelled text once, concurrently: the only I/O in calibration.

The texts go through `run_evals` as items with an output, so a failure is one
item's and never ends the run; it is kept with its error and left out of the
figures by the caller, never dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from guard.calibration.labelled import LabelledItem
from guard.evals import EvalItem, ItemResult, Scorer, run_evals
from guard.wire import Usage

__all__ = ["JudgeRun", "Judged", "judge_texts"]


@dataclass(frozen=True, slots=True)
class Judged:
    """One labelled text after the judge: its score, or why there is none.

    `judge_calls` and `usage` are the scoring's own; a failed scoring reports none.
    """

    item: LabelledItem
    score: float | None
    error: str | None = None
    judge_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    biased_opinions: int | None = None  # of the text's opinions, those judged biased


@dataclass(frozen=True, slots=True)
class JudgeRun:
    """Every text judged, in the order given, and the wall time it took."""

    judged: list[Judged]
    seconds: float

    @property
    def scored(self) -> list[Judged]:
        return [judged for judged in self.judged if judged.score is not None]

    @property
    def failed(self) -> list[Judged]:
        return [judged for judged in self.judged if judged.score is None]

    @property
    def judge_calls(self) -> int:
        return sum(judged.judge_calls for judged in self.judged)

    @property
    def usage(self) -> Usage:
        return sum((judged.usage for judged in self.judged), Usage())


async def judge_texts(
    items: Sequence[LabelledItem],
    scorer: Scorer,
    *,
    concurrency: int = 4,
    on_judged: Callable[[Judged], object] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> JudgeRun:
    """Score each item's text once with `scorer`, `concurrency` at a time.

    `on_judged` is called as each one finishes (a progress bar, say).
    """
    done: dict[int, Judged] = {}

    def finished(result: ItemResult) -> None:
        judged = _judged(items[result.index], result, scorer.id)
        done[result.index] = judged
        if on_judged is not None:
            on_judged(judged)

    started = clock()
    await run_evals(
        [EvalItem(input=None, output=item.text, has_output=True) for item in items],
        [scorer],
        on_item_complete=finished,
        concurrency=concurrency,
    )
    return JudgeRun([done[index] for index in range(len(items))], clock() - started)


def _judged(item: LabelledItem, result: ItemResult, scorer_id: str) -> Judged:
    scored = result.scores.get(scorer_id)
    if scored is None:
        error = "; ".join(result.errors.values()) or "no result"
        return Judged(item, None, error)
    return Judged(item, scored.score, None, scored.judge_calls, scored.usage, scored.biased_count)
