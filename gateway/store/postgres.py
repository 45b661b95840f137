"""The score store on PostgreSQL, shared by every gateway (and scorer) that reaches it.

The same contract as the SQLite engine: `submit()` returns at once and the
store's writer (`gateway.store.writer`) commits what was submitted, in order,
up to `batch_max` records at a time, each batch one executemany. Reads go
through the same small pool.

Several replicas start at once safely: migrations run under an advisory lock
(`gateway.store.migrations`). Unlike SQLite, a starting replica never sweeps
`pending` records: on a shared database they may be other replicas' live
work. Work a dead process held comes back when its lease lapses (`expire`).

The driver is asyncpg; bench/results/README.md (the store drivers) says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from gateway.store.dialect import POSTGRES, Statements
from gateway.store.migrations import migrate_postgres
from gateway.store.outage import Backlog
from gateway.store.postgres_outage import is_outage, reading
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
    record_row,
    rows_of,
)
from gateway.store.whatif import WhatIf, WhatIfQuery, whatif_result, whatif_sql
from gateway.store.writer import Batch, DroppedHook, Writer
from guard.outputs import valid_text

__all__ = ["WORK_CHANNEL", "PostgresStore", "redacted_url"]

logger = logging.getLogger("gateway.store")

_SQL = Statements.of(POSTGRES)
_PROBES = ProbeStatements.of(POSTGRES)
# New work wakes idle scorers: a NOTIFY once the batch that stores it is committed,
# delivered to every session LISTENing (`wait_for_work`).
WORK_CHANNEL = "bias_work"
_PING_SECONDS = 5.0


def _count(tag: str) -> int:
    """The row count of asyncpg's command tag ("UPDATE 3")."""
    return int(tag.split()[-1])


def redacted_url(url: str) -> str:
    """`url` with its password, if any, replaced by `****`: safe for logs and errors."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at or ":" not in credentials:
        return url
    user = credentials.split(":", 1)[0]
    return f"{scheme}{sep}{user}:****@{host}"


async def _keep_session(connection: Any) -> None:
    """The pool's `reset` on release: nothing. The store changes no session state, and
    asyncpg's reset query costs a round trip (bench/results/store-drivers-2026-12-01-1315.md)."""


def _to_row(record: ScoreRecord) -> tuple[object, ...]:
    return record_row(record, boolean=bool, text=_postgres_text)


def _postgres_text(value: str) -> str:
    """PostgreSQL text holds no NUL and no unpaired surrogate."""
    return valid_text(value).replace("\x00", "\ufffd")


