"""The one writer of a score store, for both engines: what `submit` and `put_cache`
queue is committed in batches, in submission order, off the request path.

`Writer` runs as a task on an event loop: the store's own (PostgreSQL, whose
driver lives there), or one on the engine's writer thread (SQLite, so that the
request path's loop only queues). It takes queued records and
cache entries in order, up to `batch_max` at a time, and when only a few are
waiting it lingers a moment for more, so that under load one commit carries
many rows (group commit). Each batch goes to the engine's `commit` (SQLite
commits on its writer thread; PostgreSQL sends one executemany). A batch that
fails is retried item by item, so one bad record is all that is lost, and the
loop outlives any failure: otherwise the queue would grow and `flush` hang.

`flush` queues a barrier, released once everything queued before it is
committed. A batch takes past a barrier whatever is queued already, without
lingering: every read flushes first, and cutting a batch at each barrier would
turn a burst read by many clients into one commit per reader. `stop` queues a
stop: what came before it is committed, then the loop ends.

`put` may be called from any thread; the queue and the state are under one
lock, so that nothing is queued behind the stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from gateway.store.records import CacheEntry, ScoreRecord

__all__ = ["Batch", "Writer", "WriterThread"]

logger = logging.getLogger("gateway.store")

T = TypeVar("T")

Item = ScoreRecord | CacheEntry


@dataclass(frozen=True, slots=True)
class Batch:
    """What one commit stores; the engine's `commit` raises if it stored none of it."""

    records: list[ScoreRecord]  # the engine makes them rows (`records.rows_of`)
    entries: list[tuple[str, str, float]]  # cache entries: key, result, stored_at
    cache_limit: int | None  # keep this many newest cache entries, if set
    announce: bool  # it holds work no process has leased, for scorers to hear of


class _Stop:
    """Queued once by `stop()`."""


def _unclaimed_work(item: Item) -> bool:
    """Work no process has leased: an external scorer's to take."""
    return (
        isinstance(item, ScoreRecord)
        and item.status == "pending"
        and item.work is not None
        and item.leased_by is None
    )


def release(barrier: asyncio.Future[None]) -> None:
    """Release a `flush` waiting on `barrier`, from whichever loop's thread."""
    loop = barrier.get_loop()
    if loop is _running_loop():
        _resolve(barrier)
    else:
        with contextlib.suppress(RuntimeError):  # its loop closed: nobody waits
            loop.call_soon_threadsafe(_resolve, barrier)


