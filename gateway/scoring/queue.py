"""The monitor queue: admission, judge slots, dispatch and the drain.

Monitor jobs wait in a bounded queue for one of `concurrency` slots, and each
runs as its own task. A request may reserve a place before it goes upstream
(`reservation`, with `queue.full_wait`), so that its text, known only once the
response has been sent, always finds room; the queue itself remembers which
runs hold a place, and hands the place on when their job is queued.

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
from gateway.scoring.request import ScoreRequest

__all__ = ["MonitorQueue"]

Runner = Callable[[ScoreRequest, list[str]], Awaitable[None]]


class MonitorQueue:
    """A bounded queue of monitor jobs, run `concurrency` at a time by `runner`."""

    def __init__(
        self, runner: Runner, *, size: int, concurrency: int, full_wait: float, metrics: Metrics
    ) -> None:
        self.runner = runner
        self.full_wait = full_wait
        self.concurrency = concurrency
        self.metrics = metrics
        # Each job says whether it brings a reserved place, which the dispatcher gives back.
        self._queue: asyncio.Queue[tuple[ScoreRequest, list[str], bool]] = asyncio.Queue(size)
        self._room = asyncio.Semaphore(size)  # places, reserved or taken by a queued job
        self._holders: set[str] = set()  # run ids holding a reserved place
        self._slots = asyncio.Semaphore(concurrency)  # monitor scorings in flight
        self._dispatcher: asyncio.Task[None] | None = None
        self._jobs: set[asyncio.Task[None]] = set()
        self._freed = asyncio.Event()  # a job left the queue: room for claimed work
        self.left_pending = 0  # jobs unfinished at shutdown, kept as work

    @property
    def depth(self) -> int:
        return self._queue.qsize()

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
        return self._queue.maxsize - self._queue.qsize()

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
        try:
            # Never full for a job that holds a place: places and queue have the same size.
            self._queue.put_nowait((request, texts, holds))
        except asyncio.QueueFull:
            return False
        self._holders.discard(request.run_id)  # the dispatcher frees the place
        self.metrics.queue_depth.set(self._queue.qsize())
        return True

    async def accept(self, request: ScoreRequest, texts: list[str]) -> bool:
        """Queue work claimed from the store. False when the queue has no room after all."""
        if self.room() == 0:
            return False
        await self._room.acquire()  # free (room() checked it), so this does not wait
        self._queue.put_nowait((request, texts, True))
        self.metrics.queue_depth.set(self._queue.qsize())
        return True

    async def _dispatch(self) -> None:
        """Take queued jobs as judge slots free up; each runs as its own task."""
        while True:
            # A slot first, then a job: what waits for a slot waits in the queue, where
            # it counts towards the queue's bound and depth.
            await self._slots.acquire()
            try:
                request, texts, holds_room = await self._queue.get()
            except asyncio.CancelledError:
                self._slots.release()
                raise
            if holds_room:
                self._room.release()
            self._freed.set()
            self.metrics.queue_depth.set(self._queue.qsize())
            task = asyncio.create_task(self._run(request, texts))
            self._jobs.add(task)
            task.add_done_callback(self._jobs.discard)

    async def _run(self, request: ScoreRequest, texts: list[str]) -> None:
        try:
            await self.runner(request, texts)
        finally:
            self._slots.release()
            self._queue.task_done()

    async def join(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for every queued job to finish."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout=timeout)

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
        while not self._queue.empty():
            _, _, holds_room = self._queue.get_nowait()
            self._queue.task_done()
            if holds_room:
                self._room.release()
            self.left_pending += 1
        self.metrics.queue_depth.set(0)
