"""Each engine in turn, SQLite and PostgreSQL: filled, timed, planned, and with the
suggested indexes and settings tried after.
"""

from __future__ import annotations

import functools
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.store.queries.cases import Plan, cases, pg_plan, plans_used, sqlite_plan
from bench.store.queries.records import Records, log
from bench.store.queries.timing import (
    Settings,
    Timing,
    gateway_app,
    run_cases,
    time_calls,
    time_http,
    time_page_building,
)
from gateway.store import PostgresStore, SQLiteStore
from gateway.store.dialect import POSTGRES, SQLITE
from gateway.store.queries import stats_sql
from gateway.store.records import COLUMNS

# What `--suggest` tries after the main cases: indexes that cover the stats queries
# (every column they read), made here on the bench's copy only, never by the gateway.
_STATS_COLUMNS = "status, verdict, score, judge_calls, judge_tokens"
SQLITE_SUGGESTED = (
    f"CREATE INDEX bench_stats_created ON scores (created_at, {_STATS_COLUMNS}, key_name, model)",
    f"CREATE INDEX bench_stats_key ON scores (key_name, created_at, {_STATS_COLUMNS})",
)


POSTGRES_SUGGESTED = (
    "CREATE INDEX bench_stats_created ON scores"
    f" (created_at) INCLUDE ({_STATS_COLUMNS}, key_name, model)",
    f"CREATE INDEX bench_stats_key ON scores (key_name, created_at) INCLUDE ({_STATS_COLUMNS})",
    "CREATE INDEX bench_categories_created ON score_categories (created_at, category, run_id)",
)


# ... and, on PostgreSQL, first session settings alone, on the store's pooled connection.
POSTGRES_SESSION = ("SET plan_cache_mode = force_custom_plan", "SET jit = off")


@dataclass
class EngineResult:
    engine: str
    load_seconds: float
    analyze_seconds: float
    counts: dict[str, int]
    sizes: list[str]
    notes: list[str]
    timings: list[Timing]
    http: list[Timing]
    # (title, what was done, timings) of the `--suggest` passes
    experiments: list[tuple[str, str, list[Timing]]] = field(default_factory=list)


def counts_line(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {value:,}" for name, value in counts.items())


async def bench_sqlite(folder: Path, records: Records, settings: Settings) -> EngineResult:
    path = folder / "scores.db"
    store = SQLiteStore(path)
    await store.open()  # migrations and triggers; nothing to sweep in a new file
    await store.close()
    log(f"sqlite: loading {records.count:,} records into {path}")
    started = time.monotonic()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -262144")  # 256 MiB while loading
        insert = (
            f"INSERT INTO scores ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"
        )
        for batch in records.batches():
            conn.execute("BEGIN")
            conn.executemany(insert, batch)
            conn.execute("COMMIT")
        load_seconds = time.monotonic() - started
        started = time.monotonic()
        conn.execute("ANALYZE")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        analyze_seconds = time.monotonic() - started
        counts = {
            "scores": conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0],
            "score_categories": conn.execute("SELECT COUNT(*) FROM score_categories").fetchone()[0],
        }
        tables = conn.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    finally:
        conn.close()
    size = path.stat().st_size
    sizes = [f"file {size / 2**20:,.0f} MiB"] + [
        f"{name} {pages / 2**20:,.0f} MiB" for name, pages in tables if pages > 2**20
    ]
    log(f"sqlite: loaded in {load_seconds:.0f} s, ANALYZE {analyze_seconds:.0f} s; {sizes[0]}")

    # No statement cache: an EXPLAIN QUERY PLAN kept from before an index was made would
    # go on showing the old plan (it never reads the schema cookie).
    explainer = sqlite3.connect(f"file:{path}?mode=ro", uri=True, cached_statements=0)

    async def explain(label: str, sql: str, values: list[object], slow: bool) -> Plan:
        return sqlite_plan(explainer, label, sql, values)

    experiments = []
    store = SQLiteStore(path)
    await store.open(sweep_pending=False)  # keep the pending records pending
    try:
        timings = await run_cases(store, cases(records.end), settings, explain, SQLITE)
        http = await time_page_building(store, settings)
        if settings.http:
            with gateway_app({"path": str(path)}) as url:
                http += await time_http(url, settings)
        if settings.suggest:
            log("sqlite: the stats cases again, with covering indexes")
            started = time.monotonic()
            conn = sqlite3.connect(path, isolation_level=None)
            try:
                for statement in SQLITE_SUGGESTED:
                    conn.execute(statement)
                conn.execute("ANALYZE")
                built = time.monotonic() - started
                sizes_now = conn.execute(
                    "SELECT name, SUM(pgsize) FROM dbstat WHERE name LIKE 'bench_%' GROUP BY name"
                ).fetchall()
            finally:
                conn.close()
            explainer.close()  # a fresh one, which knows the new indexes
            explainer = sqlite3.connect(f"file:{path}?mode=ro", uri=True, cached_statements=0)
            stats_cases = [case for case in cases(records.end) if case.stats is not None]
            again = await run_cases(store, stats_cases, settings, explain, SQLITE)
            made = "; ".join(f"`{statement}`" for statement in SQLITE_SUGGESTED)
            size_text = ", ".join(f"{n} {b / 2**20:,.0f} MiB" for n, b in sizes_now)
            experiments.append(
                (
                    "with covering indexes for stats (not in the gateway's schema)",
                    f"{made}, then ANALYZE: {built:.0f} s; {size_text}",
                    again,
                )
            )
    finally:
        await store.close()
        explainer.close()
    notes = [
        f"SQLite {sqlite3.sqlite_version}, WAL, synchronous=NORMAL (the store's), the store's"
        " own reader connection (default page cache, 2 MiB); the file on the local disk"
    ]
    return EngineResult(
        "SQLite", load_seconds, analyze_seconds, counts, sizes, notes, timings, http, experiments
    )


