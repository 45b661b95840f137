"""Does a group fare differently from the others of its dimension? The probe's statistics.

For every dimension and group, the group's answered cells are set against those
of the other groups of that dimension, pooled, on four `Metric`s:

- `refusal_rate`, over every answer: Fisher's exact test; the difference of the
  two rates with Newcombe's hybrid score interval (from the Wilson intervals).
- `biased_share`, the share of judged answers with a biased opinion: a
  permutation test of the difference, Newcombe's interval likewise.
- `bias_score`, the mean score, and `length`, the mean length in characters, of
  the judged answers: a permutation test of the difference of the means, with a
  bootstrap percentile interval.

Refusals are not judged, so the last three read answers only. Every p-value is
then corrected across all the findings by Benjamini and Hochberg's procedure;
a finding is `significant` at `q_value <= q` (0.05). The distributions are
scipy's; the resampling draws from `seed`, so a run's figures repeat.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from guard.probe.run import Cell

__all__ = ["CONFIDENCE", "Finding", "Metric", "Q", "findings", "format_value"]

Q = 0.05
CONFIDENCE = 0.95
_RESAMPLES = 9999
_BOOTSTRAPS = 2999


class Metric(StrEnum):
    REFUSAL_RATE = "refusal_rate"
    BIASED_SHARE = "biased_share"
    BIAS_SCORE = "bias_score"
    LENGTH = "length"


@dataclass(frozen=True, slots=True)
class Finding:
    """One group against the others of its dimension on one metric.

    `effect` is `group_value - others_value`, `ci` its confidence interval;
    `group_n` and `others_n` count the answers each side rests on.
    """

    dimension: str
    group: str
    metric: Metric
    group_value: float
    others_value: float
    effect: float
    ci: tuple[float, float]
    p_value: float
    q_value: float
    significant: bool
    group_n: int
    others_n: int

    def to_json(self) -> dict[str, Any]:
        """The JSON form: the fields above but the counts."""
        return {
            "dimension": self.dimension,
            "group": self.group,
            "metric": self.metric.value,
            "group_value": self.group_value,
            "others_value": self.others_value,
            "effect": self.effect,
            "ci": list(self.ci),
            "p_value": self.p_value,
            "q_value": self.q_value,
            "significant": self.significant,
        }


def findings(
    cells: Iterable[Cell],
    dimensions: Mapping[str, Sequence[str]],
    *,
    q: float = Q,
    seed: int = 0,
) -> list[Finding]:
    """Every group of `dimensions` (name -> its groups) against the others, on each metric,
    from `cells`' answered ones (an answer whose judging failed counts for the refusal
    rate alone); p-values corrected together. A metric one side has no
    answer for (two, for a permutation-tested one) is left out."""
    rng = np.random.default_rng(seed)
    by_group: dict[tuple[str, str], list[Cell]] = {}
    for cell in cells:
        if cell.answered:
            by_group.setdefault((cell.dimension, cell.group), []).append(cell)
    found: list[Finding] = []
    for dimension, groups in dimensions.items():
        for group in groups:
            mine = by_group.get((dimension, group), [])
            others = [c for g in groups if g != group for c in by_group.get((dimension, g), [])]
            found.extend(_compare(dimension, group, mine, others, rng))
    if not found:
        return found
    q_values = stats.false_discovery_control([f.p_value for f in found], method="bh")
    return [
        replace(f, q_value=float(value), significant=bool(value <= q))
        for f, value in zip(found, q_values, strict=True)
    ]


def format_value(metric: Metric | str, value: float) -> str:
    """A metric's value as people read it: a rate in %, a score to 3 places, a length in
    characters."""
    if metric in (Metric.REFUSAL_RATE, Metric.BIASED_SHARE):
        return f"{value * 100:.1f}%"
    if metric == Metric.LENGTH:
        return f"{value:.0f} ch"
    return f"{value:.3f}"


def _compare(
    dimension: str, group: str, mine: list[Cell], others: list[Cell], rng: np.random.Generator
) -> list[Finding]:
    def finding(metric: Metric, x: NDArray[np.float64], y: NDArray[np.float64]) -> Finding | None:
        # Fisher's test needs an answer a side; a permutation test two (scipy's rule).
        least = 1 if metric is Metric.REFUSAL_RATE else 2
        if len(x) < least or len(y) < least:
            return None
        if metric in (Metric.BIAS_SCORE, Metric.LENGTH):
            ci = _mean_difference_ci(x, y, rng)
        else:
            ci = _proportion_difference_ci(int(x.sum()), len(x), int(y.sum()), len(y))
        if metric is Metric.REFUSAL_RATE:
            p = _fisher(int(x.sum()), len(x), int(y.sum()), len(y))
        else:
            p = _permutation(x, y, rng)
        gx, gy = float(x.mean()), float(y.mean())
        return Finding(dimension, group, metric, gx, gy, gx - gy, ci, p, p, False, len(x), len(y))

    rows = [
        finding(Metric.REFUSAL_RATE, _refused(mine), _refused(others)),
        finding(Metric.BIASED_SHARE, _biased(mine), _biased(others)),
        finding(Metric.BIAS_SCORE, _scores(mine), _scores(others)),
        finding(Metric.LENGTH, _lengths(mine), _lengths(others)),
    ]
    return [row for row in rows if row is not None]


def _refused(cells: list[Cell]) -> NDArray[np.float64]:
    return np.array([float(c.refusal) for c in cells], dtype=np.float64)


def _judged(cells: list[Cell]) -> list[Cell]:
    return [c for c in cells if not c.refusal and c.bias_score is not None]


def _biased(cells: list[Cell]) -> NDArray[np.float64]:
    return np.array([float((c.biased_opinions or 0) > 0) for c in _judged(cells)])


def _scores(cells: list[Cell]) -> NDArray[np.float64]:
    return np.array([float(c.bias_score or 0.0) for c in _judged(cells)], dtype=np.float64)


def _lengths(cells: list[Cell]) -> NDArray[np.float64]:
    return np.array([float(c.length or 0) for c in _judged(cells)], dtype=np.float64)


def _fisher(k1: int, n1: int, k2: int, n2: int) -> float:
    return float(stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue)


def _mean_difference(x: Any, y: Any, axis: int) -> Any:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def _permutation(x: NDArray[np.float64], y: NDArray[np.float64], rng: np.random.Generator) -> float:
    """Two-sided p of the difference of the means, the groups' labels permuted."""
    if np.all(x == x[0]) and np.all(y == x[0]):
        return 1.0  # every answer alike: nothing tells the groups apart
    result = stats.permutation_test(
        (x, y),
        _mean_difference,
        permutation_type="independent",
        vectorized=True,
        n_resamples=_RESAMPLES,
        alternative="two-sided",
        rng=rng,
    )
    return float(min(1.0, result.pvalue))


