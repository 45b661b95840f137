"""The score store on PostgreSQL, shared by every gateway (and scorer) that reaches it.

The same contract as the SQLite engine: `submit()` returns at once and a
single writer task commits what was submitted, in order, up to `batch_max`
records a transaction; a batch that fails is retried record by record, so one
bad record is all that is lost. Reads go through the same small pool.

Several replicas start at once safely: migrations run under an advisory lock
(`gateway.store.migrations`). Unlike SQLite, a starting replica never marks
`pending` records dropped: on a shared database they may be other replicas'
live work.

The driver is asyncpg; see the README ("Running several gateways") for the
measurement behind the choice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any, Literal

from gateway.store.migrations import migrate_postgres
from gateway.store.records import (
    COLUMNS,
    STATUSES,
    CacheEntry,
    ScoreRecord,
    StoreError,
    batch_rows,
    check_record,
    record_from_row,
    record_row,
)
from guard.outputs import valid_text

__all__ = ["PostgresStore", "redacted_url"]

logger = logging.getLogger("gateway.store")

_UPSERT = (
    f"INSERT INTO scores ({', '.join(COLUMNS)})"
    f" VALUES ({', '.join(f'${n}' for n in range(1, len(COLUMNS) + 1))})"
    " ON CONFLICT (run_id) DO UPDATE SET "
    + ", ".join(f"{name} = excluded.{name}" for name in COLUMNS if name != "run_id")
)
_SELECT = f"SELECT {', '.join(COLUMNS)} FROM scores WHERE run_id = $1"
# A re-judged key takes a new, highest seq, as in the SQLite engine.
_CACHE_PUT = (
    "INSERT INTO score_cache (key, result, stored_at) VALUES ($1, $2, $3)"
    " ON CONFLICT (key) DO UPDATE SET result = excluded.result,"
    " stored_at = excluded.stored_at, seq = nextval(pg_get_serial_sequence('score_cache', 'seq'))"
)
# By rank, not by `MAX(seq) - limit`: a sequence has gaps (an upsert that updates
# still draws a value for the insert it did not do).
_CACHE_TRIM = (
    "DELETE FROM score_cache WHERE seq <"
    " (SELECT seq FROM score_cache ORDER BY seq DESC OFFSET $1 - 1 LIMIT 1)"
)
_CACHE_LOAD = (
    "SELECT key, result FROM"
    " (SELECT seq, key, result FROM score_cache ORDER BY seq DESC LIMIT $1) AS newest ORDER BY seq"
)


_PRUNE_RECORDS = (
    "DELETE FROM scores WHERE run_id IN (SELECT run_id FROM scores"
    " WHERE created_at < $1 AND status <> 'pending' LIMIT $2)"
)
_PRUNE_CACHE = (
    "DELETE FROM score_cache WHERE seq IN"
    " (SELECT seq FROM score_cache WHERE stored_at < $1 LIMIT $2)"
)


def redacted_url(url: str) -> str:
    """`url` with its password, if any, replaced by `****`: safe for logs and errors."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at or ":" not in credentials:
        return url
    user = credentials.split(":", 1)[0]
    return f"{scheme}{sep}{user}:****@{host}"


async def _keep_session(connection: Any) -> None:
    """The pool's `reset` on release: nothing. The store changes no session state (no
    SET, no LISTEN, no session locks), and skipping asyncpg's reset query took point
    lookups from 2,543 to 4,309 a second at c=1 (bench/results/store-drivers-2026-12-01-1315.md)."""


@dataclass(slots=True)
class _Barrier:
    future: asyncio.Future[None]


class _Stop:
    pass


def _to_row(record: ScoreRecord) -> tuple[object, ...]:
    return record_row(record, boolean=bool, text=_postgres_text)


def _postgres_text(value: str) -> str:
    """PostgreSQL text holds no NUL and no unpaired surrogate."""
    return valid_text(value).replace("\x00", "\ufffd")


