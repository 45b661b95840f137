"""What the gateway's score store says about one benchmark cell (read-only SQLite)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.harness.report import percentile

__all__ = ["ScoreStats", "pending_count", "score_stats", "wait_drained"]


@contextlib.contextmanager
def _reader(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        yield conn
    finally:
        conn.close()


def pending_count(path: Path, since: float) -> int:
    """Rows created since `since` that are not final yet, or whose explanation is pending."""
    if not path.exists():
        return 0
    with _reader(path) as conn:
        (count,) = conn.execute(
            "SELECT COUNT(*) FROM scores WHERE created_at >= ?"
            " AND (status = 'pending' OR reason_status = 'pending')",
            (since,),
        ).fetchone()
    return int(count)


def wait_drained(path: Path, since: float, *, timeout: float) -> float | None:
    """Seconds until no row created since `since` is pending; None if `timeout` passed first."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            if pending_count(path, since) == 0:
                return round(time.monotonic() - started, 3)
        except sqlite3.OperationalError:
            pass  # a checkpoint in progress; ask again
        time.sleep(0.02)
    return None


@dataclass
class ScoreStats:
    """Rows of one cell, by status, and figures about the scored ones."""

    rows: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    scored_per_s: float | None = None
    stored_p50_ms: float | None = None  # request arrival (created_at) -> stored (updated_at)
    stored_p99_ms: float | None = None
    # About the responses judged (not served from the score cache):
    judge_calls: dict[str, int] = field(default_factory=dict)  # calls per response -> rows
    judge_calls_mean: float | None = None
    judge_tokens_mean: float | None = None
    judge_ms_p50: float | None = None  # the scorer's own step timings, summed per response
    cache_hits: int = 0  # scored rows whose result says `cached`

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def score_stats(path: Path, since: float) -> ScoreStats:
    """Summarise the rows created since `since`."""
    stats = ScoreStats()
    if not path.exists():
        return stats
    with _reader(path) as conn:
        rows = conn.execute(
            "SELECT status, status_reason, created_at, updated_at, result FROM scores"
            " WHERE created_at >= ?",
            (since,),
        ).fetchall()
    stats.rows = len(rows)
    stats.statuses = dict(
        Counter(status if reason is None else f"{status}:{reason}" for status, reason, *_ in rows)
    )
    scored = [
        (created, updated, result)
        for status, _, created, updated, result in rows
        if status == "scored"
    ]
    if not scored:
        return stats
    delays = [(updated - created) * 1000 for created, updated, _ in scored if updated]
    stats.stored_p50_ms = percentile(delays, 0.5, 3)
    stats.stored_p99_ms = percentile(delays, 0.99, 3)
    span = max(updated or created for created, updated, _ in scored) - min(c for c, _, _ in scored)
    stats.scored_per_s = round(len(scored) / span, 1) if span > 0 else None
    calls: list[int] = []
    tokens: list[int] = []
    judge_ms: list[float] = []
    for _, _, text in scored:
        result = json.loads(text) if text else {}
        if result.get("cached"):
            stats.cache_hits += 1
            continue  # the figures below are about responses the judge actually saw
        calls.append(int(result.get("judgeCalls") or 0))
        usage = result.get("usage") or {}
        tokens.append(int(usage.get("promptTokens", 0)) + int(usage.get("completionTokens", 0)))
        durations = result.get("durationsMs") or {}
        if durations:
            judge_ms.append(float(sum(durations.values())))
    if not calls:
        return stats
    stats.judge_calls = {str(key): value for key, value in sorted(Counter(calls).items())}
    stats.judge_calls_mean = round(statistics.fmean(calls), 3)
    stats.judge_tokens_mean = round(statistics.fmean(tokens), 1)
    stats.judge_ms_p50 = percentile(judge_ms, 0.5, 3)
    return stats
