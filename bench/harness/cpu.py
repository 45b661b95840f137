"""CPU over a span: of process trees, this process and the whole machine; and a wait for
a moment when the rest of the machine is nearly idle.
"""

from __future__ import annotations

import contextlib
import resource
import time
from collections.abc import Callable

import psutil

from bench.harness.procs import machine_busy_seconds

QUIET_CORES = 0.35  # a cell starts once the machine's other load is below this (cores) ...
QUIET_WINDOW = 0.3  # ... over this many seconds
QUIET_MAX_WAIT = 10.0  # or after this long: the wait is reported, the cell runs anyway
SLICE_QUIET_WAIT = 3.0  # the same before each slice of the enqueue part
QUIET_BUDGET = 60.0  # seconds of waiting in a whole run, so that it stays near 5 minutes


def tree_cpu(pid: int) -> float:
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
