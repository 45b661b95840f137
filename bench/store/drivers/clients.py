"""The two drivers, asyncpg and psycopg 3: each gives a writer connection, three upsert
paths, a pool for lookups, the two claims and a LISTEN/NOTIFY round.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from bench.store.drivers.libs import asyncpg, psycopg, psycopg_pool
from bench.store.drivers.sql import (
    CACHE_LIMIT,
    CHANNEL,
    COLUMNS,
    MERGE,
    POOL_SIZE,
    TEMP_TABLE,
    Batch,
    Writer,
    cache_put_sql,
    cache_trim_sql,
    cache_unnest_sql,
    claim_one_sql,
    claim_select_sql,
    claim_update_sql,
    notify_sql,
    select_sql,
    unnest_sql,
    upsert_sql,
)
from gateway.store import ScoreRecord


def _record(values: Sequence[Any]) -> ScoreRecord:
    record = ScoreRecord(*values)
    if isinstance(record.result, str):
        record.result = json.loads(record.result)
    return record


class AsyncpgDriver:
    name = "asyncpg"

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.upsert = upsert_sql("dollar")
        self.unnest = unnest_sql("dollar")
        self.cache_put = cache_put_sql("dollar")
        self.cache_unnest = cache_unnest_sql("dollar")
        self.cache_trim = cache_trim_sql("dollar")
        self.select = select_sql("dollar")
        self.claim_update = claim_update_sql("dollar")
        self.claim_one = claim_one_sql("dollar")

    def paths(self) -> dict[str, Writer]:
        return {
            "executemany": self.write_executemany,
            "unnest": self.write_unnest,
            "copy+merge": self.write_copy,
        }

    async def connect(self, *, synchronous_commit: bool = True) -> Any:
        settings = {} if synchronous_commit else {"synchronous_commit": "off"}
        return await asyncpg.connect(self.dsn, server_settings=settings)

    async def prepare_writer(self, conn: Any, path: str) -> None:
        if path == "copy+merge":
            await conn.execute(TEMP_TABLE)

    async def close(self, conn: Any) -> None:
        await conn.close()

    async def _cache(self, conn: Any, batch: Batch, *, unnest: bool) -> None:
        if unnest:
            keys, results, stamps = (list(column) for column in zip(*batch.cache, strict=True))
            await conn.execute(self.cache_unnest, keys, results, stamps)
        else:
            await conn.executemany(self.cache_put, batch.cache)
        await conn.execute(self.cache_trim, CACHE_LIMIT)

    # executemany and a single statement are atomic on their own (one Sync): a batch
    # without cache entries needs no BEGIN/COMMIT round trips.
    async def write_executemany(self, conn: Any, batch: Batch) -> None:
        if not batch.cache:
            if len(batch.rows) == 1:
                await conn.execute(self.upsert, *batch.rows[0])
            else:
                await conn.executemany(self.upsert, batch.rows)
            return
        async with conn.transaction():
            await conn.executemany(self.upsert, batch.rows)
            await self._cache(conn, batch, unnest=False)

    async def write_unnest(self, conn: Any, batch: Batch) -> None:
        if not batch.cache:
            await conn.execute(self.unnest, *batch.columns)
            return
        async with conn.transaction():
            await conn.execute(self.unnest, *batch.columns)
            await self._cache(conn, batch, unnest=True)

    async def write_copy(self, conn: Any, batch: Batch) -> None:
        async with conn.transaction():
            await conn.copy_records_to_table("scores_in", records=batch.rows, columns=COLUMNS)
            await conn.execute(MERGE)
            if batch.cache:
                await self._cache(conn, batch, unnest=False)

    def pool_variants(self) -> dict[str, dict[str, Any]]:
        return {"pool": {}, "pool, reset=no-op": {"reset": _asyncpg_no_reset}}

    async def open_pool(self, options: dict[str, Any]) -> Any:
        return await asyncpg.create_pool(
            self.dsn, min_size=POOL_SIZE, max_size=POOL_SIZE, **options
        )

    async def close_pool(self, pool: Any) -> None:
        await pool.close()

    async def lookup(self, pool: Any, run_id: str) -> ScoreRecord | None:
        async with pool.acquire() as conn:
            row = await conn.fetchrow(self.select, run_id)
        return None if row is None else _record(row)

    async def claim_two(self, conn: Any, worker: int) -> bool:
        async with conn.transaction():
            row = await conn.fetchrow(claim_select_sql())
            if row is None:
                return False
            await conn.execute(self.claim_update, worker, time.time(), row[0])
        return True

    async def claim_one_statement(self, conn: Any, worker: int) -> bool:
        return await conn.fetchrow(self.claim_one, worker, time.time()) is not None

    async def notify_round(self, count: int) -> tuple[list[float], list[float]]:
        loop = asyncio.get_running_loop()
        listener = await asyncpg.connect(self.dsn)
        sender = await asyncpg.connect(self.dsn)
        waiting: list[asyncio.Future[float]] = []

        def on_notify(_conn: Any, _pid: int, _channel: str, _payload: str) -> None:
            now = time.perf_counter()
            if waiting and not waiting[0].done():
                waiting[0].set_result(now)

        try:
            await listener.add_listener(CHANNEL, on_notify)
            sql = notify_sql("dollar")

            async def send(payload: str) -> None:
                await sender.fetchval(sql, CHANNEL, payload)

            return await _notify_loop(loop, waiting, send, count)
        finally:
            await listener.close()
            await sender.close()


async def _asyncpg_no_reset(_conn: Any) -> None:
    """A pool `reset` that skips the reset query (the connections change no session state)."""


class PsycopgDriver:
    name = "psycopg"

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.upsert = upsert_sql("format")
        self.unnest = unnest_sql("format")
        self.cache_put = cache_put_sql("format")
        self.cache_unnest = cache_unnest_sql("format")
        self.cache_trim = cache_trim_sql("format")
        self.select = select_sql("format")
        self.claim_update = claim_update_sql("format")
        self.claim_one = claim_one_sql("format")

    def paths(self) -> dict[str, Writer]:
        return {
            "executemany": self.write_executemany,
            "unnest": self.write_unnest,
            "copy+merge": self.write_copy,
        }

    async def connect(self, *, synchronous_commit: bool = True) -> Any:
        # psycopg leaves out a connection parameter that is None.
        options = None if synchronous_commit else "-c synchronous_commit=off"
        return await psycopg.AsyncConnection.connect(self.dsn, autocommit=True, options=options)

    async def prepare_writer(self, conn: Any, path: str) -> None:
        if path == "copy+merge":
            await conn.execute(TEMP_TABLE)

    async def close(self, conn: Any) -> None:
        await conn.close()

    async def _cache(self, cur: Any, batch: Batch, *, unnest: bool) -> None:
        if unnest:
            keys, results, stamps = (list(column) for column in zip(*batch.cache, strict=True))
            await cur.execute(self.cache_unnest, (keys, results, stamps))
        else:
            await cur.executemany(self.cache_put, batch.cache)
        await cur.execute(self.cache_trim, (CACHE_LIMIT,))

    # Pipeline mode sends BEGIN, the statements and COMMIT without waiting in between.
    # A lone statement in autocommit is its own transaction: a batch without cache
    # entries skips BEGIN/COMMIT (and the pipeline, which cost 540 us CPU a batch of 1
    # against 200 us without, here).
    async def write_executemany(self, conn: Any, batch: Batch) -> None:
        if not batch.cache and len(batch.rows) == 1:
            await conn.execute(self.upsert, batch.rows[0])
            return
        async with conn.pipeline(), conn.transaction(), conn.cursor() as cur:
            await cur.executemany(self.upsert, batch.rows)
            if batch.cache:
                await self._cache(cur, batch, unnest=False)

    async def write_unnest(self, conn: Any, batch: Batch) -> None:
        if not batch.cache:
            await conn.execute(self.unnest, batch.columns)
            return
        async with conn.pipeline(), conn.transaction(), conn.cursor() as cur:
            await cur.execute(self.unnest, batch.columns)
            if batch.cache:
                await self._cache(cur, batch, unnest=True)

    async def write_copy(self, conn: Any, batch: Batch) -> None:
        # COPY cannot run in pipeline mode.
        async with conn.transaction(), conn.cursor() as cur:
            async with cur.copy(f"COPY scores_in ({', '.join(COLUMNS)}) FROM STDIN") as copy:
                for row in batch.rows:
                    await copy.write_row(row)
            await cur.execute(MERGE)
            if batch.cache:
                async with conn.pipeline():
                    await self._cache(cur, batch, unnest=False)

    def pool_variants(self) -> dict[str, dict[str, Any]]:
        # Without autocommit every lookup is BEGIN, SELECT, COMMIT (pool.connection()
        # commits on exit): three round trips instead of one.
        return {"pool, autocommit": {"autocommit": True}, "pool, default": {}}

    async def open_pool(self, options: dict[str, Any]) -> Any:
        pool = psycopg_pool.AsyncConnectionPool(
            self.dsn, min_size=POOL_SIZE, max_size=POOL_SIZE, kwargs=options, open=False
        )
        await pool.open(wait=True)
        return pool

    async def close_pool(self, pool: Any) -> None:
        await pool.close()

    async def lookup(self, pool: Any, run_id: str) -> ScoreRecord | None:
        async with pool.connection() as conn:
            cur = await conn.execute(self.select, (run_id,), binary=True)
            row = await cur.fetchone()
        return None if row is None else _record(row)

    async def claim_two(self, conn: Any, worker: int) -> bool:
        async with conn.transaction():
            cur = await conn.execute(claim_select_sql())
            row = await cur.fetchone()
            if row is None:
                return False
            await conn.execute(self.claim_update, (worker, time.time(), row[0]))
        return True

    async def claim_one_statement(self, conn: Any, worker: int) -> bool:
        cur = await conn.execute(self.claim_one, (worker, time.time()))
        return await cur.fetchone() is not None

    async def notify_round(self, count: int) -> tuple[list[float], list[float]]:
        loop = asyncio.get_running_loop()
        listener = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        sender = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        waiting: list[asyncio.Future[float]] = []

        def on_notify(_notify: Any) -> None:
            now = time.perf_counter()
            if waiting and not waiting[0].done():
                waiting[0].set_result(now)

        async def listen() -> None:
            # add_notify_handler() alone fires only while the connection runs a query.
            async for notify in listener.notifies():
                on_notify(notify)

        await listener.execute(f"LISTEN {CHANNEL}")
        task = asyncio.create_task(listen())
        sql = notify_sql("format")
        try:

            async def send(payload: str) -> None:
                await sender.execute(sql, (CHANNEL, payload))

            return await _notify_loop(loop, waiting, send, count)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, psycopg.Error):
                await task
            await listener.close()
            await sender.close()


async def _notify_loop(
    loop: asyncio.AbstractEventLoop,
    waiting: list[asyncio.Future[float]],
    send: Callable[[str], Awaitable[None]],
    count: int,
) -> tuple[list[float], list[float]]:
    """Wake-up latencies (send start to callback) and the NOTIFY round trips, in seconds."""
    wakes: list[float] = []
    sends: list[float] = []
    for index in range(count + 20):  # the first 20 warm up
        future: asyncio.Future[float] = loop.create_future()
        waiting[:] = [future]
        started = time.perf_counter()
        await send(str(index))
        sent = time.perf_counter()
        woke = await asyncio.wait_for(future, 5)
        if index >= 20:
            wakes.append(woke - started)
            sends.append(sent - started)
        await asyncio.sleep(0.001)  # idle between wake-ups, as a listener mostly is
    return wakes, sends


Driver = AsyncpgDriver | PsycopgDriver
