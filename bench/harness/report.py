"""The report helpers every scenario shares: a figure's text, a markdown table, a
percentile.

>>> fmt(None), fmt(2.50), fmt(1234.567, 1), fmt(1234567), fmt("n/a")
('-', '2.5', '1,234.6', '1,234,567', 'n/a')
>>> table(["cell", "p50 ms"], [["off", 1.25], ["monitor", None]])
['| cell | p50 ms |', '|---|---|', '| off | 1.25 |', '| monitor | - |']
>>> percentile([1.0, 2.0, 3.0, 4.0], 0.5), percentile([], 0.5)
(2.5, None)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["fmt", "percentile", "progress", "table", "write_report"]


def fmt(value: Any, digits: int | None = None) -> str:
    """A figure as a report shows it: "-" for none; a float as `:g`, or with `digits`
    after the point; thousands apart with commas."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,g}" if digits is None else f"{value:,.{digits}f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def table(
    header: Sequence[str], rows: Iterable[Sequence[Any]], digits: int | None = None
) -> list[str]:
    """A markdown table's lines; each cell through `fmt` (strings pass as they are)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(value, digits) for value in row) + " |" for row in rows]
    return lines


def percentile(values: Iterable[float], share: float, digits: int | None = None) -> float | None:
    """The `share` quantile (0.5 for p50) by linear interpolation between the nearest
    ranks (numpy's default, and `statistics.quantiles`'s "inclusive"); None for no
    values. `digits` rounds it."""
    ordered = sorted(values)
    if not ordered:
        return None
    at = share * (len(ordered) - 1)
    below, above = ordered[math.floor(at)], ordered[math.ceil(at)]
    value = below + (above - below) * (at - math.floor(at))
    return value if digits is None else round(value, digits)


def write_report(text: str, out: Path) -> None:
    """Write a report to `out` (its folder made when missing) and print it; stderr says where."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text if text.endswith("\n") else text + "\n")
    print(text)
    print(f"wrote {out}", file=sys.stderr)


def progress(scenario: str) -> Callable[[str], None]:
    """A scenario's progress lines, on stderr: `bench <scenario>: <message>`."""

    def say(message: str) -> None:
        print(f"bench {scenario}: {message}", file=sys.stderr, flush=True)

    return say
