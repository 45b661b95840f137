"""Scoring: in the request (enforce) or on a bounded queue (monitor).

A real judge takes about a second a call, so what bounds scoring is judge calls
in flight, not CPU: monitor jobs wait in the queue for one of
`judge.max_concurrency` slots, and each runs as its own task. One process
keeps hundreds of scorings in flight this way; the judge client's limiter
(`guard.limits`) bounds the calls of enforce and monitor together and waits
out 429s for all of them.

Every scored request ends in exactly one final status in the store: `scored`,
`error`, `skipped` or `dropped`. A monitor job is stored as `pending` when it
is accepted, so a client polling its run id sees it, and a crash leaves a
`pending` row that the next start marks `dropped`.

A full queue skips the response (`overloaded`) unless `queue.full_wait` is set.
Then a monitored request reserves room before it goes upstream, waiting up to
`full_wait` seconds for it: under overload responses slow down to the judge's
pace instead of going unscored, and the queue, hence the drain, stays bounded.

Each scoring is traced as an `evaluation bias` span and reported as a
`gen_ai.evaluation.result` event in the chat span's context. In monitor mode
the response has ended by then, so the span is parented to the chat span's
context and linked to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import structlog
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext

from gateway.cache import ScoreCache, cache_key
from gateway.config import Policy
from gateway.metrics import Metrics
from gateway.policy import Verdict, verdict_for
from gateway.store import ScoreRecord, ScoreStore
from gateway.telemetry import Telemetry
from guard import BiasResult, BiasScorer, JudgeError, limits
from guard.outputs import valid_text
from guard.result import JudgeUsage

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
    truncated: bool = False  # the judged text was cut at `judge.max_text_chars`
    request_id: str | None = None
    response_id: str | None = None
    prompt: str | None = None  # set only when content capture is on
    chat_span: SpanContext | None = None
    created_at: float = field(default_factory=time.time)
    holds_room: bool = False  # a place in the queue is reserved for it (`Scoring.admit`)

    def chat_context(self) -> Context | None:
        if self.chat_span is None:
            return None
        return trace.set_span_in_context(NonRecordingSpan(self.chat_span))


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
    cached: bool = False  # the verdicts came from the content-hash cache


class Scoring:
    """Runs the bias scorer for the gateway and records every outcome."""

    def __init__(
        self,
        scorer: BiasScorer,
        store: ScoreStore,
        *,
        telemetry: Telemetry,
        metrics: Metrics,
        queue_size: int,
        concurrency: int,
        capture_content: bool,
        cache: ScoreCache | None = None,
        full_wait: float = 0.0,
        max_text_chars: int | None = None,
        enforce_deadline: float | None = None,
    ) -> None:
        self.scorer = scorer
        self.enforce_deadline = enforce_deadline
        self.max_text_chars = max_text_chars
        self.store = store
        self.telemetry = telemetry
        self.metrics = metrics
        self.capture_content = capture_content
        self.cache = cache
        self._queue: asyncio.Queue[tuple[ScoreRequest, list[str]]] = asyncio.Queue(queue_size)
        # Reserved places; a job returns its place when a worker takes it off the queue.
        self._room = asyncio.Semaphore(queue_size)
        self.full_wait = full_wait
        self.concurrency = concurrency
        self._slots = asyncio.Semaphore(concurrency)  # monitor scorings in flight
        self._dispatcher: asyncio.Task[None] | None = None
        self._jobs: set[asyncio.Task[None]] = set()
        self._background: dict[asyncio.Task[Outcome], ScoreRequest] = {}
        self._overload_log = _Throttle(seconds=1.0)
        self.skipped_overloaded = 0
        self.dropped = 0

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    @property
    def in_flight(self) -> int:
        """Monitor scorings running now."""
        return len(self._jobs)

    def start(self) -> None:
        self._dispatcher = asyncio.create_task(self._dispatch(), name="bias-scoring-dispatcher")

    # -- the two paths -------------------------------------------------------------

    def _judged_texts(self, request: ScoreRequest, texts: list[str]) -> list[str]:
        """The texts as the judge will see them: valid Unicode, at most `max_text_chars`."""
        limit = self.max_text_chars
        if limit is not None and any(len(text) > limit for text in texts):
            request.truncated = True
            texts = [text[:limit] for text in texts]
        return [valid_text(text) for text in texts]

    async def score(self, request: ScoreRequest, texts: list[str]) -> Outcome:
        """Score now, on the request path (enforce mode), within `enforce_deadline`.

        Never raises for judge failures: see `Outcome.status`. A judge that
        cannot answer by the deadline (rate-limited, or every slot taken) gives
        `error` with `JudgeTimeout`, which the policy's `on_judge_error` decides.
        """
        with limits.deadline(self.enforce_deadline):
            return await self._score(request, texts)

    async def _score(self, request: ScoreRequest, texts: list[str]) -> Outcome:
        texts = self._judged_texts(request, texts)
        monitor = request.mode == "monitor" and request.chat_span is not None
        with self.telemetry.tracer.start_as_current_span(
            "evaluation bias",
            context=request.chat_context() if monitor else None,
            links=[Link(request.chat_span)] if monitor and request.chat_span else None,
            attributes={"gen_ai.evaluation.name": "bias", "bias.run_id": request.run_id},
        ) as span:
            outcome = await self._judge(request, texts)
            attributes = self._evaluation_attributes(request, outcome)
            span.set_attributes(attributes)
            if outcome.status == "error":
                span.set_status(trace.Status(trace.StatusCode.ERROR, outcome.status_reason))
        self.telemetry.emit_evaluation(attributes, request.chat_context())
        self._observe(request, outcome)
        self._store(request, outcome, texts)
        log.info(
            "bias score",
            run_id=request.run_id,
            status=outcome.status,
            score=outcome.score,
            verdict=outcome.verdict,
            judge_ms=outcome.judge_ms,
            judge_calls=outcome.result.judge_calls if outcome.result else None,
            cached=outcome.cached,
        )
        return outcome

    async def _judge(self, request: ScoreRequest, texts: list[str]) -> Outcome:
        started = time.perf_counter()
        try:
            runs = await asyncio.gather(*(self._run_one(text, request.run_id) for text in texts))
            results = [result for result, _ in runs]
        except Exception as exc:
            if not isinstance(exc, JudgeError):
                # A bug, not a judge failure; the response is decided like one, never a 500.
                log.exception("scoring failed unexpectedly", run_id=request.run_id)
            outcome = Outcome(
                request.run_id,
                "error",
                status_reason=type(exc).__name__ if isinstance(exc, JudgeError) else "internal",
            )
            outcome.reason = str(exc)
            log.error(
                "bias judge failed; response passed unscored"
                if request.policy.on_judge_error == "allow" or request.mode == "monitor"
                else "bias judge failed; response blocked",
                run_id=request.run_id,
                error_type=outcome.status_reason,
                error=str(exc),
            )
        else:
            worst_index = max(range(len(results)), key=lambda index: results[index].score)
            worst = results[worst_index]
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
                cached=runs[worst_index][1],
            )
        outcome.judge_ms = round((time.perf_counter() - started) * 1000, 3)
        return outcome

    async def _run_one(self, text: str, run_id: str) -> tuple[BiasResult, bool]:
        if self.cache is None:
            return await self.scorer.run(output=text, run_id=run_id), False
        result, cached = await self.cache.get_or_run(
            cache_key(self.scorer, text), lambda: self._run_for_cache(text, run_id)
        )
        self.metrics.cache_lookups.labels("hit" if cached else "miss").inc()
        if not cached:
            return result, False
        # The verdicts are reused; the run is this request's, and it cost no judge call.
        reused = result.model_copy(
            update={"run_id": run_id, "judge_calls": 0, "durations_ms": {}, "usage": JudgeUsage()}
        )
        return reused, True

    async def _run_for_cache(self, text: str, run_id: str) -> BiasResult:
        result = await self.scorer.run(output=text, run_id=run_id)
        if self.capture_content:
            return result
        # The three prompts embed the text and are most of a result's size; without
        # content capture they are never stored, so the cache does not keep them either.
        return result.model_copy(
            update={
                "preprocess_prompt": None,
                "analyze_prompt": None,
                "generate_reason_prompt": None,
            }
        )

    async def admit(self, request: ScoreRequest) -> bool:
        """Reserve a place in the queue for a monitor job, before its request goes upstream.

        Without `full_wait` nothing is reserved (True at once: `submit` finds out).
        With it, wait up to `full_wait` seconds for a place; False when none came,
        and the caller records the response as `overloaded` with `overloaded()`.
        """
        if self.full_wait <= 0:
            return True
        if self._room.locked():
            try:
                await asyncio.wait_for(self._room.acquire(), self.full_wait)
            except TimeoutError:
                return False
        else:
            await self._room.acquire()  # a free place: returns without yielding
        request.holds_room = True
        return True

    def release(self, request: ScoreRequest) -> None:
        """Give back the place `admit` reserved, if any (idempotent)."""
        if request.holds_room:
            request.holds_room = False
            self._room.release()

    def overloaded(self, request: ScoreRequest) -> Outcome:
        """Record a response that found the queue full: `skipped` (overloaded)."""
        self.skipped_overloaded += 1
        suppressed = self._overload_log.ready()
        if suppressed is not None:
            log.warning(
                "scoring queue full; responses not scored",
                run_id=request.run_id,
                also_skipped_since_last_warning=suppressed,
            )
        return self.skip(request, "overloaded")

    def submit(self, request: ScoreRequest, texts: list[str]) -> Outcome:
        """Queue a monitor-mode job; a full queue records `skipped` (overloaded)."""
        texts = self._judged_texts(request, texts)
        try:
            # Never full for a job that holds a place: places and queue have the same size.
            self._queue.put_nowait((request, texts))
        except asyncio.QueueFull:
            return self.overloaded(request)
        self.metrics.queue_depth.set(self._queue.qsize())
        outcome = Outcome(request.run_id, "pending")
        self._store(request, outcome, texts)
        return outcome

    def skip(self, request: ScoreRequest, reason: str) -> Outcome:
        self.release(request)
        outcome = Outcome(request.run_id, "skipped", status_reason=reason)
        self.metrics.skipped.labels(reason).inc()
        self._store(request, outcome, [])
        return outcome

    def mark_pending(self, request: ScoreRequest) -> Outcome:
        """Record a run that will be queued later (a stream still in flight)."""
        outcome = Outcome(request.run_id, "pending")
        self._store(request, outcome, [])
        return outcome

    def spawn(self, request: ScoreRequest, texts: list[str]) -> asyncio.Task[Outcome]:
        """`score()` as a task of its own, which the drain at shutdown waits for.

        For a scoring that must finish even if the request that started it is
        cancelled (its client left): await it through `asyncio.shield`.
        """
        task = asyncio.ensure_future(self.score(request, texts))
        self._background[task] = request
        task.add_done_callback(self._forget)
        return task

    def _forget(self, task: asyncio.Task[Outcome]) -> None:
        self._background.pop(task, None)

    # -- the monitor queue and shutdown ----------------------------------------------

    async def _dispatch(self) -> None:
        """Take queued jobs as judge slots free up; each runs as its own task."""
        while True:
            # A slot first, then a job: what waits for a slot waits in the queue, where
            # it counts towards the queue's bound and depth.
            await self._slots.acquire()
            try:
                request, texts = await self._queue.get()
            except asyncio.CancelledError:
                self._slots.release()
                raise
            self.release(request)
            self.metrics.queue_depth.set(self._queue.qsize())
            task = asyncio.create_task(self._run_job(request, texts))
            self._jobs.add(task)
            task.add_done_callback(self._jobs.discard)

    async def _run_job(self, request: ScoreRequest, texts: list[str]) -> None:
        try:
            await self._score(request, texts)
        except asyncio.CancelledError:
            self._drop(request, "shutdown")
            raise
        except Exception:  # a scorer bug must not stop the others
            log.exception("scoring failed unexpectedly", run_id=request.run_id)
            self._store(request, Outcome(request.run_id, "error", status_reason="internal"), [])
        finally:
            self._slots.release()
            self._queue.task_done()

    async def drain(self, deadline: float) -> None:
        """Finish queued jobs for up to `deadline` seconds; record the rest as dropped."""
        started = time.monotonic()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout=deadline)
        if self._background:
            remaining = max(0.0, deadline - (time.monotonic() - started))
            await asyncio.wait(set(self._background), timeout=remaining)
        for task, request in list(self._background.items()):
            if not task.done():  # a done task stored its own outcome
                task.cancel()
                self._drop(request, "shutdown")
        running = [*self._jobs, *([self._dispatcher] if self._dispatcher else [])]
        for job in running:
            job.cancel()  # a running job records itself dropped
        await asyncio.gather(*running, return_exceptions=True)
        self._dispatcher = None
        while not self._queue.empty():
            request, _ = self._queue.get_nowait()
            self._queue.task_done()
            self._drop(request, "shutdown")
        self.metrics.queue_depth.set(0)
        if self.dropped:
            log.warning("scoring jobs dropped at shutdown", dropped=self.dropped)

    def _drop(self, request: ScoreRequest, reason: str) -> None:
        self.release(request)
        self.dropped += 1
        self.metrics.dropped.labels(reason).inc()
        self._store(request, Outcome(request.run_id, "dropped", status_reason=reason), [])

    # -- telemetry and storage -----------------------------------------------------

    def _evaluation_attributes(self, request: ScoreRequest, outcome: Outcome) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "gen_ai.evaluation.name": "bias",
            "gen_ai.evaluation.score.label": outcome.verdict or outcome.status,
            "bias.scale": self.scorer.scale,
            "bias.run_id": request.run_id,
        }
        if request.response_id:
            attributes["gen_ai.response.id"] = request.response_id
        if outcome.score is not None:
            attributes["gen_ai.evaluation.score.value"] = outcome.score
        if outcome.result is not None:
            attributes["bias.opinions.count"] = len(outcome.result.preprocess_step_result.opinions)
            attributes["bias.biased.count"] = outcome.result.biased_count
        if outcome.status == "error" and outcome.status_reason:
            attributes["error.type"] = outcome.status_reason
        if self.telemetry.capture_content and outcome.status == "scored" and outcome.reason:
            attributes["gen_ai.evaluation.explanation"] = outcome.reason
        return attributes

    def _observe(self, request: ScoreRequest, outcome: Outcome) -> None:
        metrics = self.metrics
        model = metrics.model(request.model)
        if outcome.status == "error":
            metrics.judge_errors.labels(outcome.status_reason or "unknown").inc()
            return
        if outcome.score is None or outcome.result is None:
            return
        metrics.bias_score.labels(model).observe(outcome.score)
        metrics.verdicts.labels(model, outcome.verdict or "none").inc()
        if outcome.cached:
            return  # no judge call was made
        judge_model = self.scorer.judge.model
        for step, milliseconds in outcome.result.durations_ms.items():
            metrics.judge_seconds.labels(step).observe(milliseconds / 1000)
            metrics.operation_seconds.labels("chat", judge_model, "judge").observe(
                milliseconds / 1000
            )
        usage = outcome.result.usage
        metrics.token_usage.labels("input", judge_model, "judge").observe(usage.prompt_tokens)
        metrics.token_usage.labels("output", judge_model, "judge").observe(usage.completion_tokens)

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
                truncated=request.truncated,
                score=outcome.score,
                verdict=outcome.verdict,
                reason=outcome.reason,
                status_reason=outcome.status_reason,
                result=_stored_result(outcome.result, capture, cached=outcome.cached),
                response_id=request.response_id,
                request_id=request.request_id,
                prompt=request.prompt if capture else None,
                completion="\n\n".join(texts) if capture and texts else None,
                updated_at=time.time(),
            )
        )


class _Throttle:
    """Lets an event through at most once per `seconds`; counts the ones held back."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._last = float("-inf")
        self._held = 0

    def ready(self) -> int | None:
        now = time.monotonic()
        if now - self._last < self.seconds:
            self._held += 1
            return None
        held, self._held, self._last = self._held, 0, now
        return held


def _stored_result(
    result: BiasResult | None, capture_content: bool, *, cached: bool
) -> dict[str, object] | None:
    if result is None:
        return None
    data = result.to_json_dict()
    data["cached"] = cached
    if not capture_content:
        # The prompts embed the response text: keep them out unless content capture is on.
        for key in ("preprocessPrompt", "analyzePrompt", "generateReasonPrompt"):
            data.pop(key, None)
    return data
