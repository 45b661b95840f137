"""What the soak samples of the gateway every few seconds: the process from /proc, the
rest from `/metrics`, the store's files, the machine's load, and the interval's latency."""

from __future__ import annotations

import asyncio
import os
import re
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bench.harness.procs import ServerProcess, machine_busy_seconds
from bench.harness.report import percentile
from bench.soak.figures import ANSWERED
from bench.soak.plan import SoakPlan, phase_at, phases, schedule
from bench.soak.traffic import KEYS, Traffic

__all__ = ["METRICS", "LoopLag", "Process", "Sample", "Sampler", "read_metrics", "store_bytes"]

SCRAPE_TIMEOUT = 10.0  # seconds; a scrape that takes longer is recorded as missing

# The /metrics series a sample keeps (summed over their labels).
METRICS = {
    "tasks": "gateway_asyncio_tasks",
    "queue_depth": "bias_scoring_queue_depth",
    "scorings": "bias_scorings_in_flight",
    "judge_in_flight": "bias_judge_calls_in_flight",
    "work_pending": "bias_work_pending",
    "judge_429s": "bias_judge_rate_limited_total",
    "skipped": "bias_skipped_total",
    "dropped": "bias_dropped_total",
    "served_seconds": "gateway_request_duration_seconds_sum",
    "served": "gateway_request_duration_seconds_count",
}
_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})? (\S+)$", re.MULTILINE)


@dataclass
class Sample:
    """The gateway at `t` seconds into the run; latencies are of the interval since the last."""

    t: float
    phase: str  # burst or gap
    gap_end: bool  # the last moment of an idle gap: what "baseline" is judged on
    rss_mb: float
    fds: int
    cpu_percent: float  # the gateway's, of one core, over the interval
    tasks: float | None
    queue_depth: float | None
    scorings: float | None
    judge_in_flight: float | None
    work_pending: float | None
    judge_429s: float | None
    skipped: float | None
    dropped: float | None
    store_mb: float  # the SQLite file
    wal_mb: float  # its -wal and -shm
    load1: float
    client_in_flight: int
    requests: int  # model requests answered in the interval
    p50_ms: float | None
    p99_ms: float | None
    served_mean_ms: float | None  # the mean request duration the gateway itself measured
    scrape_ms: float  # how long /metrics took to answer
    lag_ms: float  # the harness's own event-loop lag, the worst of the interval


class Process:
    """One process read from /proc: resident memory, open descriptors, CPU time."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._ticks = os.sysconf("SC_CLK_TCK")
        self._cpu_mark: tuple[float, float] | None = None

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) * 1024 / 1e6, 2)
        return 0.0

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def cpu_seconds(self) -> float:
        stat = Path(f"/proc/{self.pid}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        return (int(fields[11]) + int(fields[12])) / self._ticks  # utime + stime

    def cpu_percent(self, now: float) -> float:
        """% of one core since the previous call (0 the first time)."""
        spent = self.cpu_seconds()
        mark, self._cpu_mark = self._cpu_mark, (now, spent)
        if mark is None or now <= mark[0]:
            return 0.0
        return round(100 * (spent - mark[1]) / (now - mark[0]), 1)


class LoopLag:
    """How late this process's own event loop wakes up: a loaded harness would show up
    as latency it did not measure in the gateway."""

    def __init__(self, tick: float = 0.05) -> None:
        self.tick = tick
        self.worst = 0.0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(self.tick)
            self.worst = max(self.worst, loop.time() - before - self.tick)

    def take(self) -> float:
        """The worst lag since the last call, in ms."""
        worst, self.worst = self.worst, 0.0
        return round(worst * 1000, 1)


async def read_metrics(
    session: aiohttp.ClientSession, url: str, api_key: str
) -> dict[str, float | None]:
    """The `METRICS` series from the gateway's `/metrics`; None for one it does not have."""
    headers = {"authorization": f"Bearer {api_key}"}
    async with session.get(f"{url}/metrics", headers=headers) as response:
        response.raise_for_status()
        text = await response.text()
    totals: dict[str, float] = {}
    for name, value in _LINE.findall(text):
        totals[name] = totals.get(name, 0.0) + float(value)
    return {field: totals.get(name) for field, name in METRICS.items()}


def store_bytes(path: Path) -> tuple[int, int]:
    """The SQLite file's size and its -wal and -shm files' together."""

    def size(file: Path) -> int:
        try:
            return file.stat().st_size
        except OSError:
            return 0

    side = size(path.with_name(path.name + "-wal")) + size(path.with_name(path.name + "-shm"))
    return size(path), side


