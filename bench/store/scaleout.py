"""Scale-out: what enqueueing costs a request, and how scoring grows with scorer processes.

    .venv/bin/python -m bench scaleout            # about 5 minutes on 2 cores
    make bench-scaleout                           # the same, finding or installing PostgreSQL

With `queue.scorer: external` a monitoring gateway does not judge: it stores each
response `pending` with its work (and on PostgreSQL sends a NOTIFY), and
`bias-gateway scorer` processes claim that work with a lease and judge it. The
issue asks two things of that design, and this measures both:

1. **Enqueue cost on the request path.** `bias-gateway serve` (one worker) in
   front of the fast fake upstream (`bench.fakes.server`), non-streaming chat
   completions, in three configurations: mode `off`; mode `monitor` with
   `queue.scorer: external` on SQLite; the same on PostgreSQL (`store.url`). No
   scorer runs: the work only piles up, so what is measured is the enqueue
   alone. At c=1: `wrk -c1` (sequential, a few thousand requests) for
   p50/p90/p99, and a paced probe (`bench.harness.client.probe_paced`, one request every
   5 ms), where the store's writer works between requests rather than beside
   them. At c=32: `wrk -c32` closed loop, for throughput. In each round the
   three gateways run side by side on fresh stores and take turns (off,
   sqlite, postgresql, off, ...) in slices of 2-3 s, so that a burst of other
   load on the machine falls on all three; each round is reported. Target:
   monitor-external p50 - off p50 <= 0.5 ms at c=1.
2. **Scoring throughput with one and with two scorers.** A fresh PostgreSQL
   database is filled with N pending work items through a gateway
   (`queue.scorer: external`), which is then stopped; then 1 or 2 scorer
   processes start together and the database is polled until all N are final.
   The judge is slow: `bench.fakes.slow`, 0.33 s ± 30 % a call, 3 calls a
   scoring (about 1 s), a process of its own that only sleeps, so it is not the
   bottleneck (its CPU and peak of calls in flight are in the table). Each
   scorer has `judge.max_concurrency: 8` and N is large enough (8 x 2 x 12 =
   192) that every scorer holds 8 scorings in flight until the end; the table
   shows the mean in flight per scorer. `judge.cache_size: 0` and every reply of
   the fake is unique, so no cache hides the judge. The rate is taken over the
   middle of the run (the 10th to the 90th percentile of completion times, from
   the records' `updated_at`), where every scorer is past its start and not yet
   out of work; first claim to last completion is shown beside it. Target: two
   scorers >= 1.8x one scorer's rate.

The PostgreSQL cluster is the tests' throwaway one (`testkit/postgres.py`:
initdb into a temporary folder, an unprivileged user, 127.0.0.1 on a free
port), with its durability switched back to PostgreSQL's defaults (fsync,
synchronous_commit, full_page_writes on). Everything runs on one machine: the
PostgreSQL server shares the 2 cores with the gateway, the fakes and wrk.

Writes `bench/results/scaleout-<date>.md` and prints it. Every process and
folder it creates is removed at the end, on errors and on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import functools
import json
import os
import re
import resource
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import aiohttp
import asyncpg
import psutil

from bench.harness import client
from bench.harness.loadgen import LoadResult, WrkMissing, require_wrk, run_wrk
from bench.harness.machine import machine_line, source_note
from bench.harness.paths import RESULTS, ROOT
from bench.harness.procs import Processes, ServerProcess, free_port, machine_busy_seconds
from bench.harness.report import fmt, table
from bench.peers.configs import start_fake
from bench.peers.runner import chat_body
from testkit.postgres import PgCluster, start_cluster

__all__ = ["Plan", "main"]

ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
CONFIGS = ("off", "sqlite", "postgresql")  # the enqueue part's configurations, in turn order
ENQUEUE_TARGET_MS = 0.5
SCALING_TARGET = 1.8
CALLS_PER_SCORING = 3  # faithful pipeline: opinions, verdicts, reason
_POLL = 0.05  # seconds between polls of the store while scorers work
_SAMPLE = 0.25  # seconds between scrapes of the scorers' /metrics
QUIET_CORES = 0.35  # a cell starts once the machine's other load is below this (cores) ...
QUIET_WINDOW = 0.3  # ... over this many seconds
QUIET_MAX_WAIT = 10.0  # or after this long: the wait is reported, the cell runs anyway
SLICE_QUIET_WAIT = 3.0  # the same before each slice of the enqueue part
QUIET_BUDGET = 60.0  # seconds of waiting in a whole run, so that it stays near 5 minutes
_GAUGE = re.compile(r"^(bias_scorings_in_flight|bias_work_claimed_total) (\S+)$", re.MULTILINE)


@dataclass(frozen=True)
class Plan:
    rounds: int = 2
    warmup: float = 1.5  # seconds of wrk -c8 for each gateway before its measurements
    # Each workload runs in slices, the three gateways taking turns slice by slice.
    c1_seconds: float = 2.0
    c1_slices: int = 3
    paced_rate: float = 200.0
    paced_seconds: float = 2.0
    paced_slices: int = 2
    c32_seconds: float = 3.0
    c32_slices: int = 2
    items: int = 192  # pending work items a scoring cell starts with
    concurrency: int = 8  # judge.max_concurrency of every scorer
    judge_latency: float = 0.33
    judge_jitter: float = 0.3
    parts: tuple[str, ...] = ("enqueue", "scoring")
    wait_quiet: bool = True


def _log(message: str) -> None:
    print(f"[scaleout] {message}", file=sys.stderr, flush=True)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM does what Ctrl-C does: every `finally` runs. Raised here, inside an event
    loop's callback, KeyboardInterrupt would be taken for the callback's own error, so
    this sends SIGINT, whose handler is then asyncio.Runner's (it cancels the main task,
    then raises KeyboardInterrupt) or, outside a loop, Python's own."""
    signal.raise_signal(signal.SIGINT)


