"""Measuring: the CPU of this process and the cluster's, the cells, and every part's runs."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import psutil

from bench.harness.report import percentile
from bench.store.drivers.clients import AsyncpgDriver, Driver, PsycopgDriver
from bench.store.drivers.libs import asyncpg
from bench.store.drivers.sql import (
    CLAIM_JOBS,
    CLAIM_WORKERS,
    COLUMNS,
    LOOKUP_ROWS,
    Batch,
    Writer,
    _scored,
    make_batches,
)

QUIET_CORES = 0.35
QUIET_WINDOW = 0.3
QUIET_MAX_WAIT = 8.0


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