class Sampler:
    """Samples the gateway (`servers[0]`) while `traffic` runs, on the plan's schedule."""

    def __init__(self, traffic: Traffic, servers: tuple[ServerProcess, ...], store: Path) -> None:
        self.traffic = traffic
        self.gateway = servers[0]
        self.servers = servers
        self.store = store
        self.process = Process(servers[0].popen.pid)
        self.samples: list[Sample] = []
        self._seen = 0  # outcomes already counted in a sample
        self._cpu_mark = (time.monotonic(), machine_busy_seconds(), self._ours())
        self.machine_cpu: list[tuple[float, float, float]] = []  # t, busy %, others' %
        self.lag = LoopLag()
        self._served: tuple[float, float] | None = None  # the gateway's duration sum, count
        self.skipped = 0  # scheduled samples skipped because the sampler was late
        self._began = time.monotonic()
        own = resource.getrusage(resource.RUSAGE_SELF)
        self._cpu_start = {server.name: server.cpu_seconds() for server in servers}
        self._cpu_start["harness"] = own.ru_utime + own.ru_stime

    def cpu_shares(self) -> dict[str, float]:
        """% of one core each process used since the sampler began."""
        wall = max(time.monotonic() - self._began, 1e-9)
        own = resource.getrusage(resource.RUSAGE_SELF)
        spent = {server.name: server.cpu_seconds() for server in self.servers}
        spent["harness"] = own.ru_utime + own.ru_stime
        return {
            name: round(100 * (value - self._cpu_start[name]) / wall, 1)
            for name, value in spent.items()
        }

    def _ours(self) -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        return own.ru_utime + own.ru_stime + sum(s.cpu_seconds() for s in self.servers)

    async def run(self, plan: SoakPlan) -> None:
        """Sample on `schedule(plan)`; a time already past the next one is skipped (counted),
        so a stall does not end in a flood of samples."""
        laid = phases(plan)
        lag = asyncio.create_task(self.lag.run())
        entries = schedule(plan)
        for index, (at, gap_end) in enumerate(entries):
            delay = at - self.traffic.now()
            if delay > 0:
                await asyncio.sleep(delay)
            if index + 1 < len(entries) and self.traffic.now() >= entries[index + 1][0]:
                self.skipped += 1
                continue
            self.samples.append(await self.take(phase_at(laid, at), gap_end))
        lag.cancel()

    async def take(self, phase: str, gap_end: bool) -> Sample:
        t = round(self.traffic.now(), 2)
        now = time.monotonic()
        rss, fds, cpu = self.process.rss_mb(), self.process.fds(), self.process.cpu_percent(now)
        busy, ours = machine_busy_seconds(), self._ours()
        wall = max(now - self._cpu_mark[0], 1e-9)
        machine = 100 * (busy - self._cpu_mark[1]) / wall
        others = machine - 100 * (ours - self._cpu_mark[2]) / wall
        self._cpu_mark = (now, busy, ours)
        self.machine_cpu.append((t, round(machine, 1), round(max(0.0, others), 1)))
        store, side = store_bytes(self.store)
        fresh = self.traffic.outcomes[self._seen :]
        self._seen += len(fresh)
        latencies = [o.latency_ms for o in fresh if o.family == "model" and o.result in ANSWERED]
        in_flight = self.traffic.in_flight
        # Its own connection each time, so none is held open between samples.
        timeout = aiohttp.ClientTimeout(total=SCRAPE_TIMEOUT)
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session:
                metrics = await read_metrics(session, self.gateway.url, KEYS["admin"])
        except (aiohttp.ClientError, TimeoutError) as exc:
            print(f"bench soak: /metrics unanswered at {t:g} s: {exc!r}", file=sys.stderr)
            metrics = {}
        scrape_ms = round((time.monotonic() - now) * 1000, 1)
        served = (metrics.get("served_seconds") or 0.0, metrics.get("served") or 0.0)
        served_mean = None
        if self._served is not None and served[1] > self._served[1]:
            served_mean = (served[0] - self._served[0]) / (served[1] - self._served[1]) * 1000
        if metrics:
            self._served = served
        return Sample(
            t=t, phase=phase, gap_end=gap_end, rss_mb=rss, fds=fds, cpu_percent=cpu,
            tasks=metrics.get("tasks"), queue_depth=metrics.get("queue_depth"),
            scorings=metrics.get("scorings"), judge_in_flight=metrics.get("judge_in_flight"),
            work_pending=metrics.get("work_pending"), judge_429s=metrics.get("judge_429s"),
            skipped=metrics.get("skipped"), dropped=metrics.get("dropped"),
            store_mb=round(store / 1e6, 2), wal_mb=round(side / 1e6, 2),
            load1=round(os.getloadavg()[0], 2), client_in_flight=in_flight,
            requests=len(latencies), p50_ms=percentile(latencies, 0.5, 1),
            p99_ms=percentile(latencies, 0.99, 1),
            served_mean_ms=served_mean and round(served_mean, 1), scrape_ms=scrape_ms,
            lag_ms=self.lag.take(),
        )  # fmt: skip
