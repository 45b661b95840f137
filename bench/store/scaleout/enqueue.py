"""Part 1: what enqueueing costs a request, per store (off, SQLite, PostgreSQL), in rounds."""

from __future__ import annotations

import contextlib
import functools
import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import client
from bench.harness.cpu import SLICE_QUIET_WAIT, CpuWatch, tree_cpu
from bench.harness.loadgen import LoadResult, run_wrk
from bench.harness.procs import ServerProcess
from bench.peers.runner import chat_body
from bench.store.scaleout.plan import CONFIGS, note
from bench.store.scaleout.processes import Context, fresh_database, pending_work, start_gateway


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
                database, store_url = stack.enter_context(fresh_database(ctx.cluster))
            mode = "off" if config == "off" else "monitor"
            gateway = start_gateway(ctx, name, mode=mode, store_url=store_url)
            stack.callback(ctx.procs.stop, gateway)
            running.append(_Running(EnqueueCell(config, round_), gateway, name, database))
        _measure_round(ctx, running)
        for each in running:  # a graceful stop: its writer commits what it holds
            ctx.procs.stop(each.gateway)
            each.cell.enqueued = pending_work(ctx, each.cell.config, each.name, each.database)
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
            note(f"  {each.cell.config}: {load.errors} errors, {load.non_2xx} non-2xx from wrk")
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
                    "postgres": functools.partial(tree_cpu, ctx.cluster.postmaster_pid()),
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
                        note(f"  {log.stem}: answered {status}: {line.strip()[:600]}")
                    failed[status] += 1
    return dict(failed)


def run_enqueue(ctx: Context) -> list[EnqueueCell]:
    cells = []
    for round_ in range(1, ctx.plan.rounds + 1):
        note(f"enqueue, round {round_}: {', '.join(CONFIGS)} side by side, taking turns")
        for cell in _enqueue_round(ctx, round_):
            note(
                f"  {cell.config:10} c=1 p50 {cell.c1_ms('p50_ms'):.3f} ms"
                f" ({sum(load.requests for load in cell.c1)} req), paced p50"
                f" {cell.paced_ms('p50_ms'):.3f} ms, c=32 {cell.c32_rps:.0f} req/s,"
                f" enqueued {cell.enqueued} of {cell.sent}"
            )
            cells.append(cell)
    return cells
