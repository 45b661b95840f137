"""The SQLite store's writer thread: it alone writes records and cache entries.

`SQLiteStore` (`gateway.store.sqlite`) puts items on `queue`; the thread takes
them in batches of up to `batch_max`, lingering a moment for more under load
(group commit), and commits each batch in one transaction, or item by item if
that fails, so one bad record is all that is lost. A `_Barrier` is released
once everything queued before it is committed (`flush`); `_Stop` ends the
thread after what came before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import sqlite3
import time
from dataclasses import dataclass

from gateway.store.dialect import SQLITE, Statements
from gateway.store.records import CacheEntry, ScoreRecord, batch_rows, record_row
from guard.outputs import valid_text

__all__ = ["Barrier", "Item", "SQLiteWriter", "Stop"]

logger = logging.getLogger("gateway.store")

_SQL = Statements.of(SQLITE)


@dataclass(slots=True)
class Barrier:
    """Queued by `flush()`: released once every record queued before it is committed."""

    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]

    def release(self) -> None:
        # The loop may have closed while the writer was busy; then nobody is waiting.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(_set_done, self.future)


class Stop:
    """Queued once by `close()`: the writer commits what came before and exits."""


Item = ScoreRecord | CacheEntry | Barrier | Stop


def _set_done(future: asyncio.Future[None]) -> None:
    if not future.done():  # a cancelled flush() leaves a done future behind
        future.set_result(None)


def _to_row(record: ScoreRecord) -> tuple[object, ...]:
    # SQLite takes UTF-8: an unpaired surrogate (valid escaped JSON) becomes U+FFFD.
    return record_row(record, boolean=int, text=valid_text)


class SQLiteWriter:
    """What the writer thread runs; `cache_limit` may be set while it does."""

    def __init__(self, items: queue.SimpleQueue[Item], *, batch_max: int, linger: float) -> None:
        self.queue = items
        self.batch_max = batch_max
        self.linger = linger
        self.cache_limit: int | None = None

    def run(self, conn: sqlite3.Connection) -> None:
        """The thread's body: commit batches until the stop item; closes `conn`."""
        try:
            while True:
                records, barriers, stop = self._next_batch()
                try:
                    self._write(conn, records)
                except Exception:
                    # Never let the writer die: the queue would grow and flush() hang.
                    logger.exception("score store writer failed on %d records", len(records))
                for barrier in barriers:
                    barrier.release()
                if stop:
                    return
        finally:
            conn.close()

    def _next_batch(self) -> tuple[list[ScoreRecord | CacheEntry], list[Barrier], bool]:
        records: list[ScoreRecord | CacheEntry] = []
        barriers: list[Barrier] = []
        deadline: float | None = None
        item = self.queue.get()
        while True:
            if isinstance(item, ScoreRecord | CacheEntry):
                records.append(item)
            elif isinstance(item, Barrier):
                barriers.append(item)
            else:
                return records, barriers, True
            if len(records) >= self.batch_max:
                return records, barriers, False
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                if barriers or not records or self.linger <= 0:
                    return records, barriers, False
                # Group commit: wait a moment for more records, so that under load one
                # transaction (one WAL append) carries many rows instead of one each.
                # At 2,000 records/s: 37-56 us of CPU per record against 55-62 us
                # without it, in two noisy runs of `python -m bench.store_commit`.
                if deadline is None:
                    deadline = time.monotonic() + self.linger
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return records, barriers, False
                try:
                    item = self.queue.get(timeout=remaining)
                except queue.Empty:
                    return records, barriers, False

    def _write(self, conn: sqlite3.Connection, items: list[ScoreRecord | CacheEntry]) -> None:
        """Commit a batch in one transaction; if that fails, each item in its own.

        Whatever fails (a database error, or anything else the driver raises on
        a value) is rolled back, so the connection is never left inside a
        transaction, and it costs only the item that caused it.
        """
        rows, entries = batch_rows(items, _to_row)
        if not rows and not entries:
            return
        if len(rows) + len(entries) == 1:
            self._commit(conn, rows, entries, log_failure=True)
            return
        if self._commit(conn, rows, entries, log_failure=False):
            return
        logger.warning(
            "a batch of %d score records and %d cache entries failed; storing them one by one",
            len(rows),
            len(entries),
        )
        for row in rows:
            self._commit(conn, [row], [], log_failure=True)
        for entry in entries:
            self._commit(conn, [], [entry], log_failure=True)

    def _commit(
        self,
        conn: sqlite3.Connection,
        rows: list[tuple[object, ...]],
        entries: list[tuple[str, str, float]],
        *,
        log_failure: bool,
    ) -> bool:
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(_SQL.upsert, rows)
            if entries:
                conn.executemany(_SQL.cache_put, entries)
                if self.cache_limit is not None:
                    conn.execute(_SQL.cache_trim, (self.cache_limit,))
            conn.execute("COMMIT")
        except Exception:
            if log_failure:
                logger.exception(
                    "could not store %d score records (run_id %s) and %d cache entries",
                    len(rows),
                    ", ".join(str(row[0]) for row in rows) or "-",
                    len(entries),
                )
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            return False
        return True
