"""Micro-batches: short monitored answers judged several to a call (`judge.batching.size`).

With the `single` pipeline the judge can take several texts in one structured
call (`guard.bias.batch`). A monitor job whose text is short (at most
`judge.batching.max_chars`) joins the open batch and waits for its own verdicts;
the batch goes out when it holds `batch_size` texts or `batch_linger` seconds
after its first joined, whichever comes first, so a quiet gateway adds at most
the linger to a score. Enforced answers never join one: they are judged alone at
once (`gateway.scoring.judging`).

A batch whose call fails, whatever the reason (the judge's error, an answer that
cannot be read or that does not give every text its own verdicts), is judged
again one text at a time, each text's outcome its own.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from gateway.config import JudgeSettings
from gateway.observability.metrics import Metrics
from guard import BiasResult, BiasScorer

__all__ = ["BatchPlan", "Batcher"]

log = structlog.get_logger("gateway.scoring")

_Item = tuple[str, str, "asyncio.Future[BiasResult]"]  # text, run id, its verdicts


@dataclass(frozen=True, slots=True)
class BatchPlan:
    size: int
    linger: float  # seconds
    max_chars: int

    @classmethod
    def of(cls, judge: JudgeSettings) -> BatchPlan | None:
        """The plan `judge` asks for; None when answers are judged one a call."""
        if judge.batching.size <= 1 or judge.pipeline != "single":
            return None
        return cls(judge.batching.size, judge.batching.linger, judge.batching.max_chars)


class Batcher:
    """Gathers texts into batches for `scorer.run_batch` and hands each its result."""

    def __init__(self, scorer: BiasScorer, plan: BatchPlan, *, metrics: Metrics) -> None:
        self.scorer = scorer
        self.plan = plan
        self.metrics = metrics
        self._open: list[_Item] = []
        self._timer: asyncio.TimerHandle | None = None
        self._sending: set[asyncio.Task[None]] = set()

    def fits(self, text: str) -> bool:
        """Whether `text` may join a batch: short, and not empty (which needs no call)."""
        return 0 < len(text) <= self.plan.max_chars and bool(text.strip())

    async def run(self, text: str, run_id: str) -> BiasResult:
        """`text`'s verdicts, judged in a batch. Raises the judge's error for this text."""
        future: asyncio.Future[BiasResult] = asyncio.get_running_loop().create_future()
        self._open.append((text, run_id, future))
        if len(self._open) >= self.plan.size:
            self._send()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.plan.linger, self._send)
        return await future

    async def close(self) -> None:
        """Stop at shutdown: the open batch and the batches at the judge are given up
        (their jobs were stopped first and left their work pending in the store)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for _, _, future in self._open:
            future.cancel()
        self._open = []
        for task in self._sending:
            task.cancel()
        await asyncio.gather(*self._sending, return_exceptions=True)

    def _send(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        items, self._open = self._open, []
        # A job cancelled while it waited (a stop) has no use for its verdicts.
        items = [item for item in items if not item[2].done()]
        if not items:
            return
        task = asyncio.create_task(self._judge(items), name="bias-judge-batch")
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _judge(self, items: list[_Item]) -> None:
        try:
            if len(items) == 1:
                await self._alone(items[0])
                return
            try:
                results = await self.scorer.run_batch(
                    [text for text, _, _ in items], [run_id for _, run_id, _ in items]
                )
            except Exception as exc:
                self.metrics.judge_batches.labels("retried_alone").inc()
                log.warning(
                    "judge batch failed; judging its answers one by one",
                    size=len(items),
                    error_type=type(exc).__name__,
                )
                await asyncio.gather(*(self._alone(item) for item in items))
                return
            self.metrics.judge_batches.labels("ok").inc()
            for (_, _, future), result in zip(items, results, strict=True):
                if not future.done():
                    future.set_result(result)
        finally:
            for _, _, future in items:  # cancelled (a stop): nobody is left waiting
                if not future.done():
                    future.cancel()

    async def _alone(self, item: _Item) -> None:
        text, run_id, future = item
        try:
            result = await self.scorer.run(output=text, run_id=run_id)
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
            return
        if not future.done():
            future.set_result(result)
