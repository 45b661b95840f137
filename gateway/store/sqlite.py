"""The score store: embedded SQLite in WAL mode, written by one dedicated thread.

Why one writer thread: SQLite admits one writer at a time, and a commit waits on
the disk (fsync) or, with several gateway processes on one file, on another
process's lock for up to the busy timeout. Done on the event loop, either would
stall every request in flight. So `submit()` only queues the record and
returns; the store's writer (`gateway.store.writer`) hands each batch to a
single thread that owns the write connection and commits it in one
transaction. One thread means no write locks in Python, submission order is
kept (a run's `pending` row never overtakes its `scored` row), and a burst of
scores shares one fsync. Reads go through a second connection, which WAL lets
run while the writer commits.

The same file can keep the score cache (`put_cache`, `cached`): entries of
`gateway.scoring.cache`, newest last, bounded by `keep_cache(limit)`, so that a
restarted gateway does not judge the texts it judged just before again.

    store = SQLiteStore("var/scores.db")
    await store.open()
    store.submit(ScoreRecord(run_id="r1", status="pending", created_at=time.time()))
    record = await store.get("r1")  # flushes first, so r1 is there
    await store.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from gateway.store.dialect import SQLITE, Statements
from gateway.store.outage import Backlog
from gateway.store.probes import ProbePair, ProbeQuery, ProbeStatements, pair_from_row
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
from gateway.store.sqlite_file import commit_batch, connect, is_outage, open_file
from gateway.store.threads import WriterThread
from gateway.store.whatif import WhatIf, WhatIfQuery, whatif_result, whatif_sql
from gateway.store.writer import Batch, DroppedHook, Writer

__all__ = ["SQLiteStore"]

logger = logging.getLogger("gateway.store")
_T = TypeVar("_T")

_SQL = Statements.of(SQLITE)
_PROBES = ProbeStatements.of(SQLITE)

# How long the writer gathers records before a commit. Its thread needs the GIL to
# run, so each time a record wakes it, the request path's thread waits for the GIL
# once more: a longer linger, fewer batches, fewer such waits. A read does not wait
# for it (a flush commits what is queued at once), nor does a record's caller.
LINGER = 0.05


class SQLiteStore:
    """Score records in one SQLite file, written off the event loop.

    `await open()` before use and `await close()` at shutdown. `submit()` may be
    called from any thread; the async methods belong to the loop that opened it.
    """

    engine = SQLITE.name
    shared = False  # one host's processes, on one file
    notifies = False

    def __init__(
        self,
        path: str | Path,
        *,
        batch_max: int = 512,
        linger: float = LINGER,
        clock: Callable[[], float] = time.time,
        buffer_records: int = 10_000,
        on_dropped: DroppedHook | None = None,
    ) -> None:
        self._path = Path(path)
        self._clock = clock  # wall-clock seconds of leases (a test's own, to skip the wait)
        self._writer = Writer(
            self._write_batch,
            batch_max=batch_max,
            linger=linger,
            buffer_records=buffer_records,
            is_outage=is_outage,
            on_dropped=on_dropped,
        )
        # The writer thread, the only user of the write connection.
        self._thread: WriterThread | None = None
        self._conn: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()
        # Searches and stats read through a connection of their own, so that a stats
        # call over a wide window does not hold up the lookups behind it.
        self._scanner: sqlite3.Connection | None = None
        self._scan_lock = threading.Lock()
        self._work: sqlite3.Connection | None = None  # claims, leases: their own connection
        self._work_lock = threading.Lock()
        self._closing: asyncio.Future[None] | None = None

    def describe(self) -> str:
        return str(self._path.resolve())

    async def open(self, *, sweep_pending: bool = True) -> None:
        """Open the file, migrate it, and sweep what the last run left pending: a record
        with work loses its lease, so it is scored again at once (`gateway.work.payload`); one
        without (a stream cut short) is marked dropped, `gateway_restarted`.

        With several worker processes on one file, only the parent sweeps
        (`sweep_pending=False` in the workers, and in scorer processes): a
        process starting late would otherwise take its siblings' live jobs.
        """
        self._writer.require_new()
        thread = WriterThread()
        try:
            # On the writer thread: it is the write connection's from the start.
            conn, reader = await thread.call(open_file, self._path, sweep_pending)
        except BaseException:
            await thread.stop()
            raise
        self._thread, self._conn, self._reader = thread, conn, reader
        # The writer's loop runs on that thread too: the request path only queues.
        self._writer.start(thread.loop, thread.ident)

    async def _write_batch(self, batch: Batch) -> None:
        """The writer's commit, on the writer thread (its loop runs there), with its
        connection: blocking that loop is all it does."""
        if self._conn is None:
            raise RuntimeError("the score store has no writer thread")
        commit_batch(self._conn, batch)

    def submit(self, record: ScoreRecord) -> None:
        """Queue an upsert of the whole record; returns at once, from any thread.

        The record is copied, so later changes to it are not stored.
        """
        self._writer.put(check_record(record))

    def keep_cache(self, limit: int) -> None:
        """Keep at most the `limit` newest cache entries; older ones go as new ones come."""
        self._writer.keep_cache(limit)

    def put_cache(self, entry: CacheEntry) -> None:
        """Queue a cache entry for storing; returns at once, from any thread."""
        self._writer.put(entry)

    async def flush(self) -> None:
        """Wait until every record submitted before this call is committed."""
        await self._writer.flush()

    async def close(self) -> None:
        """Commit what was submitted, stop the writer and close the file. Idempotent;
        every call returns once it is done."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        await self._writer.stop()
        thread, conn = self._thread, self._conn
        self._thread = self._conn = None
        if thread is not None:
            if conn is not None:
                await thread.call(conn.close)
            await thread.stop()
        await asyncio.to_thread(self._close_readers)

    def _close_readers(self) -> None:
        with self._read_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
        with self._scan_lock:
            if self._scanner is not None:
                self._scanner.close()
                self._scanner = None
        with self._work_lock:
            if self._work is not None:
                self._work.close()
                self._work = None

    # Reads: through the read connection, in a thread; `get` and the queries flush first.

    def _rows(self, sql: str, values: tuple[object, ...] | list[object] = ()) -> list[Any]:
        with self._read_lock:
            if self._reader is None:  # closed since the read began
                raise RuntimeError("the score store is closed")
            return list(self._reader.execute(sql, values).fetchall())

    async def _read(self, sql: str, values: tuple[object, ...] | list[object] = ()) -> list[Any]:
        self._writer.require()
        return await asyncio.to_thread(self._rows, sql, values)

    def _scan_rows(self, sql: str, values: tuple[object, ...] | list[object]) -> list[Any]:
        with self._scan_lock:
            if self._scanner is None:
                if self._reader is None:  # closed since the read began
                    raise RuntimeError("the score store is closed")
                self._scanner = connect(self._path)
                self._scanner.execute("PRAGMA query_only = ON")
            return list(self._scanner.execute(sql, values).fetchall())

    async def _scan(self, sql: str, values: tuple[object, ...] | list[object]) -> list[Any]:
        """A search or stats query, on the scanning connection, in a thread."""
        self._writer.require()
        return await asyncio.to_thread(self._scan_rows, sql, values)

    async def get(self, run_id: str) -> ScoreRecord | None:
        """The record for `run_id` after a flush, or None if there is none."""
        await self.flush()
        held = self._writer.held(run_id)
        if held is not None:  # the file cannot be written (disk full): still held
            return held
        rows = await self._read(_SQL.select, (run_id,))
        return record_from_row(rows[0]) if rows else None

    def backlog(self) -> Backlog:
        return self._writer.backlog()

    async def cached(self, limit: int) -> list[CacheEntry]:
        """The `limit` newest stored cache entries, oldest first (committed ones only)."""
        return [
            CacheEntry(key, result) for key, result in await self._read(_SQL.cache_load, (limit,))
        ]

    async def cache_get(self, key: str) -> str | None:
        rows = await self._read(_SQL.cache_get, (key,))
        return str(rows[0][0]) if rows else None

    async def status_counts(self) -> dict[str, int]:
        """Committed records per status, every known status included (0 if none)."""
        counts: dict[str, int] = dict.fromkeys(sorted(STATUSES), 0)
        counts.update(await self._read(_SQL.counts))
        return counts

    async def ping(self) -> None:
        """Raise `StoreError` unless the file can be read."""
        try:
            await self._read("SELECT 1 FROM scores LIMIT 1")
        except sqlite3.Error as exc:
            raise StoreError(f"score store {self._path} cannot be read: {exc}") from exc

    async def search(self, query: ScoreQuery) -> list[ScoreRecord]:
        """Up to `query.limit + 1` records, newest first (the extra one says "more")."""
        await self.flush()
        sql, values = search_sql(query, SQLITE)
        return [record_from_row(row) for row in await self._scan(sql, values)]

    async def stats(self, query: StatsQuery) -> list[StatsGroup]:
        await self.flush()
        sql, values = stats_sql(query, SQLITE)
        p90, p90_values = p90_sql(query, SQLITE)
        rows = await self._scan(sql, values)
        ranked = dict(await self._scan(p90, p90_values))
        return stats_rows(rows, ranked.get, group_by=query.group_by)

    async def whatif(self, query: WhatIfQuery) -> WhatIf:
        await self.flush()
        counts, examples = whatif_sql(query, SQLITE)
        return whatif_result(query, await self._read(*counts), await self._read(*examples))

    async def query(self, *statements: tuple[str, list[object]]) -> list[list[Any]]:
        await self.flush()
        return [await self._scan(sql, values) for sql, values in statements]

    async def insert(self, sql: str, values: list[object]) -> list[Any]:
        return await self._work_write(sql, tuple(values))

    async def pending_work(self) -> int:
        ((count,),) = await self._read(_SQL.pending)
        return int(count)

    # Writes besides the writer's: each one short transaction on a connection of its own.

    async def prune(self, before: float, *, batch: int) -> int:
        """Delete up to `batch` final records created before `before`, up to `batch`
        cache entries stored before it and as many reviews made before it; returns how
        many went. Its own connection and transaction, so the writer waits at most one
        bounded batch."""

        def delete() -> int:
            conn = connect(self._path)
            try:
                conn.execute("BEGIN IMMEDIATE")
                prunes = (_SQL.prune_records, _SQL.prune_cache, _SQL.prune_reviews, _PROBES.prune)
                counts = [int(conn.execute(sql, (before, batch)).rowcount) for sql in prunes]
                conn.execute("COMMIT")
                return sum(counts)
            finally:
                conn.close()

        self._writer.require()
        return await asyncio.to_thread(delete)

    async def add_probe_pairs(self, pairs: list[ProbePair]) -> None:
        """Store a live probe's pairs: one short transaction on a connection of its own."""

        def insert(conn: sqlite3.Connection) -> None:
            conn.executemany(_PROBES.insert, _PROBES.rows(pairs))

        self._writer.require()
        await asyncio.to_thread(self._in_work_transaction, insert)

    async def probe_pairs(self, query: ProbeQuery) -> list[ProbePair]:
        sql, values = _PROBES.select(query)
        return [pair_from_row(row) for row in await self._scan(sql, values)]

    async def claim(
        self, worker: str, *, limit: int, lease_seconds: float, max_attempts: int
    ) -> list[ScoreRecord]:
        now = self._clock()
        rows = await self._work_write(
            _SQL.claim, (now + lease_seconds, worker, now, max_attempts, limit)
        )
        return sorted((record_from_row(row) for row in rows), key=lambda r: r.created_at)

    async def renew(self, worker: str, *, lease_seconds: float) -> int:
        return await self._work_count(_SQL.renew, (self._clock() + lease_seconds, worker))

    async def release(self, worker: str, run_ids: list[str] | None = None) -> int:
        if run_ids is None:
            return await self._work_count(_SQL.release, (worker,))
        if not run_ids:
            return 0
        values = (worker, *SQLITE.list_values(run_ids))
        return await self._work_count(_SQL.release_some(len(run_ids)), values)

    async def expire(self, *, max_attempts: int) -> list[tuple[str, str]]:
        now = self._clock()

        def sweep(conn: sqlite3.Connection) -> list[tuple[str, str]]:
            exhausted = conn.execute(_SQL.exhausted, (now, max_attempts, now)).fetchall()
            lost = conn.execute(_SQL.lost, (now, now)).fetchall()
            return [(row[0], "attempts_exhausted") for row in exhausted] + [
                (row[0], "gateway_lost") for row in lost
            ]

        return await asyncio.to_thread(self._in_work_transaction, sweep)

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
            self._writer.require()
            if self._work is None:
                self._work = connect(self._path)
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