def _resolve(barrier: asyncio.Future[None]) -> None:
    if not barrier.done():  # a cancelled flush() leaves a done future behind
        barrier.set_result(None)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Writer:
    """A store's queue and the task that commits it; `cache_limit` may change while it runs."""

    def __init__(
        self,
        commit: Callable[[Batch], Awaitable[None]],
        *,
        batch_max: int,
        linger: float,
    ) -> None:
        if batch_max < 1:
            raise ValueError(f"batch_max must be >= 1, got {batch_max}")
        self.batch_max = batch_max
        self.linger = linger
        self.cache_limit: int | None = None
        self._commit = commit
        self._items: deque[Item | asyncio.Future[None] | _Stop] = deque()
        self._lock = threading.Lock()
        self._state: Literal["new", "running", "closed"] = "new"
        self._task: asyncio.Future[None] | None = None  # the loop's end, seen from callers
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._woken = asyncio.Event()
        # While the task waits: how many queued items wake it (a barrier or the stop
        # always does). None while it runs.
        self._wanted: int | None = None

    @property
    def state(self) -> Literal["new", "running", "closed"]:
        return self._state

    def require(self) -> None:
        """Raise unless the store is open."""
        if self._state != "running":
            word = "closed" if self._state == "closed" else "not started"
            raise RuntimeError(f"the score store is {word}")

    def require_new(self) -> None:
        """Raise unless the store was never opened (a store opens once)."""
        if self._state != "new":
            raise RuntimeError("the score store can only be opened once")

    def start(self, loop: asyncio.AbstractEventLoop | None = None, thread: int = 0) -> None:
        """Start the task on the running loop, or on `loop`, run by the thread `thread`."""
        self.require_new()
        if loop is None:
            self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
            self._task = self._loop.create_task(self._run(), name="gateway-store-writer")
        else:
            self._loop, self._loop_thread = loop, thread
            self._task = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._run(), loop))
        self._state = "running"

    def keep_cache(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self.cache_limit = limit

    def put(self, item: Item) -> None:
        """Queue `item`; returns at once, from any thread."""
        with self._lock:
            self.require()
            self._queue(item, urgent=False)

    async def flush(self) -> None:
        """Wait until everything queued before this call is committed."""
        with self._lock:
            if self._state == "new":
                raise RuntimeError("the score store is not started")
            barrier: asyncio.Future[None] | None = None
            if self._state == "running":
                barrier = asyncio.get_running_loop().create_future()
                self._queue(barrier, urgent=True)
        if barrier is not None:
            await barrier
        elif self._task is not None:  # stopping or stopped: all is committed by the end
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)

    async def stop(self) -> None:
        """Commit what was queued and end the task; refuse more. Idempotent."""
        with self._lock:
            if self._state == "running":
                self._queue(_Stop(), urgent=True)
            self._state = "closed"
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)

    def _queue(self, item: Item | asyncio.Future[None] | _Stop, *, urgent: bool) -> None:
        """Append `item` and wake the task if it waits for it (the lock is held)."""
        self._items.append(item)
        wanted = self._wanted
        if wanted is None or not (urgent or len(self._items) >= wanted):
            return
        self._wanted = None
        if threading.get_ident() == self._loop_thread:
            self._woken.set()
        elif self._loop is not None:
            # The loop may have closed; then nobody is waiting.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._woken.set)

    async def _run(self) -> None:
        stop = False
        while not stop:
            items, barriers, stop = await self._next_batch()
            try:
                await self._write(items)
            except Exception:  # the writer must outlive any one failure
                logger.exception("score store writer failed on %d records", len(items))
            for barrier in barriers:
                release(barrier)

    async def _next_batch(self) -> tuple[list[Item], list[asyncio.Future[None]], bool]:
        items: list[Item] = []
        barriers: list[asyncio.Future[None]] = []
        deadline: float | None = None
        while True:
            with self._lock:
                while self._items and len(items) < self.batch_max:
                    item = self._items.popleft()
                    if isinstance(item, _Stop):
                        return items, barriers, True
                    if isinstance(item, asyncio.Future):
                        barriers.append(item)
                    else:
                        items.append(item)
                if len(items) >= self.batch_max or barriers:
                    return items, barriers, False
                timeout: float | None = None
                if items:
                    if self.linger <= 0:
                        return items, barriers, False
                    # Group commit: wait a moment for more records, up to a full batch.
                    if deadline is None:
                        deadline = time.monotonic() + self.linger
                    timeout = deadline - time.monotonic()
                    if timeout <= 0:
                        return items, barriers, False
                # Idle, the first record wakes it; lingering, a full batch does.
                self._wanted = self.batch_max - len(items) if items else 1
                self._woken.clear()
            try:
                async with asyncio.timeout(timeout):
                    await self._woken.wait()
            except TimeoutError:
                with self._lock:
                    self._wanted = None

    async def _write(self, items: list[Item]) -> None:
        """Commit a batch at once; if that fails, each item on its own."""
        records = [item for item in items if isinstance(item, ScoreRecord)]
        now = time.time()
        entries = [(item.key, item.result, now) for item in items if isinstance(item, CacheEntry)]
        if not records and not entries:
            return
        announce = any(_unclaimed_work(item) for item in items)
        limit = self.cache_limit
        whole = Batch(records, entries, limit, announce)
        if len(records) + len(entries) == 1:
            await self._commit_or_log(whole)
            return
        try:
            await self._commit(whole)
            return
        except Exception:  # told below, and each item's own failure is logged
            pass
        logger.warning(
            "a batch of %d score records and %d cache entries failed; storing them one by one",
            len(records),
            len(entries),
        )
        for record in records:
            await self._commit_or_log(Batch([record], [], limit, announce))
        for entry in entries:
            await self._commit_or_log(Batch([], [entry], limit, announce=False))

    async def _commit_or_log(self, batch: Batch) -> None:
        try:
            await self._commit(batch)
        except Exception:
            logger.exception(
                "could not store %d score records (run_id %s) and %d cache entries",
                len(batch.records),
                ", ".join(record.run_id for record in batch.records) or "-",
                len(batch.entries),
            )


class WriterThread:
    """A thread of an engine's own that runs the writer's event loop (SQLite: the one
    thread that uses the write connection)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name="gateway-store-writer", daemon=True
        )
        self._thread.start()
        ready.wait()
        assert self._thread.ident is not None
        self.ident = self._thread.ident

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    async def call(self, function: Callable[..., T], *args: object) -> T:
        """`function(*args)` on this thread."""

        async def run() -> T:
            return function(*args)

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), self.loop))

    async def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        await asyncio.to_thread(self._thread.join)
        self.loop.close()