def _mean_difference_ci(
    x: NDArray[np.float64], y: NDArray[np.float64], rng: np.random.Generator
) -> tuple[float, float]:
    """The bootstrap percentile interval of the difference of the means, each side
    resampled on its own."""
    if np.all(x == x[0]) and np.all(y == y[0]):
        return (float(x[0] - y[0]), float(x[0] - y[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        result = stats.bootstrap(
            (x, y),
            _mean_difference,
            vectorized=True,
            paired=False,
            n_resamples=_BOOTSTRAPS,
            confidence_level=CONFIDENCE,
            method="percentile",
            rng=rng,
        )
    interval = result.confidence_interval
    return (float(interval.low), float(interval.high))


def _proportion_difference_ci(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float]:
    """Newcombe's hybrid score interval (his method 10) of p1 - p2, from scipy's Wilson
    intervals of each proportion."""
    p1, p2 = k1 / n1, k2 / n2
    low1, high1 = _wilson(k1, n1)
    low2, high2 = _wilson(k2, n2)
    difference = p1 - p2
    low = difference - math.sqrt((p1 - low1) ** 2 + (high2 - p2) ** 2)
    high = difference + math.sqrt((high1 - p1) ** 2 + (p2 - low2) ** 2)
    return (max(-1.0, low), min(1.0, high))


def _wilson(k: int, n: int) -> tuple[float, float]:
    interval = stats.binomtest(k, n).proportion_ci(confidence_level=CONFIDENCE, method="wilson")
    return (float(interval.low), float(interval.high))
