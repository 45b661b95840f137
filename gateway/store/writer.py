"""The one writer of a score store, for both engines: what `submit` and `put_cache`
queue is committed in batches, in submission order, off the request path.

`Writer` runs as a task on an event loop: the store's own (PostgreSQL, whose
driver lives there), or one on the engine's writer thread (SQLite, so that the
request path's loop only queues). It takes queued records and cache entries in
order, up to `batch_max` at a time, and when only a few are waiting it lingers a
moment for more, so that under load one commit carries many rows (group commit).
Each batch goes to the engine's `commit` (SQLite commits on its writer thread;
PostgreSQL sends one executemany).

Two kinds of failure are told apart by the engine's `is_outage`:
- the store is away (the server stopped, the connection cut, the disk full or
  read-only): the batch is held and tried again with a growing pause, and what is
  submitted meanwhile waits behind it (`outage`), up to `buffer_records` records
  in all; once a commit goes through, everything held is written, in order;
- a record the store refuses on its own: the batch is tried item by item, so one
  bad record is all that is lost.
Every record that is not stored is counted by reason (`on_dropped`): `rejected`,
`buffer_full` (submitted with the buffer at its bound) or `shutdown` (still
held when the store closed with the database away). The loop outlives any failure.

`flush` queues a barrier, released once everything queued before it is
committed, or at once while the store is away: a read must not wait for the
database to come back (`held` finds a run's newest record still waiting). A
batch takes past a barrier whatever is queued already, without lingering:
every read flushes first, and cutting a batch at each barrier would turn a burst
read by many clients into one commit per reader. `stop` queues a stop: what came
before it is committed, then the loop ends.

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
from typing import Literal

from gateway.store.outage import Backlog, Outage
from gateway.store.records import CacheEntry, ScoreRecord
from gateway.store.threads import release

__all__ = ["Batch", "Writer"]

logger = logging.getLogger("gateway.store")

Item = ScoreRecord | CacheEntry
DroppedHook = Callable[[str, int], None]


@dataclass(frozen=True, slots=True)
class Batch:
    """What one commit stores; the engine's `commit` raises if it stored none of it."""

    records: list[ScoreRecord]  # the engine makes them rows (`records.rows_of`)
    entries: list[tuple[str, str, float]]  # cache entries: key, result, stored_at
    cache_limit: int | None  # keep this many newest cache entries, if set
    announce: bool  # it holds work no process has leased, for scorers to hear of


class _Stop:
    """Queued once by `stop()`."""


class _GaveUp(Exception):
    """The store closed while the database was away: the batch is not stored."""


def _unclaimed_work(item: Item) -> bool:
    """Work no process has leased: an external scorer's to take."""
    return (
        isinstance(item, ScoreRecord)
        and item.status == "pending"
        and item.work is not None
        and item.leased_by is None
    )


def _never(exc: BaseException) -> bool:
    return False


