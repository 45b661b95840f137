"""What a soak run does when: its settings, its bursts and gaps, and its sampling times."""

from __future__ import annotations

import argparse
import contextlib
import re
from dataclasses import dataclass

__all__ = ["SoakPlan", "parse_duration", "phase_at", "phases", "schedule"]


@dataclass(frozen=True)
class SoakPlan:
    duration: float = 1800.0
    rate: float = 100.0
    sample_every: float = 5.0
    burst: float = 50.0
    gap: float = 10.0
    warmup: float | None = None  # None: a sixth of the run, at most 5 minutes
    window: float | None = None  # p99 compared over the first and last: 5 min, or a quarter
    settle_timeout: float = 60.0
    ttft: float = 0.1
    chunks: int = 10
    chunk_interval: float = 0.01
    judge_latency: float = 0.3
    jitter: float = 0.3
    judge_429_every: int = 200
    seed: int = 24
    max_in_flight: int = 2000  # beyond this the client sends nothing (counted): it would
    # spend the cores it shares with the gateway on its own backlog

    @property
    def warmup_s(self) -> float:
        return self.warmup if self.warmup is not None else min(300.0, self.duration / 6)

    @property
    def window_s(self) -> float:
        return self.window if self.window is not None else min(300.0, self.duration / 4)


def parse_duration(text: str) -> float:
    """`30m`, `90s`, `1h`, `1h30m` or plain seconds, as seconds."""
    text = text.strip()
    with contextlib.suppress(ValueError):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (say 30m, 90s or 1h)")
    return sum(float(number) * {"h": 3600, "m": 60, "s": 1}[unit] for number, unit in parts)


def phases(plan: SoakPlan) -> list[tuple[float, float, str]]:
    """(start, end, burst|gap) in run seconds; the run always ends with a whole gap."""
    laid: list[tuple[float, float, str]] = []
    start = 0.0
    while start < plan.duration - 1e-9:
        burst_end = min(start + plan.burst, plan.duration - plan.gap)
        if burst_end <= start:
            break
        laid.append((start, burst_end, "burst"))
        laid.append((burst_end, burst_end + plan.gap, "gap"))
        start = burst_end + plan.gap
    return laid


def schedule(plan: SoakPlan) -> list[tuple[float, bool]]:
    """When to sample (run seconds), and whether it is a gap's end."""
    laid = phases(plan)
    end = laid[-1][1] if laid else 0.0
    times = {
        round(step * plan.sample_every, 3): False
        for step in range(int(end / plan.sample_every) + 1)
    }
    for start, stop, phase in laid:
        if phase == "gap":
            times[round(stop - min(0.5, (stop - start) / 4), 3)] = True
    return sorted(times.items())


def phase_at(laid: list[tuple[float, float, str]], t: float) -> str:
    return next((phase for start, stop, phase in laid if start <= t < stop), "gap")
