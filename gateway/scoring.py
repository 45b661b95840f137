"""Scoring: in the request (enforce) or on a bounded queue with workers (monitor).

Every scored request ends in exactly one final status in the store: `scored`,
`error`, `skipped` or `dropped`. A monitor job is stored as `pending` when it
is accepted, so a client polling its run id sees it, and a crash leaves a
`pending` row that the next start marks `dropped`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Literal

import structlog

from gateway.config import Policy
from gateway.policy import Verdict, verdict_for
from gateway.store import ScoreRecord, ScoreStore
from guard import BiasResult, BiasScorer, JudgeError

__all__ = ["Outcome", "ScoreRequest", "Scoring"]

log = structlog.get_logger("gateway.scoring")

OutcomeStatus = Literal["pending", "scored", "error", "skipped", "dropped"]


@dataclass(slots=True)
class ScoreRequest:
    """What is known about the request whose response is being scored."""

    run_id: str
    policy: Policy
    mode: str
    model: str | None = None
    key_name: str | None = None
    stream: bool = False
    partial: bool = False
    request_id: str | None = None
    response_id: str | None = None
    prompt: str | None = None  # set only when content capture is on
    created_at: float = field(default_factory=time.time)


@dataclass(slots=True)
class Outcome:
    run_id: str
    status: OutcomeStatus
    score: float | None = None
    verdict: Verdict | None = None
    reason: str | None = None
    status_reason: str | None = None  # skip reason, or the judge error's type
    result: BiasResult | None = None
    judge_ms: float | None = None


class Scoring:
    """Runs the bias scorer for the gateway and records every outcome."""

    def __init__(
        self,
        scorer: BiasScorer,
        store: ScoreStore,
        *,
        queue_size: int,
        workers: int,
        capture_content: bool,
    ) -> None:
        self.scorer = scorer
        self.store = store
        self.capture_content = capture_content
        self._queue: asyncio.Queue[tuple[ScoreRequest, list[str]]] = asyncio.Queue(queue_size)
        self._worker_count = workers
        self._workers: list[asyncio.Task[None]] = []
        self.skipped_overloaded = 0
        self.dropped = 0

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    def start(self) -> None:
        self._workers = [
            asyncio.create_task(self._work(), name=f"bias-scorer-{index}")
            for index in range(self._worker_count)
        ]

    # -- the two paths -------------------------------------------------------------

    async def score(self, request: ScoreRequest, texts: list[str]) -> Outcome:
        """Score now (enforce mode). Never raises for judge failures: see `Outcome.status`."""
        started = time.perf_counter()
        try:
            results = await asyncio.gather(
                *(self.scorer.run(output=text, run_id=request.run_id) for text in texts)
            )
        except JudgeError as exc:
            outcome = Outcome(request.run_id, "error", status_reason=type(exc).__name__)
            outcome.reason = str(exc)
            log.error(
                "bias judge failed",
                run_id=request.run_id,
                error_type=outcome.status_reason,
                error=str(exc),
            )
        else:
            worst = max(results, key=lambda result: result.score)
            outcome = Outcome(
                request.run_id,
                "scored",
                score=worst.score,
                verdict=verdict_for(
                    worst.score,
                    flag_threshold=request.policy.flag_threshold,
                    block_threshold=request.policy.block_threshold,
                ),
                reason=worst.reason,
                result=worst,
            )
        outcome.judge_ms = round((time.perf_counter() - started) * 1000, 3)
        self._store(request, outcome, texts)
        log.info(
            "bias score",
            run_id=request.run_id,
            status=outcome.status,
            score=outcome.score,
            verdict=outcome.verdict,
            judge_ms=outcome.judge_ms,
            judge_calls=outcome.result.judge_calls if outcome.result else None,
        )
        return outcome

    def submit(self, request: ScoreRequest, texts: list[str]) -> Outcome:
        """Queue a monitor-mode job; a full queue records `skipped` (overloaded)."""
        try:
            self._queue.put_nowait((request, texts))
        except asyncio.QueueFull:
            self.skipped_overloaded += 1
            log.warning("scoring queue full; response not scored", run_id=request.run_id)
            return self.skip(request, "overloaded")
        outcome = Outcome(request.run_id, "pending")
        self._store(request, outcome, texts)
        return outcome

    def skip(self, request: ScoreRequest, reason: str) -> Outcome:
        outcome = Outcome(request.run_id, "skipped", status_reason=reason)
        self._store(request, outcome, [])
        return outcome

    def mark_pending(self, request: ScoreRequest) -> Outcome:
        """Record a run that will be queued later (a stream still in flight)."""
        outcome = Outcome(request.run_id, "pending")
        self._store(request, outcome, [])
        return outcome

    # -- workers and shutdown ------------------------------------------------------

    async def _work(self) -> None:
        while True:
            request, texts = await self._queue.get()
            try:
                await self.score(request, texts)
            except asyncio.CancelledError:
                self._drop(request, "shutdown")
                raise
            except Exception:  # a scorer bug must not kill the worker
                log.exception("scoring failed unexpectedly", run_id=request.run_id)
                self._store(request, Outcome(request.run_id, "error", status_reason="internal"), [])
            finally:
                self._queue.task_done()

    async def drain(self, deadline: float) -> None:
        """Finish queued jobs for up to `deadline` seconds; record the rest as dropped."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout=deadline)
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        while not self._queue.empty():
            request, _ = self._queue.get_nowait()
            self._queue.task_done()
            self._drop(request, "shutdown")
        if self.dropped:
            log.warning("scoring jobs dropped at shutdown", dropped=self.dropped)

    def _drop(self, request: ScoreRequest, reason: str) -> None:
        self.dropped += 1
        self._store(request, Outcome(request.run_id, "dropped", status_reason=reason), [])

    def _store(self, request: ScoreRequest, outcome: Outcome, texts: list[str]) -> None:
        capture = self.capture_content
        self.store.submit(
            ScoreRecord(
                run_id=request.run_id,
                status=outcome.status,
                created_at=request.created_at,
                model=request.model,
                key_name=request.key_name,
                mode=request.mode,
                stream=request.stream,
                partial=request.partial,
                score=outcome.score,
                verdict=outcome.verdict,
                reason=outcome.reason,
                status_reason=outcome.status_reason,
                result=_stored_result(outcome.result, capture),
                response_id=request.response_id,
                request_id=request.request_id,
                prompt=request.prompt if capture else None,
                completion="\n\n".join(texts) if capture and texts else None,
                updated_at=time.time(),
            )
        )


def _stored_result(result: BiasResult | None, capture_content: bool) -> dict[str, object] | None:
    if result is None:
        return None
    data = result.to_json_dict()
    if not capture_content:
        # The prompts embed the response text: keep them out unless content capture is on.
        for key in ("preprocessPrompt", "analyzePrompt", "generateReasonPrompt"):
            data.pop(key, None)
    return data