async def bench_postgres(cluster: Any, records: Records, settings: Settings) -> EngineResult:
    import asyncpg

    name = cluster.create_database("store_queries")
    url = cluster.url(name)
    store = PostgresStore(url)
    await store.open()
    await store.close()
    log(f"postgresql: loading {records.count:,} records (COPY, triggers on)")
    conn = await asyncpg.connect(url)
    try:
        started = time.monotonic()
        for batch in records.batches():
            await conn.copy_records_to_table("scores", records=batch, columns=list(COLUMNS))
        load_seconds = time.monotonic() - started
        started = time.monotonic()
        await conn.execute("VACUUM (ANALYZE) scores")
        await conn.execute("VACUUM (ANALYZE) score_categories")
        analyze_seconds = time.monotonic() - started
        counts = {
            "scores": await conn.fetchval("SELECT COUNT(*) FROM scores"),
            "score_categories": await conn.fetchval("SELECT COUNT(*) FROM score_categories"),
        }
        size = await conn.fetchval("SELECT pg_database_size(current_database())")
        relations = await conn.fetch(
            "SELECT relname, pg_relation_size(oid) FROM pg_class WHERE relnamespace ="
            " 'public'::regnamespace AND relkind IN ('r', 'i') ORDER BY 2 DESC"
        )
        toast = await conn.fetchval(
            "SELECT pg_total_relation_size(reltoastrelid) FROM pg_class WHERE relname = 'scores'"
        )
        show = {
            setting: await conn.fetchval(f"SHOW {setting}")
            for setting in (
                "server_version",
                "shared_buffers",
                "work_mem",
                "jit",
                "max_parallel_workers_per_gather",
                "fsync",
            )
        }
    finally:
        await conn.close()
    sizes = [f"database {size / 2**20:,.0f} MiB", f"scores TOAST {toast / 2**20:,.0f} MiB"] + [
        f"{relname} {pages / 2**20:,.0f} MiB" for relname, pages in relations if pages > 2**20
    ]
    log(f"postgresql: loaded in {load_seconds:.0f} s, VACUUM ANALYZE {analyze_seconds:.0f} s")

    explainer = await asyncpg.connect(url)

    async def explain(label: str, sql: str, values: list[object], slow: bool) -> Plan:
        return await pg_plan(explainer, label, sql, values, analyze=slow)

    async def explain_again(label: str, sql: str, values: list[object], slow: bool) -> Plan:
        return await pg_plan(explainer, label, sql, values, compare=False)

    experiments = []
    store = PostgresStore(url)
    await store.open()
    used = functools.partial(plans_used, store)
    try:
        timings = await run_cases(store, cases(records.end), settings, explain, POSTGRES, used)
        http = await time_page_building(store, settings)
        if settings.http:
            with gateway_app({"url": url}) as gateway_url:
                http += await time_http(gateway_url, settings)
        if settings.suggest:
            experiments = await postgres_suggestions(
                store, explainer, records, settings, explain_again, used
            )
    finally:
        await store.close()
        await explainer.close()
    notes = [
        f"PostgreSQL {show['server_version']}, a throwaway cluster on 127.0.0.1 (TCP),"
        f" shared_buffers={show['shared_buffers']}, work_mem={show['work_mem']},"
        f" jit={show['jit']},"
        f" max_parallel_workers_per_gather={show['max_parallel_workers_per_gather']},"
        f" fsync={show['fsync']} (the tests' cluster: no durability; reads do not care);"
        " the store's pool (asyncpg, prepared statements)"
    ]
    return EngineResult(
        "PostgreSQL",
        load_seconds,
        analyze_seconds,
        counts,
        sizes,
        notes,
        timings,
        http,
        experiments,
    )