# -- CPU accounting -------------------------------------------------------------------


def _tree_cpu(pid: int) -> float:
    """CPU seconds of a process tree, with the children it has reaped (PostgreSQL's backends)."""
    try:
        root = psutil.Process(pid)
        times = root.cpu_times()
        total = times.user + times.system + times.children_user + times.children_system
        for child in root.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child_times = child.cpu_times()
                total += child_times.user + child_times.system
    except psutil.Error:
        return 0.0
    return total


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class CpuWatch:
    """CPU of named processes and of the whole machine over a span, in % of one core."""

    def __init__(self, sources: dict[str, Callable[[], float]]) -> None:
        self.sources = {**sources, "harness": _self_cpu, "machine": machine_busy_seconds}
        self._marks: dict[str, float] = {}
        self._started = 0.0

    def start(self) -> None:
        self._marks = {name: read() for name, read in self.sources.items()}
        self._started = time.monotonic()

    def stop(self, *, extra: float = 0.0) -> dict[str, float]:
        """Percentages since `start()`; `other` is busy CPU of none of the sources (nor
        `extra` %, a process measured elsewhere, such as wrk)."""
        wall = max(time.monotonic() - self._started, 1e-9)
        used = {name: read() - self._marks[name] for name, read in self.sources.items()}
        percent = {name: round(100 * value / wall, 1) for name, value in used.items()}
        ours = sum(value for name, value in percent.items() if name != "machine") + extra
        percent["other"] = round(max(0.0, percent.pop("machine") - ours), 1)
        return percent


class Quiet:
    """Waits, before a cell, for a moment when the rest of the machine is nearly idle.

    Our own processes are idle between cells, so the machine's busy CPU is other
    sessions' (their tests, say). Their load moves every figure here, so each
    cell waits up to `QUIET_MAX_WAIT` seconds for it to drop (`QUIET_BUDGET` in
    all); the report says how long that took and how many cells started without
    such a moment.
    """

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.waited = 0.0
        self.unquiet = 0

    def wait(self, longest: float = QUIET_MAX_WAIT) -> None:
        if not self.enabled:
            return
        began = time.monotonic()
        limit = min(longest, QUIET_BUDGET - self.waited)
        while time.monotonic() - began < limit:
            before = machine_busy_seconds()
            time.sleep(QUIET_WINDOW)
            if (machine_busy_seconds() - before) / QUIET_WINDOW < QUIET_CORES:
                break
        else:
            self.unquiet += 1
        self.waited += time.monotonic() - began


# -- processes --------------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    procs: Processes
    work_dir: Path
    upstream: ServerProcess
    cluster: PgCluster
    plan: Plan
    quiet: Quiet


def _gateway_config(
    ctx: Context,
    name: str,
    *,
    mode: str,
    port: int,
    store_url: str | None,
    judge: str | None = None,
) -> Path:
    """A config file (JSON is YAML) for a gateway or a scorer; the store is SQLite at
    `<name>.db` unless `store_url` is set."""
    store: dict[str, Any] = {"path": str(ctx.work_dir / f"{name}.db"), "retention_days": 0}
    if store_url is not None:
        store["url"] = store_url
    config = {
        "upstream": {"base_url": f"{ctx.upstream.url}/v1", "api_key": "sk-bench", "timeout": 60},
        "judge": {
            "model": "judge",
            "base_url": f"{judge or ctx.upstream.url}/v1",
            "api_key": "sk-bench",
            "timeout": 30,
            "max_concurrency": ctx.plan.concurrency,
            "cache_size": 0,
        },
        "policies": {"default": {"mode": mode, "sample_rate": 1.0}},
        "store": store,
        "queue": {"scorer": "external", "drain_deadline": 5},
        "server": {"host": "127.0.0.1", "port": port},
    }
    path = ctx.work_dir / f"{name}.yaml"
    path.write_text(json.dumps(config, indent=2))
    return path


def _start_gateway(ctx: Context, name: str, *, mode: str, store_url: str | None) -> ServerProcess:
    port = free_port()
    config = _gateway_config(ctx, name, mode=mode, port=port, store_url=store_url)
    argv = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)]
    return ctx.procs.start(
        name, argv, port=port, ready_path="/readyz", log_dir=ctx.work_dir, env=ENV
    )


