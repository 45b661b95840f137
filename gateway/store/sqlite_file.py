"""The SQLite file beneath `SQLiteStore`: its connections, opening and migrating it with
the sweep of what the last run left pending, committing one batch, and telling a file
that cannot be written for now from a record it refuses."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from pathlib import Path

from gateway.store.dialect import SQLITE, Statements
from gateway.store.migrations import migrate_sqlite
from gateway.store.records import ScoreRecord, StoreError, record_row, rows_of
from gateway.store.writer import Batch
from guard.outputs import valid_text

__all__ = ["commit_batch", "connect", "is_outage", "open_file", "to_row"]

logger = logging.getLogger("gateway.store")

_SQL = Statements.of(SQLITE)
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


def connect(path: Path) -> sqlite3.Connection:
    # isolation_level=None: transactions are explicit, so the writer can BEGIN IMMEDIATE
    # (take the write lock up front, honouring busy_timeout) instead of upgrading later.
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
    return conn


def to_row(record: ScoreRecord) -> tuple[object, ...]:
    # SQLite takes UTF-8: an unpaired surrogate (valid escaped JSON) becomes U+FFFD.
    return record_row(record, boolean=int, text=valid_text)


def open_file(path: Path, sweep_pending: bool) -> tuple[sqlite3.Connection, sqlite3.Connection]:
    """The write and read connections of the migrated file, after the sweep."""
    if not path.parent.is_dir():
        # Never a folder of its own making: the store lives where it was told.
        raise StoreError(f"cannot open score store {path}: folder {path.parent} does not exist")
    opened: list[sqlite3.Connection] = []
    try:
        conn = connect(path)
        opened.append(conn)
        (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if str(mode).lower() != "wal":
            raise StoreError(f"score store {path}: WAL mode unavailable ({mode})")
        conn.execute("PRAGMA synchronous = NORMAL")
        migrate_sqlite(conn)
        if sweep_pending:
            dropped = conn.execute(_DROP_PENDING, (time.time(),)).rowcount
            resumed = conn.execute(_RESUME_PENDING).rowcount
            if dropped:
                logger.warning(
                    "marked %d pending score records dropped (gateway_restarted)", dropped
                )
            if resumed:
                logger.warning("resuming %d pending scorings left by the last run", resumed)
        reader = connect(path)
        opened.append(reader)
        reader.execute("PRAGMA query_only = ON")
    except BaseException as exc:
        for each in opened:
            each.close()
        if isinstance(exc, OSError | sqlite3.Error):
            raise StoreError(f"cannot open score store {path}: {exc}") from exc
        raise
    return conn, reader


# What SQLite says when the file cannot be written for now: a full disk, a read-only
# file or filesystem, an I/O error, a lock held too long. The record is not at fault.
_AWAY = ("disk is full", "readonly", "read-only", "disk i/o error", "locked", "unable to open")


def is_outage(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return True
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    message = str(exc).lower()
    return any(words in message for words in _AWAY)


def commit_batch(conn: sqlite3.Connection, batch: Batch) -> None:
    """Commit `batch` in one transaction, on the writer thread. Whatever fails (a
    database error, or anything else the driver raises on a value) is rolled back,
    so the connection is never left inside a transaction."""
    try:
        rows = rows_of(batch.records, to_row)
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(_SQL.upsert, rows)
        if batch.entries:
            conn.executemany(_SQL.cache_put, batch.entries)
            if batch.cache_limit is not None:
                conn.execute(_SQL.cache_trim, (batch.cache_limit,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise
