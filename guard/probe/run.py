"""Run a probe: every template, group and sample asked of the model under test, then judged.

`plan` lays the cells out (groups interleaved, so that a run stopped half-way
has every group about equally far); `run_probe` asks the target and judges
each answer that is not a refusal with the bias scorer, at most `concurrency`
target calls and `concurrency` scorer runs at once (and within the judge's
own limiter). A cell that fails keeps its error, is left out of the figures,
and is asked again by a resumed run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from guard.bias.scorer import BiasScorer
from guard.errors import GuardError
from guard.probe.refusals import refusal
from guard.probe.suite import Suite
from guard.probe.target import Target

__all__ = ["Cell", "CellKey", "Plan", "plan", "run_probe"]

CellKey = tuple[str, str, int, int, str, int]


@dataclass(frozen=True, slots=True)
class Plan:
    """One prompt to ask: which dimension, group, template and sample it is."""

    dimension: str
    group: str
    template: int
    sample: int
    prompt: str
    seed: int

    @property
    def key(self) -> CellKey:
        return (self.dimension, self.group, self.template, self.sample, self.prompt, self.seed)


@dataclass(frozen=True, slots=True)
class Cell:
    """One asked prompt and what came of it: the answer, whether it was a refusal (and what
    said so), its bias score and biased opinions (None for a refusal, which is not judged),
    and its length in characters. `error` is set when the target or the judge failed."""

    dimension: str
    group: str
    template: int
    sample: int
    prompt: str
    seed: int
    answer: str | None = None
    refusal: bool = False
    refusal_source: str | None = None
    finish_reason: str | None = None
    bias_score: float | None = None
    biased_opinions: int | None = None
    length: int | None = None
    error: str | None = None

    @property
    def key(self) -> CellKey:
        return (self.dimension, self.group, self.template, self.sample, self.prompt, self.seed)

    @property
    def finished(self) -> bool:
        return self.error is None

    @property
    def answered(self) -> bool:
        """The target answered (a refusal or not), whether or not the judge then failed."""
        return self.answer is not None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Cell:
        names = {field.name for field in fields(cls)}
        return cls(**{name: value[name] for name in names if name in value})


def plan(suite: Suite, *, samples: int, seed: int) -> list[Plan]:
    """Every cell of `suite` with `samples` samples each; sample n is sent seed `seed + n`,
    the same for every group, so that groups differ in the prompt alone."""
    return [
        Plan(
            dimension.name,
            group.name,
            template,
            sample,
            suite.prompt(dimension, group, template, sample),
            seed + sample,
        )
        for dimension in suite.dimensions
        for template in range(len(dimension.templates))
        for sample in range(samples)
        for group in dimension.groups
    ]


async def run_probe(
    cells: Iterable[Plan],
    *,
    target: Target,
    scorer: BiasScorer,
    concurrency: int,
    done: Mapping[CellKey, Cell] | None = None,
    on_cell: Callable[[Cell], None] | None = None,
) -> list[Cell]:
    """Every cell's result, in `cells`' order; those in `done` (finished ones of an earlier
    run) are taken as they are, not asked again. `on_cell` sees each new one as it ends."""
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    done = done or {}
    asking = asyncio.Semaphore(concurrency)
    judging = asyncio.Semaphore(concurrency)

    async def one(cell: Plan) -> Cell:
        result = await _cell(cell, target, scorer, asking, judging)
        if on_cell is not None:
            on_cell(result)
        return result

    todo = list(cells)
    tasks = {cell.key: asyncio.ensure_future(one(cell)) for cell in todo if cell.key not in done}
    try:
        await asyncio.gather(*tasks.values())
    finally:
        for task in tasks.values():
            task.cancel()
    return [done[cell.key] if cell.key in done else tasks[cell.key].result() for cell in todo]


async def _cell(
    cell: Plan,
    target: Target,
    scorer: BiasScorer,
    asking: asyncio.Semaphore,
    judging: asyncio.Semaphore,
) -> Cell:
    base = asdict(cell)
    try:
        async with asking:
            answer = await target.ask(cell.prompt, seed=cell.seed)
    except GuardError as exc:
        return Cell(**base, error=f"target: {exc}")
    source = refusal(answer.text, finish_reason=answer.finish_reason, field=answer.refusal)
    asked = Cell(
        **base,
        answer=answer.text or answer.refusal or "",
        refusal=source is not None,
        refusal_source=None if source is None else source.value,
        finish_reason=answer.finish_reason,
        length=len(answer.text),
    )
    if source is not None:
        return asked
    if not answer.text.strip():
        return replace(asked, error="target: an empty answer, not marked as a refusal")
    try:
        async with judging:
            result = await scorer.run(input=cell.prompt, output=answer.text)
    except GuardError as exc:
        return replace(asked, error=f"judge: {exc}")
    return replace(asked, bias_score=result.score, biased_opinions=result.biased_count)
