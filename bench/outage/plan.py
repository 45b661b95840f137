"""What an outage run does (its plan) and what it saw (its run), for the report to read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.outage.load import (
    Poller,
    Sampler,
    Traffic,
)


@dataclass(frozen=True)
class Plan:
    rate: float = 100.0  # requests a second, open loop
    before: float = 15.0  # seconds of load before the server stops
    outage: float = 15.0  # seconds from the stop to the start
    after: float = 15.0  # seconds of load after it is back
    settle: float = 60.0  # the target: every run id final this long after the restart
    settle_limit: float = 120.0  # polling goes on to here, to say when they were
    ttft: float = 0.3  # the upstream's first byte
    chunks: int = 10
    chunk_interval: float = 0.02
    judge_latency: float = 1.0
    jitter: float = 0.3
    max_concurrency: int = 512  # judge.max_concurrency of gateways and scorer (shipped)
    sample_interval: float = 1.0  # /metrics and /readyz, and the database during the load
    quiet_wait: float = 300.0  # seconds to wait, at most, for the rest of the machine to calm
    durable: bool = True  # PostgreSQL's default durability, not the tests' fast settings


@dataclass
class Run:
    """Everything one measurement saw, for `bench.outage.report.figures`."""

    plan: Plan
    marks: dict[str, float]  # Clock seconds: halt, halted, resume, resumed, stopped, settled
    traffic: Traffic
    sampler: Sampler
    poller: Poller
    duplicates: dict[str, int]
    cpu: dict[str, dict[str, float]]  # phase -> process -> % of one core
    judge: dict[str, Any]
    logs: dict[str, dict[str, Any]]
