"""The monitor queue: admission, judge slots, dispatch and the drain.

Monitor jobs wait in a bounded queue for one of `concurrency` slots, and each
runs as its own task. The queue keeps one line per API key and serves the lines
in weighted round robin (`gateway.scoring.fairness`, `keys[].weight`), so a key
that floods the gateway takes its share of the judge while others wait, not all
of it; work claimed from the store joins its key's line like any other.

A request may reserve a place before it goes upstream (`reservation`, with
`queue.full_wait`), so that its text, known only once the response has been
sent, always finds room; the queue itself remembers which runs hold a place,
and hands the place on when their job is queued.

Before the queue fills, overload is shed evenly (`gateway.scoring.shedding`).
A full queue skips the response (`overloaded`) unless `queue.full_wait` is set:
then a monitored request waits up to `full_wait` seconds for a place before it
goes upstream, so that under overload responses slow to the judge's pace instead
of going unscored, and the queue, hence the drain, stays bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from gateway.observability.metrics import Metrics
from gateway.scoring.fairness import FairQueue, key_of
from gateway.scoring.request import ScoreRequest

__all__ = ["MonitorQueue"]

Runner = Callable[[ScoreRequest, list[str]], Awaitable[None]]
# A queued job, and whether it brings a reserved place, which the dispatcher gives back.
_Job = tuple[ScoreRequest, list[str], bool]


class MonitorQueue:
    """A bounded queue of monitor jobs, run `concurrency` at a time by `runner`."""

    def __init__(
        self,
        runner: Runner,
        *,
        size: int,
        concurrency: int,
        full_wait: float,
        metrics: Metrics,
        weight: Callable[[str], float] = lambda key: 1.0,
    ) -> None:
        self.runner = runner
        self.full_wait = full_wait
        self.concurrency = concurrency
        self.metrics = metrics
        self.size = size
        self._waiting: FairQueue[_Job] = FairQueue(weight)
        self._queued = asyncio.Event()  # a job joined a line
        self._unfinished = 0  # queued or running
        self._all_done = asyncio.Event()
        self._all_done.set()
        self._room = asyncio.Semaphore(size)  # places, reserved or taken by a queued job
        self._holders: set[str] = set()  # run ids holding a reserved place
        self._slots = asyncio.Semaphore(concurrency)  # monitor scorings in flight
        self._dispatcher: asyncio.Task[None] | None = None
        self._jobs: set[asyncio.Task[None]] = set()
        self._freed = asyncio.Event()  # a job left the queue: room for claimed work
        self.left_pending = 0  # jobs unfinished at shutdown, kept as work

    @property
    def depth(self) -> int:
        return len(self._waiting)

    def waiting(self, key_name: str | None) -> int:
        """Jobs of one API key waiting for a slot."""
        return self._waiting.waiting(key_of(key_name))

    @property
    def in_flight(self) -> int:
        """Monitor scorings running now."""
        return len(self._jobs)

    def start(self) -> None:
        self._dispatcher = asyncio.create_task(self._dispatch(), name="bias-scoring-dispatcher")

    # -- places ------------------------------------------------------------------------

    def room(self) -> int:
        """How many more jobs the queue takes now (0 while every place is reserved)."""
        if self._room.locked():
            return 0
        return self.size - self.depth

    async def wait_for_room(self) -> None:
        while self.room() == 0:
            self._freed.clear()
            await self._freed.wait()

    def holds_place(self, request: ScoreRequest) -> bool:
        return request.run_id in self._holders

    @contextlib.asynccontextmanager
    async def reservation(self, request: ScoreRequest) -> AsyncIterator[bool]:
        """A place for `request`'s job, held while its response is made and sent.

        Yields False when `full_wait` passed without a place. `put` hands the
        place on to the queued job; whatever else happens, it is given back on exit.
        """
        admitted = await self._admit(request)
        try:
            yield admitted
        finally:
            self.release(request)

    async def _admit(self, request: ScoreRequest) -> bool:
        if self._room.locked():
            try:
                await asyncio.wait_for(self._room.acquire(), self.full_wait)
            except TimeoutError:
                return False
        else:
            await self._room.acquire()  # a free place: returns without yielding
        self._holders.add(request.run_id)
        return True

    def release(self, request: ScoreRequest) -> None:
        """Give back the place `request` reserved, if any (idempotent)."""
        if request.run_id in self._holders:
            self._holders.discard(request.run_id)
            self._room.release()

    # -- jobs --------------------------------------------------------------------------

    def put(self, request: ScoreRequest, texts: list[str]) -> bool:
        """Queue a job; False when the queue is full. A reserved place goes with the job."""
        holds = request.run_id in self._holders
        # Never full for a job that holds a place: places and queue have the same size.
        if not holds and self.depth >= self.size:
            return False
        self._enqueue((request, texts, holds))
        self._holders.discard(request.run_id)  # the dispatcher frees the place
        return True

    async def accept(self, request: ScoreRequest, texts: list[str]) -> bool:
        """Queue work claimed from the store. False when the queue has no room after all."""
        if self.room() == 0:
            return False
        await self._room.acquire()  # free (room() checked it), so this does not wait
        self._enqueue((request, texts, True))
        return True

    def _enqueue(self, job: _Job) -> None:
        self._waiting.push(key_of(job[0].key_name), job)
        self._unfinished += 1
        self._all_done.clear()
        self._queued.set()
        self.metrics.queue_depth.set(self.depth)

    async def _next(self) -> _Job:
        while not self._waiting:
            self._queued.clear()
            await self._queued.wait()
        return self._waiting.pop()

    async def _dispatch(self) -> None:
        """Take queued jobs as judge slots free up, in turn by key; each runs as its own task."""
        while True:
            # A slot first, then a job: what waits for a slot waits in the queue, where
            # it counts towards the queue's bound and depth, and the next turn is decided
            # only when a slot is free, among the keys waiting then.
            await self._slots.acquire()
            try:
                request, texts, holds_room = await self._next()
            except asyncio.CancelledError:
                self._slots.release()
                raise
            if holds_room:
                self._room.release()
            self._freed.set()
            self.metrics.queue_depth.set(self.depth)
            task = asyncio.create_task(self._run(request, texts))
            self._jobs.add(task)
            task.add_done_callback(self._jobs.discard)

    async def _run(self, request: ScoreRequest, texts: list[str]) -> None:
        try:
            await self.runner(request, texts)
        finally:
            self._slots.release()
            self._done()

    def _done(self) -> None:
        self._unfinished -= 1
        if self._unfinished == 0:
            self._all_done.set()

    async def join(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for every queued job to finish."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._all_done.wait(), timeout=timeout)

    async def stop(self) -> None:
        """Cancel running jobs and the dispatcher; what is still queued is left pending."""
        # Counted here, not as each is cancelled: a job dispatched but not yet started
        # never runs, so it could not count itself.
        unfinished = [job for job in self._jobs if not job.done()]
        self.left_pending += len(unfinished)  # their work stays in the store
        running = [*unfinished, *([self._dispatcher] if self._dispatcher else [])]
        for job in running:
            job.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        self._dispatcher = None
        for _, _, holds_room in self._waiting.clear():
            self._done()
            if holds_room:
                self._room.release()
            self.left_pending += 1
        self.metrics.queue_depth.set(0)