async def postgres_suggestions(
    store: Any,
    explainer: Any,
    records: Records,
    settings: Settings,
    explain: Callable[[str, str, list[object], bool], Awaitable[Plan]],
    used: Callable[[str], Awaitable[tuple[int, int]]],
) -> list[tuple[str, str, list[Timing]]]:
    """The stats cases again: with custom plans and no JIT on the store's connection, then
    also with covering indexes; and the 30-day case as one query, p90 by percentile_disc."""
    stats_cases = [case for case in cases(records.end) if case.stats is not None]
    experiments = []
    log("postgresql: the stats cases again, force_custom_plan and jit off")
    # The store's pool hands the same connection to calls one after another (LIFO), and
    # resets nothing on release: these settings hold for what follows ("ran:" shows it).
    async with store._pool.acquire() as conn:
        for statement in POSTGRES_SESSION:
            await conn.execute(statement)
    again = await run_cases(store, stats_cases, settings, explain, POSTGRES, used)
    session = "; ".join(f"`{statement}`" for statement in POSTGRES_SESSION)
    experiments.append(
        ("custom plans, no JIT", f"{session} on the store's pooled connection", again)
    )

    heavy = next(case for case in stats_cases if case.name.startswith("stats 30 days"))
    assert heavy.stats is not None
    sql, values = stats_sql(heavy.stats, POSTGRES)
    one_pass = sql.replace(
        " FROM scores s", ", percentile_disc(0.9) WITHIN GROUP (ORDER BY s.score) FROM scores s", 1
    )
    await explainer.execute("SET jit = off")

    async def single() -> int:
        return len(await explainer.fetch(one_pass, *values))

    times, rows = await time_calls(single, settings)
    mine = {float(row[0]): row[-1] for row in await explainer.fetch(one_pass, *values)}
    theirs = {float(group.key): group.p90_score for group in await store.stats(heavy.stats)}
    same = mine == theirs
    one = Timing(f"{heavy.name}: one query, p90 by percentile_disc(0.9)", times, rows)
    experiments.append(
        (
            "the p90 in the stats query itself",
            "stats_sql plus `percentile_disc(0.9) WITHIN GROUP (ORDER BY s.score)`, one pass,"
            f" jit off, on a connection of its own; the same p90 as `store.stats` in every"
            f" group: {'yes' if same else 'NO'}",
            [one],
        )
    )

    log("postgresql: and with covering indexes")
    started = time.monotonic()
    for statement in POSTGRES_SUGGESTED:
        await explainer.execute(statement)
    await explainer.execute("VACUUM (ANALYZE) scores")
    await explainer.execute("VACUUM (ANALYZE) score_categories")
    built = time.monotonic() - started
    index_sizes = await explainer.fetch(
        "SELECT relname, pg_relation_size(oid) FROM pg_class WHERE relname LIKE 'bench_%'"
    )
    again = await run_cases(store, stats_cases, settings, explain, POSTGRES, used)
    made = "; ".join(f"`{statement}`" for statement in POSTGRES_SUGGESTED)
    size_text = ", ".join(f"{name} {size / 2**20:,.0f} MiB" for name, size in index_sizes)
    experiments.append(
        (
            "custom plans, no JIT, and covering indexes (not in the gateway's schema)",
            f"{made}, then VACUUM (ANALYZE): {built:.0f} s; {size_text}",
            again,
        )
    )
    return experiments
