"""The store-drivers report: its tables and the machine it measured on."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import time

from bench.harness.machine import machine_line
from bench.harness.report import table
from bench.store.drivers.cluster import Cluster
from bench.store.drivers.libs import asyncpg, psycopg
from bench.store.drivers.measure import QUIET_CORES, Bench, Cell
from bench.store.drivers.sql import CLAIM_WORKERS, LOOKUP_ROWS, POOL_SIZE, SCHEMA


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
        "`python -m bench store_drivers` (`bench/store/drivers/run.py` says what runs). "
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


def version(name: str) -> str:
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
        f"asyncpg {version('asyncpg')}; psycopg {version('psycopg')}"
        f" ({pq.__impl__}, libpq {libpq}), psycopg-binary {version('psycopg-binary')},"
        f" psycopg-pool {version('psycopg-pool')}",
        "over TCP to 127.0.0.1; load average at the start "
        + " ".join(f"{x:.2f}" for x in os.getloadavg()),
    ]


async def measure_all(args: argparse.Namespace, cluster: Cluster, loop_name: str) -> str:
    conn = await asyncpg.connect(cluster.dsn)
    try:
        await conn.execute(SCHEMA)
    finally:
        await conn.close()
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
