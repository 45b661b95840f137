"""A dozen score records of known scores, keys, models, categories and statuses, made
from `T0` on, for the tests that count what a pair of thresholds would have done."""

from __future__ import annotations

from typing import Any

from gateway.store import ScoreRecord

T0 = 1_764_547_200.0  # 2025-12-01T00:00:00Z


def scored(n: int, score: float, verdict: str, key: str | None, model: str,
           categories: list[str] | None, mode: str = "monitor", at: float | None = None,
           ) -> ScoreRecord:  # fmt: skip
    """Record `rNN`, made at T0 + n seconds unless `at` says otherwise."""
    created_at = T0 + n if at is None else at
    return ScoreRecord(
        run_id=f"r{n:02d}", status="scored", created_at=created_at, model=model, key_name=key,
        mode=mode, score=score, verdict=verdict, categories=categories,
    )  # fmt: skip


def unscored(n: int, status: Any, key: str | None, model: str) -> ScoreRecord:
    return ScoreRecord(
        run_id=f"r{n:02d}", status=status, created_at=T0 + n, model=model, key_name=key,
        mode="monitor",
    )  # fmt: skip


# The verdicts were given at flag 0.6 and block 0.9; the tests ask about other pairs.
RECORDS = [
    scored(1, 0.95, "block", "team-a", "gpt-a", ["gender", "political"], mode="enforce"),
    scored(2, 0.80, "flag", "team-a", "gpt-a", ["gender"]),
    scored(3, 0.79, "flag", "team-b", "gpt-a", ["racial_ethnic"]),
    scored(4, 0.50, "pass", "team-b", "gpt-b", []),
    scored(5, 0.49, "pass", "team-a", "gpt-b", None),
    scored(6, 0.00, "pass", None, "gpt-b", []),
    scored(7, 0.65, "flag", "team-b", "gpt-b", ["gender"]),
    unscored(8, "error", "team-a", "gpt-a"),
    unscored(9, "skipped", "team-b", "gpt-b"),
    unscored(10, "pending", "team-a", "gpt-a"),
    unscored(11, "dropped", None, "gpt-a"),
    # Outside the window: before `since`, and at `until` (exclusive).
    scored(12, 0.9, "flag", "team-a", "gpt-a", ["gender"], at=T0 - 1),
    scored(13, 1.0, "block", "team-a", "gpt-a", ["gender"], at=T0 + 100),
]