class PostgresStore:
    """Score records in PostgreSQL. `await open()` before use, `await close()` at the end."""

    engine = POSTGRES.name
    shared = True  # gateways and scorers on any host share it, the score cache too
    notifies = True  # new work is announced (LISTEN/NOTIFY)

    def __init__(
        self,
        url: str,
        *,
        batch_max: int = 512,
        linger: float = 0.005,
        pool_size: int = 4,
        clock: Callable[[], float] = time.time,
        buffer_records: int = 10_000,
        on_dropped: DroppedHook | None = None,
    ) -> None:
        self._url = url
        self._clock = clock  # wall-clock seconds of leases (a test's own, to skip the wait)
        self._pool_size = pool_size
        self._pool: Any = None
        self._reads: Any = None
        self._writer = Writer(
            self._write_batch,
            batch_max=batch_max,
            linger=linger,
            buffer_records=buffer_records,
            is_outage=is_outage,
            on_dropped=on_dropped,
        )
        self._listener: Any = None  # a connection of its own, outside the pool
        self._woken = asyncio.Event()

    def describe(self) -> str:
        return redacted_url(self._url)

    async def open(self, *, sweep_pending: bool = True) -> None:
        """Connect, run the migrations, and start the writer. `sweep_pending` is ignored:
        on a shared database a `pending` record may be another replica's live work."""
        import asyncpg

        self._writer.require_new()
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
            # Search and stats get a pool of their own that plans every query for its
            # values: a prepared statement's generic plan guessed a tiny time window and
            # made wide-window stats many times slower
            # (bench/results/store-queries-2026-12-01-1542.md).
            self._reads = await asyncpg.create_pool(
                self._url,
                min_size=0,
                max_size=2,
                command_timeout=30,
                reset=_keep_session,
                server_settings={"plan_cache_mode": "force_custom_plan"},
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            if self._pool is not None:
                await self._pool.close()
                self._pool = None
            raise StoreError(f"cannot open score store {self.describe()}: {exc}") from exc
        if applied:
            logger.info("score store %s migrated to version %d", self.describe(), applied[-1])
        self._writer.start()

    def _require(self) -> None:
        self._writer.require()

    def submit(self, record: ScoreRecord) -> None:
        """Queue an upsert of the whole record; returns at once, from any thread."""
        self._writer.put(check_record(record))

    def keep_cache(self, limit: int) -> None:
        self._writer.keep_cache(limit)

    def put_cache(self, entry: CacheEntry) -> None:
        self._writer.put(entry)

    async def cached(self, limit: int) -> list[CacheEntry]:
        """The `limit` newest stored cache entries, oldest first."""
        self._require()
        rows = await self._pool.fetch(_SQL.cache_load, limit)
        return [CacheEntry(row[0], row[1]) for row in rows]

    async def cache_get(self, key: str) -> str | None:
        """One stored cache entry, whichever gateway stored it. While the database is
        away, a miss at once: a scoring must not queue for the pool behind it."""
        self._require()
        if self._writer.outage.down:
            return None
        value: str | None = await self._pool.fetchval(_SQL.cache_get, key)
        return value

    async def flush(self) -> None:
        """Wait until every record submitted before this call is committed."""
        await self._writer.flush()

    async def get(self, run_id: str) -> ScoreRecord | None:
        """The newest record of `run_id`: still held by the writer (the database away),
        else the stored one."""
        await self.flush()
        self._require()
        held = self._writer.held(run_id)
        if held is not None:
            return held
        async with reading(self.describe()):
            row = await self._pool.fetchrow(_SQL.select, run_id)
        return None if row is None else record_from_row(row)

    def backlog(self) -> Backlog:
        return self._writer.backlog()

    async def status_counts(self) -> dict[str, int]:
        self._require()
        counts: dict[str, int] = dict.fromkeys(sorted(STATUSES), 0)
        async with reading(self.describe()):
            rows = await self._pool.fetch(_SQL.counts)
        counts.update({row[0]: row[1] for row in rows})
        return counts

    async def prune(self, before: float, *, batch: int) -> int:
        """Delete up to `batch` final records, cache entries and reviews made before
        `before`; returns how many went. Replicas pruning at once only share the work."""
        self._require()
        async with self._pool.acquire() as conn, conn.transaction():
            prunes = (_SQL.prune_records, _SQL.prune_cache, _SQL.prune_reviews, _PROBES.prune)
            return sum([_count(await conn.execute(sql, before, batch)) for sql in prunes])

    async def insert(self, sql: str, values: list[object]) -> list[Any]:
        self._require()
        async with reading(self.describe()):
            return list(await self._pool.fetch(sql, *values))

    # -- durable work (`gateway.work.payload`) ----------------------------------------------

    async def claim(
        self, worker: str, *, limit: int, lease_seconds: float, max_attempts: int
    ) -> list[ScoreRecord]:
        self._require()
        now = self._clock()
        rows = await self._pool.fetch(
            _SQL.claim, now + lease_seconds, worker, now, max_attempts, limit
        )
        return sorted((record_from_row(row) for row in rows), key=lambda r: r.created_at)

    async def renew(self, worker: str, *, lease_seconds: float) -> int:
        self._require()
        until = self._clock() + lease_seconds
        return _count(await self._pool.execute(_SQL.renew, until, worker))

    async def release(self, worker: str, run_ids: list[str] | None = None) -> int:
        self._require()
        if run_ids is None:
            return _count(await self._pool.execute(_SQL.release, worker))
        some = _SQL.release_some(len(run_ids))
        return _count(await self._pool.execute(some, worker, *POSTGRES.list_values(run_ids)))

    async def expire(self, *, max_attempts: int) -> list[tuple[str, str]]:
        self._require()
        now = self._clock()
        async with self._pool.acquire() as conn, conn.transaction():
            exhausted = await conn.fetch(_SQL.exhausted, now, max_attempts, now)
            lost = await conn.fetch(_SQL.lost, now, now)
        return [(row[0], "attempts_exhausted") for row in exhausted] + [
            (row[0], "gateway_lost") for row in lost
        ]

    async def pending_work(self) -> int:
        self._require()
        count: int = await self._pool.fetchval(_SQL.pending)
        return count

    async def listen(self) -> None:
        """LISTEN for new work on a connection of its own; `wait_for_work` then wakes
        as soon as any gateway commits work. A failure leaves `wait_for_work` polling."""
        import asyncpg

        self._require()
        if self._listener is not None and not self._listener.is_closed():
            return
        try:
            self._listener = await asyncpg.connect(self._url)
            await self._listener.add_listener(WORK_CHANNEL, self._on_work)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            logger.warning("cannot LISTEN on %s (%s); polling for work", self.describe(), exc)
            self._listener = None

    def _on_work(self, *_: object) -> None:
        self._woken.set()

    async def wait_for_work(self, timeout: float) -> None:
        """Until new work is announced, or `timeout` seconds."""
        if self._listener is None or self._listener.is_closed():
            await self.listen()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._woken.wait(), timeout)
        self._woken.clear()

    # -- search, stats, what-if and reviews (`queries`, `whatif`, `reviews`) -------------
    async def query(self, *statements: tuple[str, list[object]]) -> list[list[Any]]:
        """After a flush, each statement's rows, read through the pool of custom plans."""
        await self.flush()
        self._require()
        async with reading(self.describe()):
            return [await self._reads.fetch(sql, *values) for sql, values in statements]

    async def search(self, query: ScoreQuery) -> list[ScoreRecord]:
        """Up to `query.limit + 1` records, newest first (the extra one says "more")."""
        (rows,) = await self.query(search_sql(query, POSTGRES))
        return [record_from_row(row) for row in rows]

    async def stats(self, query: StatsQuery) -> list[StatsGroup]:
        rows, ranked = await self.query(stats_sql(query, POSTGRES), p90_sql(query, POSTGRES))
        return stats_rows(rows, {row[0]: row[1] for row in ranked}.get, group_by=query.group_by)

    async def whatif(self, query: WhatIfQuery) -> WhatIf:
        return whatif_result(query, *await self.query(*whatif_sql(query, POSTGRES)))

    async def add_probe_pairs(self, pairs: list[ProbePair]) -> None:
        self._require()
        await self._pool.executemany(_PROBES.insert, _PROBES.rows(pairs))

    async def probe_pairs(self, query: ProbeQuery) -> list[ProbePair]:
        (rows,) = await self.query(_PROBES.select(query))
        return [pair_from_row(row) for row in rows]

    async def ping(self) -> None:
        """Raise `StoreError` unless the database answers."""
        import asyncpg

        self._require()
        try:
            async with asyncio.timeout(_PING_SECONDS):  # the pool's queue included
                await self._pool.fetchval("SELECT 1")
        # InternalClientError: a pooled connection the server ended while a query ran on it.
        except (
            OSError,
            TimeoutError,
            asyncpg.PostgresError,
            asyncpg.InterfaceError,
            asyncpg.InternalClientError,
        ) as exc:
            raise StoreError(f"score store {self.describe()} does not answer: {exc}") from exc

    async def close(self) -> None:
        """Commit what was submitted, stop the writer and close the pool. Idempotent."""
        await self._writer.stop()
        if self._listener is not None:
            listener, self._listener = self._listener, None
            with contextlib.suppress(Exception):  # closing: a dead connection is fine
                await listener.close()
        pools, self._reads, self._pool = (self._reads, self._pool), None, None
        for pool in pools:
            if pool is not None:
                await pool.close()

    async def _write_batch(self, batch: Batch) -> None:
        """The writer's commit: one executemany, then the NOTIFY of new work."""
        rows = rows_of(batch.records, _to_row)
        async with self._pool.acquire() as conn:
            if batch.entries:
                async with conn.transaction():
                    if rows:
                        await conn.executemany(_SQL.upsert, rows)
                    await conn.executemany(_SQL.cache_put, batch.entries)
                    if batch.cache_limit is not None:
                        await conn.execute(_SQL.cache_trim, batch.cache_limit)
            elif rows:
                # executemany is one transaction of its own: no BEGIN and COMMIT round trips.
                await conn.executemany(_SQL.upsert, rows)
            if batch.announce:
                # After the commit, so that a woken scorer finds the work.
                await conn.execute(f"NOTIFY {WORK_CHANNEL}")
