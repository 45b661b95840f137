"""What a scale-out run measures, its targets, and its log."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bench.harness.report import progress

ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
CONFIGS = ("off", "sqlite", "postgresql")  # the enqueue part's configurations, in turn order
ENQUEUE_TARGET_MS = 0.5
SCALING_TARGET = 1.8
CALLS_PER_SCORING = 3  # faithful pipeline: opinions, verdicts, reason
POLL = 0.05  # seconds between polls of the store while scorers work
SAMPLE = 0.25  # seconds between scrapes of the scorers' /metrics
GAUGE = re.compile(r"^(bias_scorings_in_flight|bias_work_claimed_total) (\S+)$", re.MULTILINE)


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


note = progress("scaleout")
