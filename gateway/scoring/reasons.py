"""Deferred explanations: a score goes out at once, its explanation is written after.

Their judge calls go in the last lane (`gateway.scoring.lanes`): an enforced
response, or a monitor verdict, never waits behind one. They are bounded like
the monitor queue: past `room` explanations waiting, a
score's explanation is `skipped` (`reason_backlog`). At shutdown the drain
waits for them, then records the unfinished ones as `dropped`.
"""

from __future__ import annotations

import asyncio

import structlog

from gateway.observability.metrics import Metrics
from gateway.observability.traces import Telemetry
from gateway.scoring.judging import Judging
from gateway.scoring.lanes import explaining
from gateway.scoring.outcome import Outcome
from gateway.scoring.recording import Recorder
from gateway.scoring.request import ScoreRequest

__all__ = ["DeferredReasons", "explain"]

log = structlog.get_logger("gateway.scoring")


async def explain(outcome: Outcome, texts: list[str], judging: Judging, recorder: Recorder) -> None:
    """Explain a scored outcome's worst text with `judging` (the one its score came from,
    even if a reload has replaced it since), in the explanation's lane."""
    text = texts[min(outcome.text_index, len(texts) - 1)]
    with explaining():
        new = await judging.explain(outcome, text)
    if new is not None:
        recorder.observe_cost(new, steps={"generate_reason"})


class DeferredReasons:
    """Explanations under way, each a task that records its score once it is written."""

    def __init__(
        self,
        *,
        room: int,
        recorder: Recorder,
        telemetry: Telemetry,
        metrics: Metrics,
    ) -> None:
        self.room = room
        self.recorder = recorder
        self.telemetry = telemetry
        self.metrics = metrics
        self._tasks: dict[asyncio.Task[None], tuple[ScoreRequest, Outcome, list[str]]] = {}

    @property
    def tasks(self) -> set[asyncio.Task[None]]:
        return set(self._tasks)

    def defer(
        self, request: ScoreRequest, outcome: Outcome, texts: list[str], judging: Judging
    ) -> None:
        """Store the score now (`reason_status: pending`) and explain it in the background."""
        if len(self._tasks) >= self.room:
            outcome.reason_status = "skipped"
            self.metrics.skipped.labels("reason_backlog").inc()
            self.recorder.finish(request, outcome, texts)
            return
        outcome.reason_status = "pending"
        self.recorder.store_outcome(request, outcome, texts)
        task = asyncio.create_task(self._run(request, outcome, texts, judging))
        self._tasks[task] = (request, outcome, texts)
        task.add_done_callback(self._done)

    async def _run(
        self, request: ScoreRequest, outcome: Outcome, texts: list[str], judging: Judging
    ) -> None:
        with (
            explaining(deferred=True),
            self.telemetry.tracer.start_as_current_span(
                "evaluation bias explanation",
                context=request.chat_context(),
                attributes={"gen_ai.evaluation.name": "bias", "bias.run_id": request.run_id},
            ),
        ):
            await explain(outcome, texts, judging, self.recorder)
        self.recorder.finish(request, outcome, texts)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.pop(task, None)
        if not task.cancelled() and task.exception() is not None:
            log.error("deferred explanation failed", exc_info=task.exception())

    def drop_unfinished(self) -> None:
        """Cancel what is still running; each score is recorded with `dropped` reasons."""
        for task, (request, outcome, texts) in list(self._tasks.items()):
            if not task.done():
                task.cancel()
                outcome.reason_status = "dropped"
                self.recorder.finish(request, outcome, texts)