def _start_scorer(ctx: Context, name: str, *, store_url: str, judge: str) -> ServerProcess:
    port = free_port()
    config = _gateway_config(ctx, name, mode="monitor", port=port, store_url=store_url, judge=judge)
    argv = [sys.executable, "-m", "gateway", "scorer", "--config", str(config), "--port", str(port)]
    return ctx.procs.start(
        name, argv, port=port, ready_path="/readyz", log_dir=ctx.work_dir, env=ENV
    )


def _start_judge(ctx: Context, name: str) -> ServerProcess:
    """The slow judge: every judge call sleeps `judge_latency` ± `judge_jitter`, no 429s."""
    port = free_port()
    plan = ctx.plan
    argv = [
        sys.executable, "-m", "bench.fakes.slow", "--port", str(port), "--ttft", "0",
        "--chunk-interval", "0", "--judge-latency", str(plan.judge_latency),
        "--jitter", str(plan.judge_jitter),
    ]  # fmt: skip
    return ctx.procs.start(name, argv, port=port, ready_path="/bench/stats", log_dir=ctx.work_dir)


def _pg_bin() -> Path:
    """PostgreSQL's server binaries: BIAS_TEST_PG_BIN, else what `scripts/postgres bin`
    finds (it installs Debian's package first when it can)."""
    if os.environ.get("BIAS_TEST_PG_BIN"):
        chosen = Path(os.environ["BIAS_TEST_PG_BIN"])
        if not (chosen / "initdb").exists():
            raise SystemExit(f"BIAS_TEST_PG_BIN={chosen}: no initdb there")
        return chosen
    done = subprocess.run(
        [str(ROOT / "scripts" / "postgres"), "bin"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(
            f"bench.store.scaleout needs PostgreSQL: {done.stdout.strip()}{done.stderr}"
        )
    return Path(done.stdout.strip())


def _durable(cluster: PgCluster) -> dict[str, str]:
    """Undo the test cluster's speed settings: PostgreSQL's default durability."""
    cluster.psql(
        "ALTER SYSTEM SET fsync = on",
        "ALTER SYSTEM SET synchronous_commit = on",
        "ALTER SYSTEM SET full_page_writes = on",
        "SELECT pg_reload_conf()",
    )
    time.sleep(0.5)  # the reload is asynchronous
    names = ("server_version", "fsync", "synchronous_commit", "full_page_writes", "shared_buffers")
    return {name: cluster.psql(f"SHOW {name}") for name in names}


@contextlib.contextmanager
def _database(cluster: PgCluster) -> Iterator[tuple[str, str]]:
    """A fresh database: (name, URL); dropped on exit."""
    name = cluster.create_database()
    try:
        yield name, cluster.url(name)
    finally:
        with contextlib.suppress(RuntimeError):
            cluster.drop_database(name)


def _pending_work(ctx: Context, config: str, name: str, database: str | None) -> int:
    sql = "SELECT COUNT(*) FROM scores WHERE status = 'pending' AND work IS NOT NULL"
    if config == "postgresql" and database is not None:
        return int(ctx.cluster.psql(sql, database=database))
    path = ctx.work_dir / f"{name}.db"
    if config == "off" or not path.exists():
        return 0
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return int(conn.execute(sql).fetchone()[0])


# -- 1. enqueue cost ------------------------------------------------------------------


@dataclass
class EnqueueCell:
    """One configuration in one round: its slices of each workload, taken in turns."""

    config: str
    round: int
    c1: list[LoadResult] = field(default_factory=list)
    paced: list[client.PacedStats] = field(default_factory=list)
    c32: list[LoadResult] = field(default_factory=list)
    cpu: list[dict[str, float]] = field(default_factory=list)  # one per c=32 slice
    sent: int = 0  # requests counted by wrk and the probe, warm-up included
    enqueued: int = 0  # pending work rows once the gateway stopped
    failed: dict[int, int] = field(default_factory=dict)  # non-200 answers, by status

    def c1_ms(self, key: str) -> float:
        """The median over the c=1 slices of wrk's `key` (p50_ms, p90_ms, p99_ms)."""
        return statistics.median(float(getattr(load, key)) for load in self.c1)

    def paced_ms(self, key: str) -> float:
        return statistics.median(float(getattr(probe, key)) for probe in self.paced)

    @property
    def c32_rps(self) -> float:
        seconds = sum(load.seconds for load in self.c32)
        return sum(load.requests for load in self.c32) / seconds if seconds else 0.0

    def cpu_mean(self, key: str) -> float | None:
        values = [cpu[key] for cpu in self.cpu if key in cpu]
        return statistics.fmean(values) if values else None


@dataclass(frozen=True)
class _Running:
    cell: EnqueueCell
    gateway: ServerProcess
    name: str
    database: str | None

    @property
    def url(self) -> str:
        return f"{self.gateway.url}/v1/chat/completions"


def _enqueue_round(ctx: Context, round_: int) -> list[EnqueueCell]:
    """The three gateways side by side, fresh stores; each workload's slices in turns."""
    with contextlib.ExitStack() as stack:
        running = []
        for config in CONFIGS:
            name = f"gateway-{config}-r{round_}"
            database, store_url = None, None
            if config == "postgresql":
                database, store_url = stack.enter_context(_database(ctx.cluster))
            mode = "off" if config == "off" else "monitor"
            gateway = _start_gateway(ctx, name, mode=mode, store_url=store_url)
            stack.callback(ctx.procs.stop, gateway)
            running.append(_Running(EnqueueCell(config, round_), gateway, name, database))
        _measure_round(ctx, running)
        for each in running:  # a graceful stop: its writer commits what it holds
            ctx.procs.stop(each.gateway)
            each.cell.enqueued = _pending_work(ctx, each.cell.config, each.name, each.database)
            each.cell.failed = _failures(each.gateway.log_path)
    return [each.cell for each in running]


def _measure_round(ctx: Context, running: list[_Running]) -> None:
    plan = ctx.plan
    body = chat_body(False)

    def wrk(each: _Running, connections: int, seconds: float) -> LoadResult:
        load = run_wrk(
            each.url, body, connections=connections, duration=seconds, work_dir=ctx.work_dir
        )
        each.cell.sent += load.requests
        if load.errors or load.non_2xx:
            _log(f"  {each.cell.config}: {load.errors} errors, {load.non_2xx} non-2xx from wrk")
        return load

    for each in running:
        wrk(each, 8, plan.warmup)
    for _ in range(plan.c1_slices):
        for each in running:
            ctx.quiet.wait(SLICE_QUIET_WAIT)
            each.cell.c1.append(wrk(each, 1, plan.c1_seconds))
    for _ in range(plan.paced_slices):
        for each in running:
            ctx.quiet.wait(SLICE_QUIET_WAIT)
            probe = client.run(
                functools.partial(
                    client.probe_paced,
                    each.url,
                    body,
                    rate=plan.paced_rate,
                    duration=plan.paced_seconds,
                    api_key="bench",
                )
            )
            each.cell.sent += probe.requests
            each.cell.paced.append(probe)
    for _ in range(plan.c32_slices):
        for each in running:
            ctx.quiet.wait(SLICE_QUIET_WAIT)
            watch = CpuWatch(
                {
                    "gateway": each.gateway.cpu_seconds,
                    "fake": ctx.upstream.cpu_seconds,
                    "postgres": functools.partial(_tree_cpu, ctx.cluster.postmaster_pid()),
                }
            )
            watch.start()
            load = wrk(each, 32, plan.c32_seconds)
            cpu = watch.stop(extra=load.cpu_percent)
            each.cell.c32.append(load)
            each.cell.cpu.append({**cpu, "wrk": load.cpu_percent})


def _failures(log: Path) -> dict[int, int]:
    """Chat requests the gateway answered with another status than 200, from its access
    log, by status; the first of each is logged whole."""
    failed: Counter[int] = Counter()
    with log.open(errors="replace") as lines:
        for line in lines:
            if '"gateway.observability.access"' not in line or '"status":200,' in line:
                continue
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if entry.get("path") == "/v1/chat/completions":
                    status = int(entry.get("status", 0))
                    if not failed[status]:
                        _log(f"  {log.stem}: answered {status}: {line.strip()[:600]}")
                    failed[status] += 1
    return dict(failed)


def run_enqueue(ctx: Context) -> list[EnqueueCell]:
    cells = []
    for round_ in range(1, ctx.plan.rounds + 1):
        _log(f"enqueue, round {round_}: {', '.join(CONFIGS)} side by side, taking turns")
        for cell in _enqueue_round(ctx, round_):
            _log(
                f"  {cell.config:10} c=1 p50 {cell.c1_ms('p50_ms'):.3f} ms"
                f" ({sum(load.requests for load in cell.c1)} req), paced p50"
                f" {cell.paced_ms('p50_ms'):.3f} ms, c=32 {cell.c32_rps:.0f} req/s,"
                f" enqueued {cell.enqueued} of {cell.sent}"
            )
            cells.append(cell)
    return cells


# -- 2. scoring throughput ------------------------------------------------------------------


@dataclass
class Watched:
    """What the store and the scorers showed while N items were scored."""

    launched: float  # wall time the scorers were started
    first_claim: float | None = None
    done: float | None = None
    samples: list[tuple[float, list[float]]] = field(default_factory=list)  # t, in flight each
    claimed: list[int] = field(default_factory=list)
    completions: list[float] = field(default_factory=list)  # updated_at of final records
    statuses: dict[str, int] = field(default_factory=dict)
    judge: dict[str, Any] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)


@dataclass
class ScoringCell:
    scorers: int
    round: int
    items: int
    watched: Watched

    def window(self) -> tuple[int, int]:
        """Indexes of the 10th and 90th percentile completions."""
        n = len(self.watched.completions)
        return n // 10, n - n // 10 - 1

    @property
    def steady_rate(self) -> float | None:
        """Scorings a second between the 10th and 90th percentile completions."""
        times = self.watched.completions
        lo, hi = self.window()
        if hi <= lo or times[hi] <= times[lo]:
            return None
        return (hi - lo) / (times[hi] - times[lo])

    @property
    def span(self) -> float | None:
        """First claim to last completion, in seconds."""
        w = self.watched
        if w.first_claim is None or not w.completions:
            return None
        return w.completions[-1] - w.first_claim

    @property
    def overall_rate(self) -> float | None:
        span = self.span
        return len(self.watched.completions) / span if span else None

    def mean_in_flight(self) -> list[float]:
        """Each scorer's mean scorings in flight over the 10-90 % window."""
        times = self.watched.completions
        lo, hi = self.window()
        if hi <= lo:
            return []
        inside = [each for t, each in self.watched.samples if times[lo] <= t <= times[hi]]
        if not inside:
            return []
        return [round(statistics.fmean(column), 1) for column in zip(*inside, strict=True)]


def _fill(ctx: Context, store_url: str, items: int, name: str) -> int:
    """Enqueue `items` monitored responses through a gateway on `store_url`, then stop it."""
    gateway = _start_gateway(ctx, name, mode="monitor", store_url=store_url)
    try:
        url = f"{gateway.url}/v1/chat/completions"
        answered = client.run(
            lambda: client.fire(
                url, chat_body(False), concurrency=16, count=items, deadline=60, api_key="bench"
            )
        )
    finally:
        ctx.procs.stop(gateway)
    return answered


async def _metrics(session: aiohttp.ClientSession, server: ServerProcess) -> dict[str, float]:
    async with session.get(f"{server.url}/metrics") as response:
        text = await response.text()
    return {name: float(value) for name, value in _GAUGE.findall(text)}


async def _poll_store(conn: Any, items: int, watched: Watched, deadline: float) -> None:
    """Until every item is final: note the first claim and the moment the last one ends."""
    query = (
        "SELECT COUNT(*) FILTER (WHERE status <> 'pending'),"
        " COUNT(*) FILTER (WHERE status = 'pending' AND leased_by IS NOT NULL) FROM scores"
    )
    final = 0
    while time.time() < deadline:
        final, leased = await conn.fetchrow(query)
        now = time.time()
        if watched.first_claim is None and (final or leased):
            watched.first_claim = now
        if final >= items:
            watched.done = now
            return
        await asyncio.sleep(_POLL)
    raise RuntimeError(f"scoring did not finish in time: {final} of {items} final")


async def _sample_scorers(
    session: aiohttp.ClientSession, scorers: list[ServerProcess], watched: Watched
) -> None:
    while True:
        with contextlib.suppress(aiohttp.ClientError, OSError):
            seen = [await _metrics(session, scorer) for scorer in scorers]
            in_flight = [values.get("bias_scorings_in_flight", 0.0) for values in seen]
            watched.samples.append((time.time(), in_flight))
        await asyncio.sleep(_SAMPLE)


async def _watch_scoring(
    ctx: Context, store_url: str, count: int, judge: ServerProcess, round_: int
) -> tuple[Watched, list[ServerProcess]]:
    """Start `count` scorers at once and watch the store until all items are final."""
    plan = ctx.plan
    expected = plan.concurrency * count / (CALLS_PER_SCORING * plan.judge_latency)
    deadline = time.time() + 60 + 4 * plan.items / expected
    watched = Watched(launched=time.time())
    conn = await asyncpg.connect(store_url)
    poller = asyncio.create_task(_poll_store(conn, plan.items, watched, deadline))
    try:
        scorers = await _start_scorers(ctx, store_url, count, judge, round_)
        watch = CpuWatch(
            {
                **{f"scorer {i + 1}": s.cpu_seconds for i, s in enumerate(scorers)},
                "judge": judge.cpu_seconds,
                "postgres": functools.partial(_tree_cpu, ctx.cluster.postmaster_pid()),
            }
        )
        watch.start()
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            sampler = asyncio.create_task(_sample_scorers(session, scorers, watched))
            try:
                await poller
            except RuntimeError:
                for server in [*scorers, judge]:
                    _log(f"the end of {server.name}'s log:\n{server.log_tail(25)}")
                raise
            finally:
                sampler.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sampler
            watched.cpu = watch.stop()
            for scorer in scorers:
                claimed = (await _metrics(session, scorer)).get("bias_work_claimed_total", 0)
                watched.claimed.append(int(claimed))
            async with session.get(f"{judge.url}/bench/stats") as response:
                watched.judge = await response.json()
        rows = await conn.fetch(
            "SELECT updated_at FROM scores WHERE status <> 'pending' ORDER BY updated_at"
        )
        watched.completions = [float(row[0]) for row in rows]
        counts = await conn.fetch("SELECT status, COUNT(*) FROM scores GROUP BY status")
        watched.statuses = {row[0]: int(row[1]) for row in counts}
    finally:
        poller.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poller
        await conn.close()
    return watched, scorers


async def _start_scorers(
    ctx: Context, store_url: str, count: int, judge: ServerProcess, round_: int
) -> list[ServerProcess]:
    """`count` scorer processes started side by side (each start waits for /readyz)."""
    loop = asyncio.get_running_loop()
    starts = [
        loop.run_in_executor(
            None,
            functools.partial(
                _start_scorer,
                ctx,
                f"scorer-{count}x-r{round_}-{index}",
                store_url=store_url,
                judge=judge.url,
            ),
        )
        for index in range(count)
    ]
    return list(await asyncio.gather(*starts))


def _scoring_cell(ctx: Context, count: int, round_: int) -> ScoringCell:
    items = ctx.plan.items
    with _database(ctx.cluster) as (database, store_url):
        answered = _fill(ctx, store_url, items, f"fill-{count}x-r{round_}")
        pending = int(
            ctx.cluster.psql(
                "SELECT COUNT(*) FROM scores WHERE status = 'pending' AND work IS NOT NULL",
                database=database,
            )
        )
        if answered != items or pending != items:
            raise RuntimeError(f"filling: {answered} answered, {pending} pending of {items}")
        judge = _start_judge(ctx, f"judge-{count}x-r{round_}")
        scorers: list[ServerProcess] = []
        try:
            watched, scorers = client.run(
                lambda: _watch_scoring(ctx, store_url, count, judge, round_)
            )
        finally:
            for server in [*scorers, judge]:
                ctx.procs.stop(server)
    return ScoringCell(count, round_, items, watched)


def run_scoring(ctx: Context) -> list[ScoringCell]:
    cells = []
    for round_ in range(1, ctx.plan.rounds + 1):
        for count in (1, 2):
            ctx.quiet.wait()
            _log(f"scoring, round {round_}: {count} scorer(s), {ctx.plan.items} items")
            cell = _scoring_cell(ctx, count, round_)
            _log(
                f"  steady {fmt(cell.steady_rate, 2)} scorings/s, overall"
                f" {fmt(cell.overall_rate, 2)}, in flight {cell.mean_in_flight()},"
                f" claimed {cell.watched.claimed}"
            )
            cells.append(cell)
    return cells


# -- the report ---------------------------------------------------------------------------


def _verdict(values: list[bool]) -> str:
    if not values:
        return "not measured"
    if all(values):
        return "met"
    if not any(values):
        return "missed"
    return f"met in {sum(values)} of {len(values)} rounds"


def _by(cells: list[EnqueueCell], config: str, round_: int) -> EnqueueCell | None:
    return next((c for c in cells if c.config == config and c.round == round_), None)


def _slices(values: list[float], digits: int) -> str:
    return ", ".join(f"{value:.{digits}f}" for value in values)


def enqueue_section(cells: list[EnqueueCell], plan: Plan) -> tuple[list[str], list[list[str]]]:
    in_flight = 8 + plan.c1_slices + 32 * plan.c32_slices
    lines = [
        "## 1. Enqueue cost on the request path",
        "",
        "`bias-gateway serve`, one worker, non-streaming chat completions to the fast fake;"
        " in each round the three gateways run side by side on fresh stores and take turns,"
        f" slice by slice, after a {plan.warmup:g} s warm-up each. c=1: `wrk -c1`"
        f" (sequential), {plan.c1_slices} slices of {plan.c1_seconds:g} s, and a paced probe"
        f" at {plan.paced_rate:g} requests/s, {plan.paced_slices} slices of"
        f" {plan.paced_seconds:g} s; c=32: `wrk -c32`, {plan.c32_slices} slices of"
        f" {plan.c32_seconds:g} s. Latencies are the medians of the slices' (ms). CPU in % of"
        " one core during the c=32 slices (`other`: busy CPU of no process of the run);"
        " `CPU ms/req`: the gateway's CPU per request at c=32. `enqueued`: pending work rows"
        " once the gateway stopped, of the requests wrk and the probe counted (wrk does not"
        f" count the requests in flight when it stops: up to {in_flight} more rows than"
        " requests is every request enqueued). `non-200`: chat requests the gateway"
        " answered otherwise, from its access log.",
        "",
    ]
    rows = [
        [
            str(c.round),
            c.config,
            fmt(c.c1_ms("p50_ms"), 3),
            fmt(c.c1_ms("p90_ms"), 3),
            fmt(c.c1_ms("p99_ms"), 3),
            _slices([load.p50_ms for load in c.c1], 3),
            f"{sum(load.requests for load in c.c1):,}",
            fmt(c.paced_ms("p50_ms"), 3),
            fmt(c.paced_ms("p99_ms"), 3),
            fmt(c.c32_rps, 0),
            _slices([load.rps for load in c.c32], 0),
            fmt(_cpu_per_request(c), 3),
            " / ".join(
                fmt(c.cpu_mean(k), 0) for k in ("gateway", "postgres", "fake", "wrk", "other")
            ),
            f"{c.enqueued:,} of {c.sent:,}",
            ", ".join(f"{n} x {status}" for status, n in sorted(c.failed.items())) or "0",
        ]
        for c in cells
    ]
    lines += table([
            "round", "config", "c=1 p50", "c=1 p90", "c=1 p99", "c=1 p50 per slice",
            "c=1 requests", "paced p50", "paced p99", "c=32 req/s", "c=32 req/s per slice",
            "CPU ms/req", "CPU gateway / PG / fake / wrk / other", "enqueued", "non-200",
        ], rows)  # fmt: skip
    overhead_rows = []
    targets = []
    for engine in CONFIGS[1:]:
        met = []
        deltas = []
        for round_ in range(1, plan.rounds + 1):
            off, on = _by(cells, "off", round_), _by(cells, engine, round_)
            if off is None or on is None:
                continue
            delta = on.c1_ms("p50_ms") - off.c1_ms("p50_ms")
            deltas.append(f"{delta:+.3f}")
            met.append(delta <= ENQUEUE_TARGET_MS)
            cpu_on, cpu_off = _cpu_per_request(on), _cpu_per_request(off)
            overhead_rows.append(
                [
                    str(round_),
                    engine,
                    f"{delta:+.3f}",
                    f"{on.paced_ms('p50_ms') - off.paced_ms('p50_ms'):+.3f}",
                    f"{on.c32_rps / off.c32_rps:.2f}" if off.c32_rps else "-",
                    f"{cpu_on - cpu_off:+.3f}" if cpu_on and cpu_off else "-",
                ]
            )
        targets.append(
            [
                f"enqueue, {engine}",
                f"p50(monitor external) - p50(off) <= {ENQUEUE_TARGET_MS} ms at c=1",
                ", ".join(deltas) + " ms" if deltas else "-",
                _verdict(met),
            ]
        )
    lines += [
        "",
        "Monitor (external) minus off, same round:",
        "",
        *table([
                "round", "engine", "c=1 p50 ms (wrk)", "paced p50 ms", "c=32 req/s vs off",
                "c=32 gateway CPU ms/req",
            ], overhead_rows),
    ]  # fmt: skip
    return lines, targets


def _cpu_per_request(cell: EnqueueCell) -> float | None:
    """The gateway's CPU per request at c=32, in ms (its process, writer thread included)."""
    cpu = cell.cpu_mean("gateway")
    rps = cell.c32_rps
    return cpu / 100 / rps * 1000 if cpu is not None and rps else None


def scoring_section(cells: list[ScoringCell], plan: Plan) -> tuple[list[str], list[list[str]]]:
    lines = [
        "## 2. Scoring throughput, one and two scorers (PostgreSQL)",
        "",
        f"{plan.items} pending items enqueued through a gateway, then the scorers started at"
        f" once; judge {plan.judge_latency:g} s ± {plan.judge_jitter:.0%} a call,"
        f" {CALLS_PER_SCORING} calls a scoring, `judge.max_concurrency: {plan.concurrency}`"
        " and `judge.cache_size: 0` per scorer. `steady`: scorings/s between the 10th and"
        " 90th percentile completions; `overall`: all items over first claim to last"
        " completion. `in flight`: each scorer's mean scorings in flight over the steady"
        " window (from its /metrics every 0.25 s). CPU in % of one core, from the scorers"
        " being ready to the last completion.",
        "",
    ]
    rows = []
    for c in cells:
        w = c.watched
        cpu = " / ".join(
            fmt(w.cpu.get(k), 0)
            for k in [*(f"scorer {i + 1}" for i in range(c.scorers)), "judge", "postgres", "other"]
        )
        rows.append(
            [
                str(c.round),
                str(c.scorers),
                fmt(c.steady_rate, 2),
                fmt(c.overall_rate, 2),
                fmt(c.span, 1),
                " + ".join(str(n) for n in w.claimed),
                " / ".join(fmt(v, 1) for v in c.mean_in_flight()) or "-",
                str(w.judge.get("peak_in_flight", "-")),
                str(w.judge.get("judge_calls", "-")),
                fmt(w.judge.get("service_ms_p50"), 0),
                cpu,
                ", ".join(f"{k} {v}" for k, v in sorted(w.statuses.items())),
            ]
        )
    lines += table([
            "round", "scorers", "steady scorings/s", "overall scorings/s", "first claim to done s",
            "claimed each", "in flight each", "judge peak in flight", "judge calls",
            "judge call p50 ms", "CPU scorers / judge / PG / other", "statuses",
        ], rows)  # fmt: skip
    ratio_rows = []
    met = []
    for round_ in range(1, plan.rounds + 1):
        pair = {c.scorers: c for c in cells if c.round == round_}
        if 1 not in pair or 2 not in pair:
            continue
        one, two = pair[1], pair[2]
        steady = two.steady_rate / one.steady_rate if one.steady_rate and two.steady_rate else None
        overall = (
            two.overall_rate / one.overall_rate if one.overall_rate and two.overall_rate else None
        )
        if steady is not None:
            met.append(steady >= SCALING_TARGET)
        ratio_rows.append(
            [
                str(round_),
                fmt(one.steady_rate, 2),
                fmt(two.steady_rate, 2),
                f"{fmt(steady, 2)}x",
                f"{fmt(overall, 2)}x",
            ]
        )
    lines += [
        "",
        *table(
            ["round", "1 scorer steady/s", "2 scorers steady/s", "ratio steady", "ratio overall"],
            ratio_rows,
        ),
    ]
    measured = ", ".join(row[3] for row in ratio_rows) or "-"
    target = [
        "scaling, 2 scorers",
        f">= {SCALING_TARGET}x one scorer's scorings/s (steady)",
        measured,
        _verdict(met),
    ]
    return lines, [target]


def render(
    date: str,
    source: str,
    machine: list[str],
    enqueue: list[EnqueueCell],
    scoring: list[ScoringCell],
    plan: Plan,
) -> str:
    lines = [
        f"# Scale-out: enqueue cost and scorer scaling ({date})",
        "",
        "`python -m bench scaleout` (`bench/store/scaleout.py` says what runs and why). Code: "
        f"{source}. The machine is shared and noisy (±20 % between runs): the configurations"
        " take turns and every round is shown.",
        "",
        *(f"- {line}" for line in machine),
        "",
    ]
    targets: list[list[str]] = []
    if enqueue:
        section, found = enqueue_section(enqueue, plan)
        lines += [*section, ""]
        targets += found
    if scoring:
        section, found = scoring_section(scoring, plan)
        lines += [*section, ""]
        targets += found
    lines += ["## Targets", "", *table(["target", "wanted", "measured", ""], targets), ""]
    return "\n".join(lines)


# -- main ---------------------------------------------------------------------------------


def run(plan: Plan) -> tuple[list[str], list[EnqueueCell], list[ScoringCell]]:
    """Start the cluster and the fake upstream, run the parts; everything stops at the end."""
    require_wrk()
    started = time.monotonic()
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with contextlib.ExitStack() as stack:
        work_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-scaleout-")))
        _log("starting a throwaway PostgreSQL cluster")
        cluster = start_cluster(_pg_bin())
        stack.callback(cluster.stop)
        settings = _durable(cluster)
        procs = stack.enter_context(Processes())
        upstream = start_fake(procs, work_dir, chunks=50, name="upstream")
        quiet = Quiet(enabled=plan.wait_quiet)
        ctx = Context(procs, work_dir, upstream, cluster, plan, quiet)
        enqueue = run_enqueue(ctx) if "enqueue" in plan.parts else []
        scoring = run_scoring(ctx) if "scoring" in plan.parts else []
    machine = [
        machine_line(),
        f"PostgreSQL {settings['server_version']}, a throwaway cluster on 127.0.0.1 (TCP),"
        f" fsync={settings['fsync']}, synchronous_commit={settings['synchronous_commit']},"
        f" full_page_writes={settings['full_page_writes']},"
        f" shared_buffers={settings['shared_buffers']}; SQLite in WAL mode on the local disk",
        "everything on this one machine: gateway, PostgreSQL, fakes, wrk and the scorers"
        " share the cores",
        f"load average at the start {load_start}, at the end "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
        + f"; the run took {time.monotonic() - started:.0f} s, {quiet.waited:.0f} s of it"
        f" waiting before cells for the rest of the machine to use < {QUIET_CORES} cores"
        f" ({quiet.unquiet} cells started without such a moment, after {QUIET_MAX_WAIT:g} s)",
    ]
    return machine, enqueue, scoring


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench scaleout", description=__doc__)
    defaults = Plan()
    parser.add_argument("--rounds", type=int, default=defaults.rounds, help="rounds (2)")
    parser.add_argument("--c1-seconds", type=float, default=defaults.c1_seconds)
    parser.add_argument("--c32-seconds", type=float, default=defaults.c32_seconds)
    parser.add_argument("--paced-seconds", type=float, default=defaults.paced_seconds)
    parser.add_argument("--items", type=int, default=defaults.items, help="work items (192)")
    parser.add_argument("--concurrency", type=int, default=defaults.concurrency)
    parser.add_argument("--judge-latency", type=float, default=defaults.judge_latency)
    parser.add_argument(
        "--only", choices=("enqueue", "scoring"), help="run one part only (default both)"
    )
    parser.add_argument(
        "--no-wait-quiet",
        action="store_true",
        help="start each cell at once, without waiting for the rest of the machine to calm",
    )
    parser.add_argument("--out", type=Path, help="the markdown file (bench/results/scaleout-...)")
    args = parser.parse_args(argv)
    # Ctrl-C and SIGTERM stop the run, also when it was started with SIGINT ignored (`&`).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    os.environ.update(ENV)
    plan = Plan(
        rounds=args.rounds,
        c1_seconds=args.c1_seconds,
        c32_seconds=args.c32_seconds,
        paced_seconds=args.paced_seconds,
        items=args.items,
        concurrency=args.concurrency,
        judge_latency=args.judge_latency,
        parts=(args.only,) if args.only else ("enqueue", "scoring"),
        wait_quiet=not args.no_wait_quiet,
    )
    date = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    source = source_note()  # before the run: the code the gateways start with
    try:
        machine, enqueue, scoring = run(plan)
    except WrkMissing as exc:
        print(f"bench.store.scaleout: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "bench.store.scaleout: interrupted; every process it started was stopped",
            file=sys.stderr,
        )
        return 130
    report = render(date, source, machine, enqueue, scoring, plan)
    out = args.out or RESULTS / f"scaleout-{date}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
    print(report)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
