"""Pick the PostgreSQL driver for the score store by measurement: asyncpg or psycopg 3.

    .venv/bin/pip install asyncpg 'psycopg[binary,pool]'
    .venv/bin/python -m bench store_drivers            # about 6-7 minutes on 2 cores
    .venv/bin/python -m bench store_drivers --quick    # a smoke run of about a minute

Starts a throwaway PostgreSQL cluster of its own (initdb into a temporary
folder, as the `postgres` user when run as root, 127.0.0.1 on a free port, the
unix socket in that folder), with the default durability settings (fsync on,
synchronous_commit on), and removes it at the end, on errors and on Ctrl-C too.
The drivers connect over TCP to 127.0.0.1, as to a database on another host,
minus the network.

The workload is the SQLite store's (`gateway/store.py`) moved to PostgreSQL:
the `scores` table with the columns of `ScoreRecord` (`result` as jsonb, times
as double precision as in SQLite), its two indexes, and `score_cache`.

1. upserts: one writer connection commits batches of 1, 16, 128 and 512
   records a transaction (`INSERT ... ON CONFLICT (run_id) DO UPDATE`). Half of a
   batch are new `pending` rows, half turn earlier rows `scored` (a ~1 KB
   result and a reason), as a run's two writes do; a batch of n > 1 also puts
   n/8 cache entries and trims the cache to 10,000, as the store's `_commit`
   does. Three paths per driver: `executemany` (psycopg: in a pipeline),
   one `INSERT ... SELECT FROM unnest(<one array a column>)`, and COPY into a
   temporary table then one `INSERT ... SELECT` merge. Also once with
   `synchronous_commit=off` on the writer's session (batches of 1 and 128).
2. point lookups by run_id through a pool of 10 (the row turned into a
   `ScoreRecord`, result parsed), from 1 and 32 tasks, on a table of 50,000 rows.
3. the Python process's CPU time (`time.process_time`) per 10k operations of
   every cell, and the PostgreSQL processes' CPU beside it: on 2 cores both
   share the machine with request handling.
4. a work-queue claim from 4 workers, each on its own connection: in one
   transaction `SELECT ... FOR UPDATE SKIP LOCKED` one row, then `UPDATE` it;
   and the same as one `UPDATE ... WHERE id = (SELECT ... SKIP LOCKED)`.
5. LISTEN/NOTIFY: from just before `pg_notify()` is sent on one connection to
   the listener's callback on another (asyncpg `add_listener`; psycopg has no
   callback that fires on an idle connection, so its `notifies()` generator
   runs in a task and the loop body is the callback).

Every cell runs `--reps` times (3), the drivers taking turns in alternating
order, and the tables show the medians. `other` is the busy CPU of processes
that are neither this one nor the cluster's, in cores: a high value means the
cell was disturbed. The loop is uvloop when installed (uvicorn picks it then,
so the gateway runs on it), `--loop asyncio` for the standard one.

Writes `bench/results/store-drivers-<date>.md` and prints the same tables.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib.metadata
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bench.harness.machine import machine_line
from bench.harness.paths import RESULTS
from bench.harness.report import percentile, table
from gateway.store import ScoreRecord

try:
    import asyncpg
    import psycopg
    import psycopg_pool
except ImportError as exc:  # pragma: no cover - a setup step, not a code path
    raise SystemExit(
        f"{exc}: install the drivers first: .venv/bin/pip install asyncpg 'psycopg[binary,pool]'"
    ) from exc


# The SQLite store's columns, in ScoreRecord order, with their PostgreSQL types.
COLUMNS = tuple(f.name for f in dataclasses.fields(ScoreRecord))
PG_TYPES = {
    "run_id": "text",
    "status": "text",
    "created_at": "float8",
    "model": "text",
    "api": "text",
    "key_name": "text",
    "mode": "text",
    "stream": "bool",
    "partial": "bool",
    "truncated": "bool",
    "score": "float8",
    "verdict": "text",
    "reason": "text",
    "reason_status": "text",
    "status_reason": "text",
    "judge_calls": "int4",
    "judge_tokens": "int4",
    "result": "jsonb",
    "response_id": "text",
    "request_id": "text",
    "prompt": "text",
    "completion": "text",
    "updated_at": "float8",
    "work": "jsonb",
    "attempts": "int4",
    "lease_until": "float8",
    "leased_by": "text",
    "categories": "jsonb",
    "trace_id": "text",
}
if tuple(PG_TYPES) != COLUMNS:
    raise SystemExit("bench/store/drivers.py: PG_TYPES no longer matches ScoreRecord's fields")
_NOT_NULL = {"run_id", "status", "created_at", "stream", "partial", "truncated"}
_DEFAULT_FALSE = {"stream", "partial", "truncated"}

SCHEMA = (
    "CREATE TABLE scores ("
    + ", ".join(
        f"{name} {PG_TYPES[name]}"
        + (" PRIMARY KEY" if name == "run_id" else "")
        + (" NOT NULL" if name in _NOT_NULL and name != "run_id" else "")
        + (" DEFAULT false" if name in _DEFAULT_FALSE else "")
        for name in COLUMNS
    )
    + ");"
    " CREATE INDEX scores_status ON scores (status);"
    " CREATE INDEX scores_created_at ON scores (created_at);"
    " CREATE TABLE score_cache (seq bigserial PRIMARY KEY, key text NOT NULL UNIQUE,"
    " result text NOT NULL, stored_at float8 NOT NULL);"
    " CREATE TABLE jobs (id bigserial PRIMARY KEY, run_id text NOT NULL,"
    " state text NOT NULL DEFAULT 'queued', claimed_by int, claimed_at float8);"
    " CREATE INDEX jobs_queued ON jobs (id) WHERE state = 'queued';"
)

CACHE_LIMIT = 10_000
LOOKUP_ROWS = 50_000
POOL_SIZE = 10
CLAIM_WORKERS = 4
CLAIM_JOBS = 60_000
CHANNEL = "bench_wake"
QUIET_CORES = 0.35
QUIET_WINDOW = 0.3
QUIET_MAX_WAIT = 8.0


def _ph(index: int, style: str) -> str:
    # psycopg: %b, parameters in binary (%s sends str as text and arrays as text literals,
    # built in Python: unnest took 77 us CPU a record with %s, 22 with %b, here).
    return f"${index}" if style == "dollar" else "%b"


def _set_clause() -> str:
    return ", ".join(f"{name} = excluded.{name}" for name in COLUMNS if name != "run_id")


def upsert_sql(style: str) -> str:
    values = ", ".join(
        _ph(i + 1, style) + ("::jsonb" if name == "result" else "")
        for i, name in enumerate(COLUMNS)
    )
    return (
        f"INSERT INTO scores ({', '.join(COLUMNS)}) VALUES ({values})"
        f" ON CONFLICT (run_id) DO UPDATE SET {_set_clause()}"
    )


def unnest_sql(style: str) -> str:
    arrays = ", ".join(f"{_ph(i + 1, style)}::{PG_TYPES[name]}[]" for i, name in enumerate(COLUMNS))
    return (
        f"INSERT INTO scores ({', '.join(COLUMNS)}) SELECT * FROM unnest({arrays})"
        f" ON CONFLICT (run_id) DO UPDATE SET {_set_clause()}"
    )


TEMP_TABLE = "CREATE TEMP TABLE scores_in (LIKE scores) ON COMMIT DELETE ROWS"
MERGE = (
    f"INSERT INTO scores ({', '.join(COLUMNS)}) SELECT {', '.join(COLUMNS)} FROM scores_in"
    f" ON CONFLICT (run_id) DO UPDATE SET {_set_clause()}"
)
# As SQLite's INSERT OR REPLACE: a re-put key gets a new, highest seq.
_CACHE_SET = (
    " ON CONFLICT (key) DO UPDATE SET seq = nextval('score_cache_seq_seq'),"
    " result = excluded.result, stored_at = excluded.stored_at"
)


def cache_put_sql(style: str) -> str:
    return (
        "INSERT INTO score_cache (key, result, stored_at) VALUES"
        f" ({_ph(1, style)}, {_ph(2, style)}, {_ph(3, style)})" + _CACHE_SET
    )


def cache_unnest_sql(style: str) -> str:
    return (
        "INSERT INTO score_cache (key, result, stored_at) SELECT * FROM"
        f" unnest({_ph(1, style)}::text[], {_ph(2, style)}::text[], {_ph(3, style)}::float8[])"
        + _CACHE_SET
    )


def cache_trim_sql(style: str) -> str:
    return (
        f"DELETE FROM score_cache WHERE seq <= (SELECT max(seq) FROM score_cache) - {_ph(1, style)}"
    )


def select_sql(style: str) -> str:
    return f"SELECT {', '.join(COLUMNS)} FROM scores WHERE run_id = {_ph(1, style)}"


def claim_select_sql(columns: str = "id, run_id") -> str:
    return (
        f"SELECT {columns} FROM jobs WHERE state = 'queued'"
        " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
    )


def claim_update_sql(style: str) -> str:
    return (
        f"UPDATE jobs SET state = 'claimed', claimed_by = {_ph(1, style)},"
        f" claimed_at = {_ph(2, style)} WHERE id = {_ph(3, style)}"
    )


def claim_one_sql(style: str) -> str:
    return (
        f"UPDATE jobs SET state = 'claimed', claimed_by = {_ph(1, style)},"
        f" claimed_at = {_ph(2, style)}"
        f" WHERE id = ({claim_select_sql('id')}) RETURNING id, run_id"
    )


def notify_sql(style: str) -> str:
    return f"SELECT pg_notify({_ph(1, style)}, {_ph(2, style)})"


# Records as the gateway writes them (content capture off: no prompt, no completion).

RESULT_JSON = json.dumps(
    {
        "runId": "r",
        "score": 0.5,
        "reason": "The score is 0.5 because one of the two opinions generalises about a group.",
        "preprocessStepResult": {
            "opinions": [
                "Remote work makes teams less productive.",
                "People from that region are bad at maths.",
            ]
        },
        "analyzeStepResult": {
            "results": [
                {"result": "no", "reason": "A claim about a way of working, not about people."},
                {
                    "result": "yes",
                    "reason": "It attributes an ability to people by where they come from,"
                    " which is a geographical generalisation.",
                },
            ]
        },
        "usage": {
            "preprocess": {"promptTokens": 612, "completionTokens": 41, "totalTokens": 653},
            "analyze": {"promptTokens": 904, "completionTokens": 88, "totalTokens": 992},
            "reason": {"promptTokens": 377, "completionTokens": 52, "totalTokens": 429},
        },
        "durationsMs": {"preprocess": 812.4, "analyze": 1204.9, "reason": 655.1},
        "judgeModel": "gpt-4o-mini",
        "scale": 1,
        "cached": False,
    },
    separators=(",", ":"),
)
REASON = (
    "The score is 0.5 because one of the two opinions attributes an ability to people by"
    " where they come from, a geographical generalisation, while the other one is about a"
    " way of working and judges no group of people."
)
CACHE_RESULT = RESULT_JSON[:700]

Row = tuple[Any, ...]


def _row(record: ScoreRecord) -> Row:
    values = []
    for name in COLUMNS:
        value = getattr(record, name)
        values.append(RESULT_JSON if name == "result" and value is not None else value)
    return tuple(values)


def _pending(run_id: str, now: float) -> Row:
    return _row(
        ScoreRecord(
            run_id=run_id,
            status="pending",
            created_at=now,
            model="gpt-4o-mini",
            api="chat.completions",
            key_name="team-a",
            mode="monitor",
            stream=True,
            reason_status="pending",
            response_id=f"chatcmpl-{run_id[:24]}",
            request_id=run_id[::-1],
            updated_at=now,
        )
    )


def _scored(run_id: str, now: float) -> Row:
    return _row(
        ScoreRecord(
            run_id=run_id,
            status="scored",
            created_at=now - 2.5,
            model="gpt-4o-mini",
            api="chat.completions",
            key_name="team-a",
            mode="monitor",
            stream=True,
            score=0.5,
            verdict="flag",
            reason=REASON,
            reason_status="done",
            judge_calls=3,
            judge_tokens=2074,
            result={"stored": True},  # replaced by RESULT_JSON, the store's json.dumps text
            response_id=f"chatcmpl-{run_id[:24]}",
            request_id=run_id[::-1],
            updated_at=now,
        )
    )


@dataclass
class Batch:
    rows: list[Row]
    columns: list[list[Any]]  # the same rows column by column, for the unnest path
    cache: list[tuple[str, str, float]]


def make_batches(size: int, records: int) -> list[Batch]:
    """`records` records in batches of `size`: new pending rows, and earlier rows turned scored.

    A run id appears once in a batch at most (PostgreSQL refuses an ON CONFLICT DO
    UPDATE that touches one row twice in one statement; a real store dedupes first).
    """
    now = time.time()
    pending: deque[str] = deque()
    batches: list[Batch] = []
    done = 0
    while done < records:
        if size == 1:
            updates = 1 if pending and len(batches) % 2 else 0
        else:
            updates = min(len(pending), size // 2)
        rows = [_scored(pending.popleft(), now) for _ in range(updates)]
        fresh = [uuid.uuid4().hex for _ in range(size - updates)]
        rows += [_pending(run_id, now) for run_id in fresh]
        pending.extend(fresh)
        cache = [(uuid.uuid4().hex, CACHE_RESULT, now) for _ in range(size // 8)]
        batches.append(Batch(rows, [list(column) for column in zip(*rows, strict=True)], cache))
        done += size
    return batches


# Drivers. Each gives a writer connection, three upsert paths, a pool for lookups,
# the two claims and a LISTEN/NOTIFY round.

Writer = Callable[[Any, Batch], Awaitable[None]]


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


Driver = AsyncpgDriver | PsycopgDriver


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


# Measuring.


class CpuMeter:
    """Process, cluster and whole-machine CPU seconds over a span."""

    def __init__(self, postmaster_pid: int) -> None:
        self.postmaster = psutil.Process(postmaster_pid)

    def _server(self) -> dict[int, float]:
        times: dict[int, float] = {}
        for proc in [self.postmaster, *self.postmaster.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                cpu = proc.cpu_times()
                times[proc.pid] = cpu.user + cpu.system
        return times

    @staticmethod
    def _busy() -> float:
        cpu = psutil.cpu_times()
        # guest time is already in user; steal (the hypervisor's) counts as disturbance.
        names = ("user", "nice", "system", "irq", "softirq", "steal")
        return sum(getattr(cpu, name, 0.0) for name in names)

    @contextlib.contextmanager
    def span(self) -> Iterator[dict[str, float]]:
        out: dict[str, float] = {}
        server, busy, own = self._server(), self._busy(), time.process_time()
        wall = time.perf_counter()
        try:
            yield out
        finally:
            elapsed = time.perf_counter() - wall
            own_spent = time.process_time() - own
            after = self._server()
            server_spent = sum(value - server.get(pid, 0.0) for pid, value in after.items())
            other = max(0.0, self._busy() - busy - own_spent - server_spent)
            out.update(
                elapsed=elapsed, client=own_spent, server=server_spent, other=other / elapsed
            )


@dataclass
class Cell:
    """One table row: the measurements of its repetitions."""

    table: str
    driver: str
    variant: str
    param: str
    runs: list[dict[str, float]] = field(default_factory=list)

    def median(self, key: str) -> float:
        return statistics.median(run[key] for run in self.runs)

    def spread(self, key: str) -> str:
        values = [run[key] for run in self.runs]
        return f"{min(values):,.0f}-{max(values):,.0f}"


class Bench:
    def __init__(self, args: argparse.Namespace, dsn: str, postmaster_pid: int) -> None:
        self.args = args
        self.dsn = dsn
        self.meter = CpuMeter(postmaster_pid)
        self.drivers: list[Driver] = [AsyncpgDriver(dsn), PsycopgDriver(dsn)]
        self.cells: dict[tuple[str, str, str, str], Cell] = {}
        self.quiet_left = float(args.quiet_budget)
        self.waited = 0.0
        self.unquiet = 0  # runs started without a quiet moment first

    def cell(self, table: str, driver: str, variant: str, param: str) -> Cell:
        key = (table, driver, variant, param)
        if key not in self.cells:
            self.cells[key] = Cell(table, driver, variant, param)
        return self.cells[key]

    async def quiet(self) -> None:
        """Wait, within `--quiet-budget` seconds in all, until the machine is near idle.

        Other work on the 2 cores (other sessions' tests, say) takes CPU from both this
        process and the cluster; a run starts once the rest of the machine has used
        less than QUIET_CORES for QUIET_WINDOW seconds, or after QUIET_MAX_WAIT.
        """
        started = time.perf_counter()
        while self.quiet_left > 0 and time.perf_counter() - started < QUIET_MAX_WAIT:
            with self.meter.span() as span:
                await asyncio.sleep(QUIET_WINDOW)
            if span["other"] < QUIET_CORES:
                break
        else:
            self.unquiet += 1
        waited = time.perf_counter() - started
        self.quiet_left -= waited
        self.waited += waited

    def order(self, rep: int) -> list[Driver]:
        return self.drivers if rep % 2 == 0 else self.drivers[::-1]

    @staticmethod
    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    async def admin(self, *statements: str) -> None:
        conn = await asyncpg.connect(self.dsn)
        try:
            for sql in statements:
                await conn.execute(sql)
        finally:
            await conn.close()

    # 1. upserts

    async def upserts(self) -> None:
        args = self.args
        plans = [(size, True) for size in (1, 16, 128, 512)]
        plans += [(size, False) for size in (1, 128)]
        made: dict[int, list[Batch]] = {}
        for size, durable in plans:
            if size not in made:
                made[size] = make_batches(size, args.records[size])
            table = "upsert" if durable else "upsert-async"
            for rep in range(args.reps):
                for driver in self.order(rep):
                    for path, write in driver.paths().items():
                        run = await self.upsert_run(driver, path, write, made[size], durable)
                        self.cell(table, driver.name, path, str(size)).runs.append(run)
                        self.log(
                            f"{table} {driver.name:8} {path:12} batch {size:3}:"
                            f" {run['rate']:9,.0f} rec/s, {run['client_10k']:6.0f} ms CPU/10k"
                            f" (other {run['other']:.2f})"
                        )

    async def upsert_run(
        self, driver: Driver, path: str, write: Writer, batches: list[Batch], durable: bool
    ) -> dict[str, float]:
        await self.admin("TRUNCATE scores, score_cache RESTART IDENTITY", "CHECKPOINT")
        conn = await driver.connect(synchronous_commit=durable)
        try:
            await driver.prepare_writer(conn, path)
            # Warm up: the statements get prepared, the code paths loaded.
            for batch in batches[:3]:
                await write(conn, batch)
            records = 0
            await self.quiet()
            with self.meter.span() as span:
                deadline = time.perf_counter() + self.args.upsert_seconds
                for batch in batches[3:]:
                    await write(conn, batch)
                    records += len(batch.rows)
                    if time.perf_counter() >= deadline:
                        break
        finally:
            await driver.close(conn)
        return _per_op(span, records, "rate")

    # 2. lookups

    async def lookups(self) -> None:
        seed = self.drivers[0]
        await self.admin("TRUNCATE scores, score_cache RESTART IDENTITY")
        conn = await seed.connect()
        try:
            now = time.time()
            rows = [_scored(uuid.uuid4().hex, now) for _ in range(LOOKUP_ROWS)]
            await conn.copy_records_to_table("scores", records=rows, columns=COLUMNS)
            await conn.execute("VACUUM ANALYZE scores")
            ids = [row[0] for row in await conn.fetch("SELECT run_id FROM scores")]
        finally:
            await conn.close()
        for concurrency in (1, 32):
            for rep in range(self.args.reps):
                for driver in self.order(rep):
                    for variant, options in driver.pool_variants().items():
                        run = await self.lookup_run(driver, options, ids, concurrency)
                        self.cell("lookup", driver.name, variant, str(concurrency)).runs.append(run)
                        self.log(
                            f"lookup {driver.name:8} {variant:18} c={concurrency:2}:"
                            f" {run['rate']:8,.0f}/s p50 {run['p50']:5.0f} us"
                            f" p99 {run['p99']:6.0f} us (other {run['other']:.2f})"
                        )

    async def lookup_run(
        self, driver: Driver, options: dict[str, Any], ids: list[str], concurrency: int
    ) -> dict[str, float]:
        pool = await driver.open_pool(options)
        latencies: list[float] = []
        misses = 0

        async def worker(seed: int, until: float, keep: bool) -> None:
            nonlocal misses
            rnd = random.Random(seed)
            while time.perf_counter() < until:
                run_id = ids[rnd.randrange(len(ids))]
                started = time.perf_counter()
                record = await driver.lookup(pool, run_id)
                if keep:
                    latencies.append(time.perf_counter() - started)
                    misses += record is None

        try:
            # Warm up every pooled connection (psycopg prepares a statement at its 5th use).
            until = time.perf_counter() + 0.3
            await asyncio.gather(*(worker(-i, until, False) for i in range(32)))
            await self.quiet()
            with self.meter.span() as span:
                until = time.perf_counter() + self.args.lookup_seconds
                await asyncio.gather(*(worker(i, until, True) for i in range(concurrency)))
        finally:
            await driver.close_pool(pool)
        if misses:
            raise RuntimeError(f"{driver.name}: {misses} lookups found no row")
        run = _per_op(span, len(latencies), "rate")
        run["p50"] = percentile([x * 1e6 for x in latencies], 0.5) or 0.0
        run["p99"] = percentile([x * 1e6 for x in latencies], 0.99) or 0.0
        run["max"] = max(latencies) * 1e6
        return run

    # 4. claims

    async def claims(self) -> None:
        for variant in ("select+update", "one UPDATE"):
            for rep in range(self.args.reps):
                for driver in self.order(rep):
                    run = await self.claim_run(driver, variant)
                    self.cell("claim", driver.name, variant, str(CLAIM_WORKERS)).runs.append(run)
                    self.log(
                        f"claim {driver.name:8} {variant:14}: {run['rate']:7,.0f} claims/s"
                        f" {run['client_10k']:6.0f} ms CPU/10k (other {run['other']:.2f})"
                    )

    async def claim_run(self, driver: Driver, variant: str) -> dict[str, float]:
        await self.admin(
            "TRUNCATE jobs RESTART IDENTITY",
            "INSERT INTO jobs (run_id) SELECT md5(i::text)"
            f" FROM generate_series(1, {CLAIM_JOBS}) AS i",
            "VACUUM ANALYZE jobs",
            "CHECKPOINT",
        )
        conns = [await driver.connect() for _ in range(CLAIM_WORKERS)]
        claim = driver.claim_two if variant == "select+update" else driver.claim_one_statement
        claimed = 0

        async def worker(index: int, until: float, keep: bool) -> None:
            nonlocal claimed
            while time.perf_counter() < until:
                if not await claim(conns[index], index):
                    raise RuntimeError("the job queue ran dry: raise CLAIM_JOBS")
                if keep:
                    claimed += 1

        try:
            until = time.perf_counter() + 0.2
            await asyncio.gather(*(worker(i, until, False) for i in range(CLAIM_WORKERS)))
            await self.quiet()
            with self.meter.span() as span:
                until = time.perf_counter() + self.args.claim_seconds
                await asyncio.gather(*(worker(i, until, True) for i in range(CLAIM_WORKERS)))
        finally:
            for conn in conns:
                await driver.close(conn)
        return _per_op(span, claimed, "rate")

    # 5. LISTEN/NOTIFY

    async def notifies(self) -> None:
        for rep in range(self.args.reps):
            for driver in self.order(rep):
                await self.quiet()
                with self.meter.span() as span:
                    wakes, sends = await driver.notify_round(self.args.notifies)
                run = dict(span)
                run["p50"] = percentile([x * 1e6 for x in wakes], 0.5) or 0.0
                run["p99"] = percentile([x * 1e6 for x in wakes], 0.99) or 0.0
                run["send_p50"] = percentile([x * 1e6 for x in sends], 0.5) or 0.0
                self.cell("notify", driver.name, "listener", "1").runs.append(run)
                self.log(
                    f"notify {driver.name:8}: wake p50 {run['p50']:5.0f} us"
                    f" p99 {run['p99']:6.0f} us, NOTIFY round trip p50 {run['send_p50']:5.0f} us"
                )


def _per_op(span: dict[str, float], ops: int, rate_key: str) -> dict[str, float]:
    run = dict(span)
    run["ops"] = ops
    run[rate_key] = ops / span["elapsed"]
    run["client_10k"] = span["client"] / ops * 1e7  # ms per 10k operations
    run["server_10k"] = span["server"] / ops * 1e7
    return run


# The report.


def render(bench: Bench, machine: list[str], reps: int) -> str:
    cells = list(bench.cells.values())

    def pick(table: str) -> list[Cell]:
        return [cell for cell in cells if cell.table == table]

    async_rates = {
        (cell.driver, cell.variant, cell.param): cell.median("rate")
        for cell in pick("upsert-async")
    }
    upsert_rows = []
    for cell in sorted(pick("upsert"), key=lambda c: (int(c.param), c.driver, c.variant)):
        off = async_rates.get((cell.driver, cell.variant, cell.param))
        upsert_rows.append(
            [
                cell.param,
                cell.driver,
                cell.variant,
                f"**{cell.median('rate'):,.0f}**",
                cell.spread("rate"),
                f"{cell.median('client_10k'):,.0f}",
                f"{cell.median('server_10k'):,.0f}",
                "-" if off is None else f"{off:,.0f}",
                f"{cell.median('other'):.2f}",
            ]
        )
    lookup_rows = [
        [
            cell.param,
            cell.driver,
            cell.variant,
            f"**{cell.median('rate'):,.0f}**",
            f"{cell.median('p50'):,.0f}",
            f"{cell.median('p99'):,.0f}",
            f"{cell.median('max'):,.0f}",
            f"{cell.median('client_10k'):,.0f}",
            f"{cell.median('server_10k'):,.0f}",
            f"{cell.median('other'):.2f}",
        ]
        for cell in sorted(pick("lookup"), key=lambda c: (int(c.param), c.driver, c.variant))
    ]
    claim_rows = [
        [
            cell.variant,
            cell.driver,
            f"**{cell.median('rate'):,.0f}**",
            cell.spread("rate"),
            f"{cell.median('client_10k'):,.0f}",
            f"{cell.median('server_10k'):,.0f}",
            f"{cell.median('other'):.2f}",
        ]
        for cell in sorted(pick("claim"), key=lambda c: (c.variant, c.driver))
    ]
    notify_rows = [
        [
            cell.driver,
            f"**{cell.median('p50'):,.0f}**",
            f"{cell.median('p99'):,.0f}",
            f"{cell.median('send_p50'):,.0f}",
            f"{cell.median('other'):.2f}",
        ]
        for cell in sorted(pick("notify"), key=lambda c: c.driver)
    ]
    parts = [
        "# PostgreSQL driver for the score store: asyncpg vs psycopg 3",
        "",
        "`python -m bench store_drivers` (`bench/store/drivers.py` says what runs). "
        f"Medians of {reps} runs a cell, the drivers taking turns in alternating order. "
        "CPU columns are milliseconds per 10,000 operations: `client` is this Python "
        "process (`time.process_time`), `PG` the cluster's processes; `other` is busy "
        "CPU of anything else on the machine, in cores (a disturbed cell shows there).",
        "",
        *[f"- {line}" for line in machine],
        "",
        "Part 3 of the brief, CPU per 10k operations, is the `client ms/10k` column of"
        " every table.",
        "",
        "## 1. Upserts: one writer, one transaction a batch (records/s)",
        "",
        "`sync off` is the same path with `synchronous_commit=off` on the writer's session.",
        "",
        *table(
            [
                "batch",
                "driver",
                "path",
                "records/s",
                "range",
                "client ms/10k",
                "PG ms/10k",
                "records/s sync off",
                "other",
            ],
            upsert_rows,
        ),
        "",
        f"## 2. Point lookups by run_id through a pool of {POOL_SIZE}",
        "",
        f"{LOOKUP_ROWS:,} rows. Latency is acquire + SELECT + release + the ScoreRecord"
        " (result parsed). 32 tasks looking up back to back through 10 connections is a"
        " saturated closed loop: it ranks the pools' queueing, fairness included (`max`).",
        "",
        *table(
            [
                "tasks",
                "driver",
                "pool",
                "lookups/s",
                "p50 us",
                "p99 us",
                "max us",
                "client ms/10k",
                "PG ms/10k",
                "other",
            ],
            lookup_rows,
        ),
        "",
        f"## 4. Work-queue claim, {CLAIM_WORKERS} workers (claims/s)",
        "",
        *table(
            ["claim", "driver", "claims/s", "range", "client ms/10k", "PG ms/10k", "other"],
            claim_rows,
        ),
        "",
        "## 5. LISTEN/NOTIFY wake-up (send start to listener callback, us)",
        "",
        *table(["driver", "p50 us", "p99 us", "NOTIFY round trip p50 us", "other"], notify_rows),
        "",
    ]
    return "\n".join(parts)


# The throwaway cluster.


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pg_bin(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    if not versions:
        raise SystemExit("no PostgreSQL server binaries: pass --pg-bin")
    return versions[-1]


class Cluster:
    """initdb into a temporary folder, start on 127.0.0.1, and remove it all at the end."""

    def __init__(self, pg_bin: Path) -> None:
        self.pg_bin = pg_bin
        self.folder = Path(tempfile.mkdtemp(prefix="store-drivers-"))
        self.data = self.folder / "data"
        self.port = _free_port()
        self.started = False
        self.as_postgres = os.geteuid() == 0

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_postgres else []
        subprocess.run([*prefix, *command], check=True, stdout=subprocess.DEVNULL, cwd=self.folder)

    def start(self) -> None:
        if self.as_postgres:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run(
            str(self.pg_bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
        )
        options = (
            f"-c port={self.port} -c listen_addresses=127.0.0.1"
            f" -c unix_socket_directories={self.folder}"
        )
        self._run(
            str(self.pg_bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.folder / "server.log"),
            "-o",
            options,
            "-w",
            "start",
        )
        self.started = True

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def stop(self) -> None:
        try:
            if self.started:
                self._run(str(self.pg_bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


async def _machine(dsn: str, loop_name: str) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        version = await conn.fetchval("SHOW server_version")
        settings = await conn.fetch(
            "SELECT name, setting, unit FROM pg_settings WHERE name IN ('fsync',"
            " 'synchronous_commit', 'wal_sync_method', 'shared_buffers', 'full_page_writes',"
            " 'max_wal_size', 'wal_level') ORDER BY name"
        )
    finally:
        await conn.close()
    pq = psycopg.pq
    libpq = f"{pq.version() // 10000}.{pq.version() % 100}"
    return [
        machine_line(),
        f"PostgreSQL {version}, a fresh cluster on the local disk, defaults except port and"
        " socket: " + ", ".join(f"{r['name']}={r['setting']}{r['unit'] or ''}" for r in settings),
        f"loop {loop_name}",
        f"asyncpg {_version('asyncpg')}; psycopg {_version('psycopg')}"
        f" ({pq.__impl__}, libpq {libpq}), psycopg-binary {_version('psycopg-binary')},"
        f" psycopg-pool {_version('psycopg-pool')}",
        "over TCP to 127.0.0.1; load average at the start "
        + " ".join(f"{x:.2f}" for x in os.getloadavg()),
    ]


async def amain(args: argparse.Namespace, cluster: Cluster, loop_name: str) -> str:
    await _admin_schema(cluster.dsn)
    machine = await _machine(cluster.dsn, loop_name)
    bench = Bench(args, cluster.dsn, cluster.postmaster_pid())
    started = time.perf_counter()
    await bench.upserts()
    await bench.lookups()
    await bench.claims()
    await bench.notifies()
    machine.append(
        f"measuring took {time.perf_counter() - started:.0f} s, {bench.waited:.0f} s of it"
        f" waiting for the rest of the machine to use < {QUIET_CORES} cores before a run"
        f" ({bench.unquiet} runs started without such a moment); load average at the end "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    return render(bench, machine, args.reps)


async def _admin_schema(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(SCHEMA)
    finally:
        await conn.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3, help="runs a cell (default 3)")
    parser.add_argument("--quick", action="store_true", help="one short run a cell: a smoke test")
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    parser.add_argument("--pg-bin", help="folder of initdb and pg_ctl")
    parser.add_argument(
        "--quiet-budget",
        type=float,
        default=150.0,
        help="seconds in all to wait for a near-idle machine before runs (default 150, 0: never)",
    )
    parser.add_argument("--out", type=Path, help="the markdown file (default bench/results/...)")
    args = parser.parse_args(argv)
    args.upsert_seconds, args.lookup_seconds, args.claim_seconds = 1.5, 2.0, 2.5
    args.notifies = 300
    args.records = {1: 8_000, 16: 48_000, 128: 96_000, 512: 131_072}
    if args.quick:
        args.reps = 1
        args.upsert_seconds, args.lookup_seconds, args.claim_seconds = 0.3, 0.3, 0.3
        args.notifies = 50
        args.records = {1: 2_000, 16: 8_000, 128: 16_384, 512: 32_768}

    loop_name = args.loop
    runner: Callable[[Awaitable[str]], str]
    if args.loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            loop_name = "asyncio (uvloop not installed)"
            runner = asyncio.run  # type: ignore[assignment]
        else:
            loop_name = f"uvloop {_version('uvloop')}"
            runner = uvloop.run  # type: ignore[assignment]
    else:
        runner = asyncio.run  # type: ignore[assignment]

    cluster = Cluster(_pg_bin(args.pg_bin))
    try:
        cluster.start()
        report = runner(amain(args, cluster, loop_name))
    finally:
        cluster.stop()
    print(report)
    out = args.out or RESULTS / f"store-drivers-{time.strftime('%Y-%m-%d-%H%M')}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report + "\n")
    print(f"\nwritten to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
