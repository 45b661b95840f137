"""Scoring: in the request (enforce) or on a bounded queue (monitor), the service both
call. The monitor queue (admission, places, judge slots, the drain) is
`gateway.scoring.queue`; explanations written after the score are
`gateway.scoring.reasons`; what an outcome leaves behind is
`gateway.scoring.recording`. The judge client's limiter (`guard.limits`) bounds
the calls of enforce and monitor together and waits out 429s for all of them.

Every scored request ends in exactly one final status in the store: `scored`,
`error`, `skipped` or `dropped`. A monitor job is stored as `pending` when it
is accepted, with the work a scorer needs and a lease held by this process
(`gateway.work.payload`), so a client polling its run id sees it, and a crash or
a stop past the drain deadline leaves work that is scored later instead of lost.
With `queue.scorer: external` the job is only stored, unleased, for
`bias-gateway scorer` processes; work they or a dead process left comes into
this queue through `take` (`gateway.work.claims`).

Each scoring is an `evaluation bias` span with a `gen_ai.evaluation.result` event,
in the chat span's context (in monitor mode, where the response has ended, linked to it):
`gateway.scoring.evaluation`, one path for whole answers and answers judged in windows.
An enforced response's judge calls, whole or window by window, go in enforce's lane
(`gateway.scoring.lanes.awaited`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Awaitable, Sequence

import structlog

from gateway.config import Settings
from gateway.domain import ReasonMode, SkipReason
from gateway.observability.metrics import Metrics
from gateway.observability.traces import Telemetry
from gateway.scoring.batching import BatchPlan
from gateway.scoring.cache import ScoreCache
from gateway.scoring.evaluation import Evaluations, Manner
from gateway.scoring.fairness import key_of
from gateway.scoring.judging import Judging
from gateway.scoring.lanes import awaited, monitoring, observe_limiter, rechecking
from gateway.scoring.outcome import Outcome
from gateway.scoring.queue import MonitorQueue
from gateway.scoring.reasons import DeferredReasons
from gateway.scoring.recording import Recorder
from gateway.scoring.request import ScoreRequest, as_judged, job_from, stored_job, work_for
from gateway.scoring.shedding import LogThrottle, Shedder
from gateway.scoring.windows import WindowPart
from gateway.store import ScoreRecord, Store
from gateway.work.claims import give_back
from gateway.work.payload import WorkError, worker_id
from guard import BiasResult, BiasScorer

__all__ = ["Outcome", "ScoreRequest", "Scoring"]

log = structlog.get_logger("gateway.scoring")


class Scoring:
    """Runs the bias scorer for the gateway and records every outcome."""

    def __init__(
        self,
        scorer: BiasScorer,
        store: Store,
        settings: Settings,
        *,
        telemetry: Telemetry,
        metrics: Metrics,
        cache: ScoreCache | None = None,
        scorer_process: bool = False,
        worker: str | None = None,
    ) -> None:
        """As `settings` say. A scorer process (`scorer_process`) queues only what its
        judge slots take, waits for no place, and scores whatever it holds, whatever
        `queue.scorer` says; a gateway with `queue.scorer: external` scores only in
        enforce mode and stores monitor work for the scorers."""
        judge, queue = settings.judge, settings.queue
        concurrency = judge.limits.concurrency_bound
        queue_size = concurrency if scorer_process else queue.size
        capture_content = settings.store.capture_content
        # Monitor jobs are stored for scorer processes only.
        self.external = not scorer_process and queue.scorer == "external"
        self.lease_seconds = queue.lease_seconds
        self.worker = worker or worker_id()
        self.telemetry = telemetry
        self.metrics = metrics
        self.judging = Judging(
            scorer,
            cache=cache,
            capture_content=capture_content is True,
            metrics=metrics,
            batch=BatchPlan.of(judge),
        )
        self.recorder = Recorder(
            store,
            telemetry=telemetry,
            metrics=metrics,
            capture_content=capture_content,
            scale=scorer.scale,
            review=settings.review,
        )
        self.reconfigure(scorer, settings)
        self.reasons = DeferredReasons(
            room=queue_size, recorder=self.recorder, telemetry=telemetry, metrics=metrics
        )
        self.evaluations = Evaluations(self.recorder, self.reasons, telemetry)
        self.queue = MonitorQueue(
            self._run_job,
            size=queue_size,
            concurrency=concurrency,
            full_wait=0.0 if scorer_process else queue.full_wait,
            metrics=metrics,
            weight=self.weight,
        )
        self.shedder = Shedder(target_wait=queue.target_wait, size=queue_size, weight=self.weight)
        self._background: dict[asyncio.Task[Outcome], ScoreRequest] = {}
        self._overload_log = LogThrottle(seconds=1.0)
        self.skipped_overloaded = 0
        self.dropped = 0

    def reconfigure(self, scorer: BiasScorer, settings: Settings) -> None:
        """Judge new work with `scorer`, as `settings.judge` says (a reloaded config).

        A scoring under way finishes with the judging it started with, its explanation
        too; the queue, its places and the cache stay (they need a restart to change).
        """
        judge = settings.judge
        self.scorer = scorer
        self.settings = settings  # its policies, for work claimed from the store
        self.enforce_deadline = judge.enforce_deadline
        self.max_text_chars = judge.max_text_chars
        self.reason: ReasonMode = judge.explanations.mode
        self.reason_for = judge.explanations.scope
        # `Settings.key_weight` per key, kept: the queue reads each waiting key's per pop.
        self.weights = {key.name: settings.key_weight(key.name) for key in settings.keys}
        if scorer is not self.judging.scorer:
            self.judging = self.judging.with_scorer(scorer, batch=BatchPlan.of(judge))
        self.recorder.scale = scorer.scale
        self.recorder.review = settings.review

    def weight(self, key: str) -> float:
        """An API key's weight in the monitor queue's round robin (`keys[].weight`)."""
        return self.weights.get(key, 1.0)

    @property
    def queue_depth(self) -> int:
        return self.queue.depth

    @property
    def in_flight(self) -> int:
        """Monitor scorings running now."""
        return self.queue.in_flight

    @property
    def left_pending(self) -> int:
        """Monitor jobs unfinished at shutdown, kept as work."""
        return self.queue.left_pending

    def update_gauges(self) -> None:
        """Set the gauges a scrape reads: queue depth, scorings and judge calls in flight,
        records the store holds."""
        self.metrics.queue_depth.set(self.queue_depth)
        self.metrics.scorings_in_flight.set(self.in_flight)
        backlog = self.recorder.store.backlog()
        self.metrics.store_buffered.set(backlog.held)
        self.metrics.store_buffer_limit.set(backlog.limit)
        observe_limiter(self.scorer.judge, self.metrics)
        for key, rate in self.shedder.rates().items():
            self.metrics.overload_rate.labels(key or "-").set(rate)

    def room(self) -> int:
        return self.queue.room()

    async def wait_for_room(self) -> None:
        await self.queue.wait_for_room()

    def start(self) -> None:
        self.queue.start()

    # -- the two paths -------------------------------------------------------------

    async def score(self, request: ScoreRequest, texts: list[str]) -> Outcome:
        """Score now, on the request path (enforce mode: the judge's first lane), within
        `enforce_deadline`. Never raises for judge failures: see `Outcome.status`. A judge
        that cannot answer by the deadline (rate-limited, or every slot taken) gives
        `error` with `JudgeTimeout`, which the policy's `on_judge_error` decides."""
        with self._awaited(request):
            return await self._score(request, texts, in_request=True)

    async def _score(
        self, request: ScoreRequest, texts: list[str], *, in_request: bool = False
    ) -> Outcome:
        """Judge, explain, record (`Evaluations.evaluate`)."""
        request, texts = as_judged(request, texts, self.max_text_chars)
        manner = self.manner()  # as it is now, should a reload come
        verdicts = manner.judging.verdicts(request, texts)
        return await self.evaluations.evaluate(
            request, texts, verdicts, manner, in_request=in_request
        )

    async def rejudge(self, request: ScoreRequest, text: str) -> Outcome:
        """`text` judged again by the judge in force, for the canary (`gateway.server.canary`):
        its verdicts under `request.policy`, in the explanation lane, past the cache (a
        changed endpoint keeps the cache's keys), and recorded nowhere."""
        request, texts = as_judged(request, [text], self.max_text_chars)
        judging = self.judging.with_scorer(self.scorer, batch=None, cache=False)
        with rechecking(request, self.settings):
            return await judging.verdicts(request, texts)

    # -- an answer judged in windows (`gateway.scoring.window_judge`) -----------------

    async def judge_window(
        self, request: ScoreRequest, parts: Sequence[WindowPart], judging: Judging
    ) -> list[BiasResult]:
        """One result per part of a window of an enforced answer, judged as `score` judges
        a whole one: in enforce's lane, with the key's weight, within `enforce_deadline`.
        Raises `JudgeError` (or a bug's exception)."""
        with self._awaited(request):
            return await judging.window(request.run_id, parts)

    async def conclude(
        self, request: ScoreRequest, texts: list[str], verdicts: Awaitable[Outcome], manner: Manner
    ) -> Outcome:
        """Explain and record an enforced answer judged in windows, whose `verdicts` merge
        its windows' (their `judge_ms` also counts this explanation's time)."""
        with self._awaited(request):
            return await self.evaluations.evaluate(
                request, texts, verdicts, manner, in_request=True, explanation_in_judge_ms=True
            )

    def manner(self) -> Manner:
        """How an answer starting now is judged and explained."""
        return Manner(self.judging, self.reason, self.reason_for)

    def _awaited(self, request: ScoreRequest) -> contextlib.AbstractContextManager[None]:
        return awaited(request, self.settings, self.enforce_deadline)

    @contextlib.asynccontextmanager
    async def reservation(self, request: ScoreRequest) -> AsyncIterator[bool]:
        """A place in the queue for a monitor job, held while its response is made and sent.

        Yields False when `queue.full_wait` passed without a place (the caller
        records the response with `overloaded()`). Without `full_wait`, or for
        a request that will not be queued, nothing is reserved and it yields
        True (`submit` finds out).
        """
        if not self.reserves(request):
            yield True
            return
        async with self.queue.reservation(request) as admitted:
            yield admitted

    def reserves(self, request: ScoreRequest) -> bool:
        """Whether `reservation` holds a place for `request`: a sampled monitor job,
        with `queue.full_wait` set (without it, `submit` finds out)."""
        return (
            self.queue.full_wait > 0
            and not self.external
            and request.mode == "monitor"
            and bool(request.run_id)
        )

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
        """Queue a monitor-mode job, stored as pending work, unless overload sheds it
        (`overload_sampled`) or the queue is full (`overloaded`). With an external
        scorer the store is the queue: never full, nothing shed."""
        request, texts = as_judged(request, texts, self.max_text_chars)
        outcome = Outcome(request.run_id, "pending")
        work = work_for(request, texts)
        if self.external:
            self.recorder.store_outcome(request, outcome, texts, work=work)
            return outcome
        key = key_of(request.key_name)
        take, rate = self.shedder.admit(key, self.queue.depth)
        if rate < 1:
            request = dataclasses.replace(request, sample_rate=round(rate, 4))
        decision = "scored" if take else "overload_sampled"
        self.metrics.overload_decisions.labels(key or "-", decision).inc()
        if not take:
            return self.skip(request, "overload_sampled")
        if not self.queue.put(request, texts):
            return self.overloaded(request)
        self.recorder.store_outcome(
            request, outcome, texts, work=work, lease=self._lease(), attempts=1
        )
        return outcome

    async def take(self, record: ScoreRecord) -> bool:
        """Queue a record's claimed work (`gateway.work.claims.WorkTaker`); work that
        cannot be read ends `error` (`unreadable_work`) at once."""
        try:
            request, texts = job_from(record, self.settings)
        except WorkError as exc:
            log.error("scoring work cannot be read; recorded as error", error=str(exc))
            outcome = Outcome(record.run_id, "error", status_reason="unreadable_work")
            self.recorder.store_outcome(stored_job(record, self.settings), outcome, [])
            return True
        return await self.accept(request, texts)

    async def accept(self, request: ScoreRequest, texts: list[str]) -> bool:
        """Queue work claimed from the store (its lease already taken). False when the
        queue has no room after all: the claim then lapses and the work comes back."""
        return await self.queue.accept(request, texts)

    def _lease(self) -> tuple[str, float]:
        return self.worker, time.time() + self.lease_seconds

    def skip(self, request: ScoreRequest, reason: SkipReason) -> Outcome:
        self.queue.release(request)
        outcome = Outcome(request.run_id, "skipped", status_reason=reason)
        self.metrics.skipped.labels(reason).inc()
        self.recorder.store_outcome(request, outcome, [])
        return outcome

    def mark_pending(self, request: ScoreRequest) -> Outcome:
        """Record a run that will be queued later (a stream still in flight). The lease
        marks it this process's: should the process die first, it lapses and the run
        ends `dropped` (`gateway_lost`), there being no text to score."""
        outcome = Outcome(request.run_id, "pending")
        self.recorder.store_outcome(request, outcome, [], lease=self._lease())
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

    async def _run_job(self, request: ScoreRequest, texts: list[str]) -> None:
        """One queued monitor job (`MonitorQueue`'s runner)."""
        try:
            with monitoring(request, self.settings):
                await self._score(request, texts)
        except asyncio.CancelledError:
            raise
        except Exception:  # a scorer bug must not stop the others
            log.exception("scoring failed unexpectedly", run_id=request.run_id)
            error = Outcome(request.run_id, "error", status_reason="internal")
            self.recorder.store_outcome(request, error, [])
        self.shedder.done()  # not when cancelled: a stop is no measure of the judge's pace

    async def drain(self, deadline: float) -> None:
        """Finish queued jobs for up to `deadline` seconds. Monitor work still unfinished
        stays pending in the store, its leases given back; enforce scorings and
        deferred explanations still running are recorded as dropped."""
        started = time.monotonic()
        await self.queue.join(deadline)
        for waiting in (set(self._background), self.reasons.tasks):
            if waiting:
                remaining = max(0.0, deadline - (time.monotonic() - started))
                await asyncio.wait(waiting, timeout=remaining)
        self.reasons.drop_unfinished()
        for task, request in list(self._background.items()):
            if not task.done():  # a done task stored its own outcome
                task.cancel()
                self._drop(request, "shutdown")
        await self.queue.stop()
        await self.judging.close()
        await give_back(self.recorder.store, self.worker, left_pending=self.left_pending)
        if self.dropped:
            log.warning("scoring jobs dropped at shutdown", dropped=self.dropped)

    def _drop(self, request: ScoreRequest, reason: str) -> None:
        self.queue.release(request)
        self.dropped += 1
        self.metrics.dropped.labels(reason).inc()
        dropped = Outcome(request.run_id, "dropped", status_reason=reason)
        self.recorder.store_outcome(request, dropped, [])