class Writer:
    """A store's queue and the task that commits it; `cache_limit` may change while it runs."""

    def __init__(
        self,
        commit: Callable[[Batch], Awaitable[None]],
        *,
        batch_max: int,
        linger: float,
        buffer_records: int = 10_000,
        is_outage: Callable[[BaseException], bool] = _never,
        on_dropped: DroppedHook | None = None,
        retry_first: float = 0.25,
        retry_max: float = 5.0,
    ) -> None:
        if batch_max < 1:
            raise ValueError(f"batch_max must be >= 1, got {batch_max}")
        if buffer_records < 1:
            raise ValueError(f"buffer_records must be >= 1, got {buffer_records}")
        self.batch_max = batch_max
        self.linger = linger
        self.cache_limit: int | None = None
        self.on_dropped = on_dropped
        self._commit = commit
        self._is_outage = is_outage
        self._retry = (retry_first, retry_max)
        self._items: deque[Item | asyncio.Future[None] | _Stop] = deque()
        self._batch: list[Item] = []  # taken from the queue, not yet stored
        self._barriers: list[asyncio.Future[None]] = []  # the flushes waiting on it
        self._lock = threading.Lock()
        self._state: Literal["new", "running", "closed"] = "new"
        self._task: asyncio.Future[None] | None = None  # the loop's end, seen from callers
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._woken = asyncio.Event()
        self._halt = asyncio.Event()  # set by stop(): end an outage's pause
        self._gave_up = False  # closing with the database away: store nothing more
        # While the task waits: how many queued items wake it (a barrier or the stop
        # always does). None while it runs.
        self._wanted: int | None = None
        self.outage = Outage(buffer_records)

    @property
    def state(self) -> Literal["new", "running", "closed"]:
        return self._state

    def backlog(self) -> Backlog:
        with self._lock:
            return self.outage.backlog()

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
        """Queue `item`; returns at once, from any thread. With the buffer at its bound
        a record is counted `buffer_full` instead; while the store is away a cache
        entry is let go (the process's own cache keeps it)."""
        dropped = None
        with self._lock:
            self.require()
            if isinstance(item, CacheEntry) and self.outage.down:
                self.outage.entries_skipped += 1
                return
            if self.outage.full():
                dropped = self.outage.refuse(item)
            else:
                self.outage.hold()
                self._queue(item, urgent=False)
        if dropped is not None:
            self._dropped(dropped, 1)

    def held(self, run_id: str) -> ScoreRecord | None:
        """The newest record of `run_id` held while the store is away, if any.

        Only while it is away: otherwise a record submitted after a lookup's flush is
        on its way to the database, where the upsert merges it with the stored row
        (`attempts` only grows), so the stored row is the truer answer until then."""
        with self._lock:
            if not self.outage.down:
                return None
            for item in reversed((*self._batch, *self._items)):
                if isinstance(item, ScoreRecord) and item.run_id == run_id:
                    return item
        return None

    async def flush(self) -> None:
        """Wait until everything queued before this call is committed, or held while
        the store is away."""
        with self._lock:
            if self._state == "new":
                raise RuntimeError("the score store is not started")
            barrier: asyncio.Future[None] | None = None
            if self._state == "running" and not self.outage.down:
                barrier = asyncio.get_running_loop().create_future()
                self._queue(barrier, urgent=True)
            elif self._state == "running":
                return
        if barrier is not None:
            await barrier
        elif self._task is not None:  # stopping or stopped: all is committed by the end
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)

    async def stop(self) -> None:
        """Commit what was queued and end the task; refuse more. Idempotent. With the
        database away, one more try, then what is held is counted `shutdown`."""
        with self._lock:
            if self._state == "running":
                self._queue(_Stop(), urgent=True)
                self._wake(self._halt)
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
        self._wake(self._woken)

    def _wake(self, event: asyncio.Event) -> None:
        if threading.get_ident() == self._loop_thread:
            event.set()
        elif self._loop is not None:
            # The loop may have closed; then nobody is waiting.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(event.set)

    async def _run(self) -> None:
        stop = False
        while not stop:
            items, barriers, stop = await self._next_batch()
            self._barriers = barriers
            if self.outage.down:  # held only: a flush must not wait out the outage
                self._release(barriers)
            try:
                await self._write(items)
            except Exception:  # the writer must outlive any one failure
                logger.exception("score store writer failed on %d records", len(items))
            with self._lock:
                self.outage.release(len(items))
                self._batch = []
            self._release(barriers)
            self._barriers = []

    def _release(self, barriers: list[asyncio.Future[None]]) -> None:
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
                        self._batch = items
                        return items, barriers, True
                    if isinstance(item, asyncio.Future):
                        barriers.append(item)
                    else:
                        items.append(item)
                self._batch = items
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
        """Commit a batch at once; if the store refuses it, each item on its own."""
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
            await self._commit_through(whole)
            return
        except _GaveUp:
            self._dropped("shutdown", len(records))
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
            await self._commit_through(batch)
        except _GaveUp:
            self._dropped("shutdown", len(batch.records))
        except Exception:
            logger.exception(
                "could not store %d score records (run_id %s) and %d cache entries",
                len(batch.records),
                ", ".join(record.run_id for record in batch.records) or "-",
                len(batch.entries),
            )
            self._dropped("rejected", len(batch.records))

    async def _commit_through(self, batch: Batch) -> None:
        """Commit `batch`, waiting out an outage; raises what the store refuses, or
        `_GaveUp` if the store closes while the database is away."""
        pause = self._retry[0]
        while True:
            if self._gave_up:
                raise _GaveUp  # closing, and the last try found the database away
            try:
                await self._commit(batch)
            except Exception as exc:
                if not self._is_outage(exc):
                    raise
                with self._lock:
                    began = self.outage.begin(exc)
                if began:
                    self._release_waiting()
                if self._halt.is_set():
                    self._gave_up = True
                    raise _GaveUp from exc
                with contextlib.suppress(TimeoutError):  # stop() ends the pause: one more try
                    async with asyncio.timeout(pause):
                        await self._halt.wait()
                pause = min(pause * 2, self._retry[1])
                continue
            if self.outage.down:
                with self._lock:
                    self.outage.end()
            return

    def _release_waiting(self) -> None:
        """The store just went away: release the flushes waiting on what is held."""
        with self._lock:
            barriers = [item for item in self._items if isinstance(item, asyncio.Future)]
            for barrier in barriers:
                self._items.remove(barrier)
        self._release([*self._barriers, *barriers])

    def _dropped(self, reason: str, count: int) -> None:
        if count <= 0:
            return
        with self._lock:
            self.outage.count(reason, count)
        if self.on_dropped is not None:
            try:
                self.on_dropped(reason, count)
            except Exception:  # a hook must not stop the writer
                logger.exception("the store's on_dropped hook failed")
