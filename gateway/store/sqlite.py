"""The score store: embedded SQLite in WAL mode, written by one dedicated thread.

Why one writer thread: SQLite admits one writer at a time, and a commit waits on
the disk (fsync) or, with several gateway processes on one file, on another
process's lock for up to the busy timeout. Done on the event loop, either would
stall every request in flight. So `submit()` only puts the record on a queue and
returns; a single thread owns the write connection, drains the queue and commits
up to `batch_max` records per transaction. One thread means no write locks in
Python, submission order is kept (a run's `pending` row never overtakes its
`scored` row), and a burst of scores shares one fsync. Reads go through a
second connection, which WAL lets run while the writer commits.

The same file can keep the score cache (`put_cache`, `load_cache`): entries of
`gateway.cache`, newest last, bounded by `keep_cache(limit)`, so that a
restarted gateway does not judge the texts it judged just before again.

    store = ScoreStore("var/scores.db")
    store.start()
    store.submit(ScoreRecord(run_id="r1", status="pending", created_at=time.time()))
    record = await store.get("r1")  # flushes first, so r1 is there
    await store.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from gateway.store.dialect import SQLITE, Statements
from gateway.store.migrations import migrate_sqlite
from gateway.store.queries import (
    ScoreQuery,
    StatsGroup,
    StatsQuery,
    p90_sql,
    search_sql,
    stats_rows,
    stats_sql,
)
from gateway.store.records import (
    STATUSES,
    CacheEntry,
    ScoreRecord,
    StoreError,
    check_record,
    record_from_row,
)
from gateway.store.sqlite_writer import Barrier, Item, SQLiteWriter, Stop

__all__ = ["SQLiteStore", "ScoreStore"]

logger = logging.getLogger("gateway.store")
_T = TypeVar("_T")

_BUSY_TIMEOUT_MS = 5000
# At start, a single gateway owns the file's pending records: those without work (a
# stream cut by the crash) cannot be scored; those with work are resumed.
_DROP_PENDING = (
    "UPDATE scores SET status = 'dropped', status_reason = 'gateway_restarted', updated_at = ?,"
    " lease_until = NULL, leased_by = NULL WHERE status = 'pending' AND work IS NULL"
)
_RESUME_PENDING = (
    "UPDATE scores SET lease_until = NULL, leased_by = NULL"
    " WHERE status = 'pending' AND work IS NOT NULL"
)
_SQL = Statements.of(SQLITE)


def _connect(path: Path) -> sqlite3.Connection:
    # isolation_level=None: transactions are explicit, so the writer can BEGIN IMMEDIATE
    # (take the write lock up front, honouring busy_timeout) instead of upgrading later.
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
    return conn


class SQLiteStore:
    """Score records in one SQLite file, written off the event loop.

    Call `start()` before use and `await close()` at shutdown. `submit()` may be
    called from any thread; the async methods belong to the running loop.
    """

    def __init__(self, path: str | Path, *, batch_max: int = 512, linger: float = 0.005) -> None:
        if batch_max < 1:
            raise ValueError(f"batch_max must be >= 1, got {batch_max}")
        self._linger = linger
        self._path = Path(path)
        self._batch_max = batch_max
        self._queue: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self._writer = SQLiteWriter(self._queue, batch_max=batch_max, linger=linger)
        # Guards _state so that no record can be queued behind the stop item.
        self._lock = threading.Lock()
        self._state: Literal["new", "running", "closed"] = "new"
        self._thread: threading.Thread | None = None
        self._reader: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()
        self._work: sqlite3.Connection | None = None  # claims, leases: their own connection
        self._work_lock = threading.Lock()

    def start(self, *, sweep_pending: bool = True) -> None:
        """Open the file, migrate it, and sweep what the last run left pending: a record
        with work loses its lease, so it is scored again at once (`gateway.work`); one
        without (a stream cut short) is marked dropped, `gateway_restarted`.

        With several worker processes on one file, only the parent sweeps
        (`sweep_pending=False` in the workers, and in scorer processes): a
        process starting late would otherwise take its siblings' live jobs.
        """
        with self._lock:
            if self._state != "new":
                raise RuntimeError("the score store can only be started once")
            writer = reader = None
            try:
                if not self._path.parent.is_dir():
                    # Never a folder of its own making: the store lives where it was told.
                    raise StoreError(
                        f"cannot open score store {self._path}:"
                        f" folder {self._path.parent} does not exist"
                    )
                writer = _connect(self._path)
                (mode,) = writer.execute("PRAGMA journal_mode = WAL").fetchone()
                if str(mode).lower() != "wal":
                    raise StoreError(f"score store {self._path}: WAL mode unavailable ({mode})")
                writer.execute("PRAGMA synchronous = NORMAL")
                migrate_sqlite(writer)
                dropped = resumed = 0
                if sweep_pending:
                    dropped = writer.execute(_DROP_PENDING, (time.time(),)).rowcount
                    resumed = writer.execute(_RESUME_PENDING).rowcount
                reader = _connect(self._path)
                reader.execute("PRAGMA query_only = ON")
            except (OSError, sqlite3.Error) as exc:
                for conn in (writer, reader):
                    if conn is not None:
                        conn.close()
                raise StoreError(f"cannot open score store {self._path}: {exc}") from exc
            except StoreError:
                if writer is not None:
                    writer.close()
                raise
            if dropped:
                logger.warning(
                    "marked %d pending score records dropped (gateway_restarted)", dropped
                )
            if resumed:
                logger.warning("resuming %d pending scorings left by the last run", resumed)
            self._reader = reader
            self._thread = threading.Thread(
                target=self._writer.run, args=(writer,), name="gateway-store-writer", daemon=True
            )
            self._thread.start()
            self._state = "running"

    engine = "sqlite"

    def describe(self) -> str:
        return str(self._path.resolve())

    async def open(self, *, sweep_pending: bool = True) -> None:
        """`start()`, for callers that hold a `Store` of either engine."""
        self.start(sweep_pending=sweep_pending)

    async def cached(self, limit: int) -> list[CacheEntry]:
        return await asyncio.to_thread(self.load_cache, limit)

    async def cache_get(self, key: str) -> str | None:
        def read() -> str | None:
            with self._read_lock:
                row = self._require_reader().execute(_SQL.cache_get, (key,)).fetchone()
            return None if row is None else str(row[0])

        return await asyncio.to_thread(read)

    async def status_counts(self) -> dict[str, int]:
        return await asyncio.to_thread(self.counts)

    async def ping(self) -> None:
        """Raise `StoreError` unless the file can be read."""

        def read() -> None:
            with self._read_lock:
                self._require_reader().execute("SELECT 1 FROM scores LIMIT 1").fetchall()

        try:
            await asyncio.to_thread(read)
        except sqlite3.Error as exc:
            raise StoreError(f"score store {self._path} cannot be read: {exc}") from exc

    def submit(self, record: ScoreRecord) -> None:
        """Queue an upsert of the whole record; returns at once, from any thread.

        The record is copied, so later changes to it are not stored.
        """
        snapshot = check_record(record)
        with self._lock:
            if self._state != "running":
                raise RuntimeError(f"the score store is {self._state_word()}")
            self._queue.put(snapshot)

    def keep_cache(self, limit: int) -> None:
        """Keep at most the `limit` newest cache entries; older ones go as new ones come."""
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self._writer.cache_limit = limit

    def put_cache(self, entry: CacheEntry) -> None:
        """Queue a cache entry for storing; returns at once, from any thread."""
        with self._lock:
            if self._state != "running":
                raise RuntimeError(f"the score store is {self._state_word()}")
            self._queue.put(entry)

    def load_cache(self, limit: int) -> list[CacheEntry]:
        """The `limit` newest stored cache entries, oldest first (committed ones only)."""
        with self._read_lock:
            rows = self._require_reader().execute(_SQL.cache_load, (limit,)).fetchall()
        return [CacheEntry(key, result) for key, result in rows]

    async def flush(self) -> None:
        """Wait until every record submitted before this call is committed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            state = self._state
            if state == "running":
                self._queue.put(Barrier(loop, future))
        if state == "running":
            await future
        elif self._thread is not None:
            # Closing or closed: the writer commits everything queued before it exits.
            await asyncio.to_thread(self._thread.join)
        else:
            raise RuntimeError("the score store is not started")

    async def get(self, run_id: str) -> ScoreRecord | None:
        """The record for `run_id` after a flush, or None if there is none."""
        await self.flush()
        return await asyncio.to_thread(self._read, run_id)

    async def close(self) -> None:
        """Commit what was submitted, stop the writer and close the file. Idempotent."""
        with self._lock:
            state = self._state
            self._state = "closed"
            if state == "running":
                self._queue.put(Stop())
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        await asyncio.to_thread(self._close_reader)

    async def prune(self, before: float, *, batch: int) -> int:
        """Delete up to `batch` final records created before `before`, and up to `batch`
        cache entries stored before it; returns how many went. Its own connection and
        transaction, so the writer waits at most one bounded batch."""

        def delete() -> int:
            conn = _connect(self._path)
            try:
                conn.execute("BEGIN IMMEDIATE")
                records = conn.execute(_SQL.prune_records, (before, batch)).rowcount
                entries = conn.execute(_SQL.prune_cache, (before, batch)).rowcount
                conn.execute("COMMIT")
                return int(records) + int(entries)
            finally:
                conn.close()

        if self._state != "running":
            raise RuntimeError(f"the score store is {self._state_word()}")
        return await asyncio.to_thread(delete)

    # Durable work (`gateway.work`): each call one short write transaction of its own.

    async def claim(
        self, worker: str, *, limit: int, lease_seconds: float, max_attempts: int
    ) -> list[ScoreRecord]:
        now = time.time()
        rows = await self._work_write(
            _SQL.claim, (now + lease_seconds, worker, now, max_attempts, limit)
        )
        return sorted((record_from_row(row) for row in rows), key=lambda r: r.created_at)

    async def renew(self, worker: str, *, lease_seconds: float) -> int:
        return await self._work_count(_SQL.renew, (time.time() + lease_seconds, worker))

    async def release(self, worker: str, run_ids: list[str] | None = None) -> int:
        if run_ids is None:
            return await self._work_count(_SQL.release, (worker,))
        if not run_ids:
            return 0
        values = (worker, *SQLITE.list_values(run_ids))
        return await self._work_count(_SQL.release_some(len(run_ids)), values)

    async def expire(self, *, max_attempts: int) -> list[tuple[str, str]]:
        now = time.time()

        def sweep(conn: sqlite3.Connection) -> list[tuple[str, str]]:
            exhausted = conn.execute(_SQL.exhausted, (now, max_attempts, now)).fetchall()
            lost = conn.execute(_SQL.lost, (now, now)).fetchall()
            return [(row[0], "attempts_exhausted") for row in exhausted] + [
                (row[0], "gateway_lost") for row in lost
            ]

        return await asyncio.to_thread(self._in_work_transaction, sweep)

    async def pending_work(self) -> int:
        def read() -> int:
            with self._read_lock:
                (count,) = self._require_reader().execute(_SQL.pending).fetchone()
            return int(count)

        return await asyncio.to_thread(read)

    async def listen(self) -> None:
        """SQLite has no notifications: `wait_for_work` sleeps its timeout."""

    async def wait_for_work(self, timeout: float) -> None:
        await asyncio.sleep(timeout)

    async def _work_write(self, sql: str, args: tuple[object, ...]) -> list[tuple[object, ...]]:
        return await asyncio.to_thread(
            self._in_work_transaction, lambda conn: conn.execute(sql, args).fetchall()
        )

    async def _work_count(self, sql: str, args: tuple[object, ...]) -> int:
        return await asyncio.to_thread(
            self._in_work_transaction, lambda conn: int(conn.execute(sql, args).rowcount)
        )

    def _in_work_transaction(self, step: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._work_lock:
            if self._state != "running":
                raise RuntimeError(f"the score store is {self._state_word()}")
            if self._work is None:
                self._work = _connect(self._path)
            conn = self._work
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = step(conn)
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
            return result

    # Search and stats (`gateway.store.queries`): reads, after a flush.

    async def search(self, query: ScoreQuery) -> list[ScoreRecord]:
        """Up to `query.limit + 1` records, newest first (the extra one says "more")."""
        await self.flush()
        sql, values = search_sql(query, SQLITE)
        rows = await asyncio.to_thread(self._read_rows, sql, values)
        return [record_from_row(row) for row in rows]

    async def stats(self, query: StatsQuery) -> list[StatsGroup]:
        await self.flush()
        sql, values = stats_sql(query, SQLITE)
        p90, p90_values = p90_sql(query, SQLITE)
        rows = await asyncio.to_thread(self._read_rows, sql, values)
        ranked = dict(await asyncio.to_thread(self._read_rows, p90, p90_values))
        return stats_rows(rows, ranked.get, group_by=query.group_by)

    def _read_rows(self, sql: str, values: list[object]) -> list[tuple[Any, ...]]:
        with self._read_lock:
            return list(self._require_reader().execute(sql, values).fetchall())

    def counts(self) -> dict[str, int]:
        """Committed records per status, every known status included (0 if none)."""
        counts = dict.fromkeys(sorted(STATUSES), 0)
        with self._read_lock:
            reader = self._require_reader()
            rows = reader.execute(_SQL.counts)
            counts.update(rows.fetchall())
        return counts

    def _state_word(self) -> str:
        return "closed" if self._state == "closed" else "not started"

    def _require_reader(self) -> sqlite3.Connection:
        if self._reader is None:
            raise RuntimeError(f"the score store is {self._state_word()}")
        return self._reader

    def _read(self, run_id: str) -> ScoreRecord | None:
        with self._read_lock:
            row = self._require_reader().execute(_SQL.select, (run_id,)).fetchone()
        return None if row is None else record_from_row(row)

    def _close_reader(self) -> None:
        with self._read_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
        with self._work_lock:
            if self._work is not None:
                self._work.close()
                self._work = None


ScoreStore = SQLiteStore  # the name from before there were two engines
