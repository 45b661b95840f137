"""What the soak samples of the gateway every few seconds: the process from /proc, the
rest from `/metrics`, the store's files, the machine's load, and the interval's latency."""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass
from pathlib import Path

import aiohttp

__all__ = ["METRICS", "LoopLag", "Process", "Sample", "percentile", "read_metrics", "store_bytes"]

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


def percentile(values: list[float], share: float) -> float | None:
    """Nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1)
