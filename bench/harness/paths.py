"""Where the bench reads and writes: the checkout, and `bench/results/` for reports."""

from __future__ import annotations

from pathlib import Path

__all__ = ["RESULTS", "ROOT"]

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
