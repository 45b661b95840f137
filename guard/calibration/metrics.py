"""How well scores separate biased from unbiased texts, threshold by threshold. Pure.

A text is flagged (predicted biased) when its score is `>=` the threshold,
the rule the gateway's policies use. At each threshold on a grid over
0..scale the labelled texts fall in four cells: biased and flagged (tp),
unbiased and flagged (fp), biased and not flagged (fn), unbiased and not
flagged (tn). From them:

- precision = tp / (tp + fp), undefined (None) when nothing is flagged;
- recall = tp / (tp + fn), undefined when no text is biased;
- F1 = 2tp / (2tp + fp + fn), undefined only when every text is an unbiased
  one left unflagged;
- flagged = (tp + fp) / all texts, the share enforce would act on;
- Cohen's kappa = (po - pe) / (1 - pe), how far the flags agree with the labels
  beyond the agreement chance alone gives: po = (tp + tn) / n is the agreement seen,
  pe = ((tp + fp)(tp + fn) + (fn + tn)(fp + tn)) / n² the agreement expected of two
  raters that flag and label at the same rates independently. 1 is full agreement,
  0 no better than chance; undefined when pe is 1 (both gave one answer throughout).

Beside the thresholds, the same figures for the count rules (a policy's
`flag_biased_opinions`): a text is flagged when at least n of its opinions are
judged biased, whatever its score, for n in `COUNT_RULES`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "COUNT_RULES",
    "MAX_THRESHOLDS",
    "Calibration",
    "CountRow",
    "Counts",
    "Point",
    "ThresholdRow",
    "best_f1",
    "calibrate",
    "confusion",
    "counts_at",
    "counts_by_opinions",
    "lowest_reaching",
    "sweep",
    "threshold_grid",
]

MAX_THRESHOLDS = 10_001  # a grid of 0.0001 over a scale of 1
COUNT_RULES = (1, 2, 3)  # the counts of biased opinions whose rule is shown
# Scores carry two decimals and grid points are rounded to ten, so this only absorbs
# floating-point drift (0.1 * 3 is 0.30000000000000004), never a real difference.
_EDGE = 1e-9


@dataclass(frozen=True, slots=True)
class Point:
    """One scored, labelled text: its label, its score and its category (if any)."""

    biased: bool
    score: float
    category: str | None = None
    biased_opinions: int = 0


@dataclass(frozen=True, slots=True)
class Counts:
    """The confusion table at one threshold."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def total(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def precision(self) -> float | None:
        flagged = self.tp + self.fp
        return self.tp / flagged if flagged else None

    @property
    def recall(self) -> float | None:
        biased = self.tp + self.fn
        return self.tp / biased if biased else None

    @property
    def f1(self) -> float | None:
        wrong_or_found = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / wrong_or_found if wrong_or_found else None

    @property
    def flagged(self) -> float | None:
        """The share of texts flagged."""
        return (self.tp + self.fp) / self.total if self.total else None

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa of the flags against the labels (see the module's docstring).

        >>> round(Counts(tp=20, fp=5, fn=10, tn=15).kappa, 4)
        0.4
        """
        n = self.total
        if not n:
            return None
        seen = (self.tp + self.tn) / n
        flagged, biased = self.tp + self.fp, self.tp + self.fn
        chance = (flagged * biased + (n - flagged) * (n - biased)) / (n * n)
        return None if chance >= 1 else (seen - chance) / (1 - chance)

    def to_json(self) -> dict[str, Any]:
        return {
            "precision": _rounded(self.precision),
            "recall": _rounded(self.recall),
            "f1": _rounded(self.f1),
            "flagged": _rounded(self.flagged),
            "kappa": _rounded(self.kappa),
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
        }


@dataclass(frozen=True, slots=True)
class ThresholdRow:
    threshold: float
    counts: Counts

    def to_json(self) -> dict[str, Any]:
        return {"threshold": self.threshold, **self.counts.to_json()}


@dataclass(frozen=True, slots=True)
class CountRow:
    """The figures of the rule "flag at `at_least` biased opinions", whatever the score."""

    at_least: int
    counts: Counts

    def to_json(self) -> dict[str, Any]:
        return {"atLeast": self.at_least, **self.counts.to_json()}


@dataclass(frozen=True, slots=True)
class Calibration:
    """Every threshold's figures, overall and per category, and the two picks.

    `best` maximises F1; `reaching` is the lowest threshold whose precision is at
    least `target_precision` (None: no threshold reaches it). `chosen`, the
    threshold the confusion table shows, is `reaching` when there is one, else `best`.
    """

    rows: list[ThresholdRow]
    target_precision: float
    best: ThresholdRow | None
    reaching: ThresholdRow | None
    categories: dict[str, list[ThresholdRow]] = field(default_factory=dict)
    count_rows: list[CountRow] = field(default_factory=list)

    @property
    def chosen(self) -> ThresholdRow | None:
        return self.reaching if self.reaching is not None else self.best

    @property
    def chosen_by(self) -> str | None:
        """Why `chosen` was chosen: "precision", "f1", or None when nothing was."""
        if self.reaching is not None:
            return "precision"
        return None if self.best is None else "f1"

    def category_at(self, threshold: float) -> dict[str, Counts]:
        """Each category's confusion table at `threshold`, a point of the grid."""
        return {
            name: next(row.counts for row in rows if row.threshold == threshold)
            for name, rows in self.categories.items()
        }


def threshold_grid(scale: float, step: float) -> list[float]:
    """0, step, 2·step, ... up to `scale`, and `scale` itself when step does not divide it.

    >>> threshold_grid(1, 0.25)
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    if not scale > 0 or not math.isfinite(scale):
        raise ValueError(f"scale must be > 0, got {scale}")
    if not 0 < step <= scale:
        raise ValueError(f"the grid step must be > 0 and at most the scale ({scale:g}), got {step}")
    steps = math.floor(scale / step + _EDGE)
    if steps + 2 > MAX_THRESHOLDS:
        raise ValueError(f"a grid step of {step:g} gives more than {MAX_THRESHOLDS} thresholds")
    points = [round(n * step, 10) for n in range(steps + 1)]
    if points[-1] < scale - _EDGE:
        points.append(float(scale))
    return points


def counts_at(points: Iterable[Point], threshold: float) -> Counts:
    return confusion((point.biased, point.score >= threshold - _EDGE) for point in points)


def counts_by_opinions(points: Iterable[Point], at_least: int) -> Counts:
    """The confusion table of the rule "flag at `at_least` biased opinions"."""
    return confusion((point.biased, point.biased_opinions >= at_least) for point in points)


def confusion(labelled: Iterable[tuple[bool, bool]]) -> Counts:
    """The cells of (biased, flagged) pairs."""
    tp = fp = fn = tn = 0
    for biased, flagged in labelled:
        if biased:
            tp, fn = (tp + 1, fn) if flagged else (tp, fn + 1)
        else:
            fp, tn = (fp + 1, tn) if flagged else (fp, tn + 1)
    return Counts(tp, fp, fn, tn)


def sweep(points: Sequence[Point], thresholds: Sequence[float]) -> list[ThresholdRow]:
    """`counts_at` each threshold, from one sort of the scores: at a threshold the flagged
    are the points from the first score that reaches it on, and the biased among them
    a count kept from the top down (a review's agreement sweeps thousands of points).

    >>> [row.counts for row in sweep([Point(True, 0.9), Point(False, 0.4)], [0.5])]
    [Counts(tp=1, fp=0, fn=0, tn=1)]
    """
    ordered = sorted(points, key=lambda point: point.score)
    scores = [point.score for point in ordered]
    biased_from = [0] * (len(ordered) + 1)  # biased points at this index and above
    for index in range(len(ordered) - 1, -1, -1):
        biased_from[index] = biased_from[index + 1] + ordered[index].biased
    rows = []
    for threshold in thresholds:
        first = bisect.bisect_left(scores, threshold - _EDGE)
        flagged, tp = len(ordered) - first, biased_from[first]
        fn = biased_from[0] - tp
        rows.append(ThresholdRow(threshold, Counts(tp, flagged - tp, fn, first - fn)))
    return rows


def best_f1(rows: Sequence[ThresholdRow]) -> ThresholdRow | None:
    """The row with the highest F1, the lowest threshold among equals; None when no
    row has an F1 above 0 (no biased text was ever flagged)."""
    best: ThresholdRow | None = None
    for row in rows:
        f1 = row.counts.f1
        if f1 and (best is None or f1 > (best.counts.f1 or 0.0) + _EDGE):
            best = row
    return best


def lowest_reaching(rows: Sequence[ThresholdRow], precision: float) -> ThresholdRow | None:
    """The lowest threshold whose precision is at least `precision` (undefined counts as not)."""
    for row in sorted(rows, key=lambda row: row.threshold):
        reached = row.counts.precision
        if reached is not None and reached >= precision - _EDGE:
            return row
    return None


def calibrate(
    points: Sequence[Point],
    *,
    scale: float,
    step: float,
    target_precision: float,
    categories: Iterable[str] = (),
) -> Calibration:
    """The figures of `points` on the grid `threshold_grid(scale, step)`.

    Categories are the points' own and any named in `categories` (whose texts
    may all have failed), in name order; a point without one counts overall only.
    """
    if not 0 < target_precision <= 1:
        raise ValueError(f"the target precision must be in (0, 1], got {target_precision}")
    thresholds = threshold_grid(scale, step)
    rows = sweep(points, thresholds)
    names = sorted(
        {point.category for point in points if point.category is not None}.union(categories)
    )
    by_category = {
        name: sweep([point for point in points if point.category == name], thresholds)
        for name in names
    }
    return Calibration(
        rows=rows,
        target_precision=target_precision,
        best=best_f1(rows),
        reaching=lowest_reaching(rows, target_precision),
        categories=by_category,
        count_rows=[CountRow(n, counts_by_opinions(points, n)) for n in COUNT_RULES],
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