class PostgresStore:
    """Score records in PostgreSQL. `await open()` before use, `await close()` at the end."""

    engine = "postgresql"

    def __init__(
        self, url: str, *, batch_max: int = 512, linger: float = 0.005, pool_size: int = 4
    ) -> None:
        if batch_max < 1:
            raise ValueError(f"batch_max must be >= 1, got {batch_max}")
        self._url = url
        self._batch_max = batch_max
        self._linger = linger
        self._pool_size = pool_size
        self._pool: Any = None
        self._queue: asyncio.Queue[ScoreRecord | CacheEntry | _Barrier | _Stop] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._cache_limit: int | None = None
        self._state: Literal["new", "running", "closed"] = "new"

    def describe(self) -> str:
        return redacted_url(self._url)

    async def open(self, *, sweep_pending: bool = True) -> None:
        """Connect, run the migrations, and start the writer. `sweep_pending` is ignored:
        on a shared database a `pending` record may be another replica's live work."""
        import asyncpg

        if self._state != "new":
            raise RuntimeError("the score store can only be opened once")
        try:
            self._pool = await asyncpg.create_pool(
                self._url,
                min_size=1,
                max_size=self._pool_size,
                command_timeout=30,
                reset=_keep_session,
            )
            async with self._pool.acquire() as conn:
                applied = await migrate_postgres(conn)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            if self._pool is not None:
                await self._pool.close()
                self._pool = None
            raise StoreError(f"cannot open score store {self.describe()}: {exc}") from exc
        if applied:
            logger.info("score store %s migrated to version %d", self.describe(), applied[-1])
        self._writer = asyncio.create_task(self._run(), name="gateway-store-writer")
        self._state = "running"

    def _require(self, state: str = "running") -> None:
        if self._state != state:
            raise RuntimeError(
                f"the score store is {'closed' if self._state == 'closed' else 'not started'}"
            )

    def submit(self, record: ScoreRecord) -> None:
        """Queue an upsert of the whole record; returns at once (on the store's loop)."""
        snapshot = check_record(record)
        self._require()
        self._queue.put_nowait(snapshot)

    def keep_cache(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self._cache_limit = limit

    def put_cache(self, entry: CacheEntry) -> None:
        self._require()
        self._queue.put_nowait(entry)

    async def cached(self, limit: int) -> list[CacheEntry]:
        """The `limit` newest stored cache entries, oldest first."""
        self._require()
        rows = await self._pool.fetch(_CACHE_LOAD, limit)
        return [CacheEntry(row[0], row[1]) for row in rows]

    async def cache_get(self, key: str) -> str | None:
        """One stored cache entry, whichever gateway stored it."""
        self._require()
        value: str | None = await self._pool.fetchval(
            "SELECT result FROM score_cache WHERE key = $1", key
        )
        return value

    async def flush(self) -> None:
        """Wait until every record submitted before this call is committed."""
        if self._state == "new":
            raise RuntimeError("the score store is not started")
        if self._state == "closed":
            if self._writer is not None:
                await asyncio.shield(self._writer)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Barrier(future))
        await future

    async def get(self, run_id: str) -> ScoreRecord | None:
        await self.flush()
        self._require()
        row = await self._pool.fetchrow(_SELECT, run_id)
        return None if row is None else record_from_row(row)

    async def status_counts(self) -> dict[str, int]:
        self._require()
        counts = dict.fromkeys(sorted(STATUSES), 0)
        rows = await self._pool.fetch("SELECT status, COUNT(*) FROM scores GROUP BY status")
        counts.update({row[0]: row[1] for row in rows})
        return counts

    async def prune(self, before: float, *, batch: int) -> int:
        """Delete up to `batch` final records created before `before`, and up to `batch`
        cache entries stored before it; returns how many went. Replicas pruning at
        once only share the work."""
        self._require()
        async with self._pool.acquire() as conn, conn.transaction():
            records = await conn.execute(_PRUNE_RECORDS, before, batch)
            entries = await conn.execute(_PRUNE_CACHE, before, batch)
        # asyncpg answers a DELETE with its command tag: "DELETE <count>".
        return int(records.split()[-1]) + int(entries.split()[-1])

    async def ping(self) -> None:
        """Raise `StoreError` unless the database answers."""
        import asyncpg

        self._require()
        try:
            await self._pool.fetchval("SELECT 1", timeout=5)
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StoreError(f"score store {self.describe()} does not answer: {exc}") from exc

    async def close(self) -> None:
        """Commit what was submitted, stop the writer and close the pool. Idempotent."""
        state, self._state = self._state, "closed"
        if state == "running":
            self._queue.put_nowait(_Stop())
        if self._writer is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._writer)
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    # -- the writer task ----------------------------------------------------------

    async def _run(self) -> None:
        stop = False
        while not stop:
            items, barriers, stop = await self._next_batch()
            try:
                await self._write(items)
            except Exception:  # the writer must outlive any one failure
                logger.exception("score store writer failed on a batch of %d", len(items))
            for barrier in barriers:
                if not barrier.future.done():
                    barrier.future.set_result(None)

    async def _next_batch(
        self,
    ) -> tuple[list[ScoreRecord | CacheEntry], list[_Barrier], bool]:
        items: list[ScoreRecord | CacheEntry] = []
        barriers: list[_Barrier] = []
        item = await self._queue.get()
        deadline: float | None = None
        while True:
            if isinstance(item, _Stop):
                return items, barriers, True
            if isinstance(item, _Barrier):
                barriers.append(item)
                return items, barriers, False
            items.append(item)
            if len(items) >= self._batch_max:
                return items, barriers, False
            try:
                item = self._queue.get_nowait()
                continue
            except asyncio.QueueEmpty:
                pass
            # As on SQLite: a short linger lets a burst share one commit.
            if deadline is None:
                deadline = time.monotonic() + self._linger
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return items, barriers, False
            try:
                item = await asyncio.wait_for(self._queue.get(), remaining)
            except TimeoutError:
                return items, barriers, False

    async def _write(self, items: list[ScoreRecord | CacheEntry]) -> None:
        rows, entries = batch_rows(items, _to_row)
        if not rows and not entries:
            return
        if len(rows) + len(entries) == 1:
            await self._commit(rows, entries, log_failure=True)
            return
        if await self._commit(rows, entries, log_failure=False):
            return
        logger.warning(
            "a batch of %d score records and %d cache entries failed; storing them one by one",
            len(rows),
            len(entries),
        )
        for row in rows:
            await self._commit([row], [], log_failure=True)
        for entry in entries:
            await self._commit([], [entry], log_failure=True)

    async def _commit(
        self,
        rows: list[tuple[object, ...]],
        entries: list[tuple[str, str, float]],
        *,
        log_failure: bool,
    ) -> bool:
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                if rows:
                    await conn.executemany(_UPSERT, rows)
                if entries:
                    await conn.executemany(_CACHE_PUT, entries)
                    if self._cache_limit is not None:
                        await conn.execute(_CACHE_TRIM, self._cache_limit)
        except Exception:
            if log_failure:
                logger.exception(
                    "could not store %d score records (run_id %s) and %d cache entries",
                    len(rows),
                    ", ".join(str(row[0]) for row in rows) or "-",
                    len(entries),
                )
            return False
        return True
