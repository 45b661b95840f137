"""Score bands: equal slices of 0..scale, counted for the CLI's summary and the report."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["HISTOGRAM_BUCKETS", "SUMMARY_BUCKETS", "bucket_labels", "score_buckets"]

SUMMARY_BUCKETS = 5  # the CLI summary's score bands, and the report's first chart
HISTOGRAM_BUCKETS = 10
# Scores carry two decimals, so no real score is this close below a band's edge:
# 0.3 / 1 * 10 is 2.9999999999999996 in floating point, and belongs in [0.3, 0.4).
_EDGE = 1e-9


def score_buckets(scores: Iterable[float], scale: float, buckets: int) -> list[int]:
    """How many `scores` fall in each of `buckets` equal bands over 0..scale.

    A band holds its lower edge (`[low, high)`), the last also `scale` itself;
    scores outside 0..scale count in the nearest band.
    """
    if scale <= 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    if buckets < 1:
        raise ValueError(f"buckets must be >= 1, got {buckets}")
    counts = [0] * buckets
    for value in scores:
        band = int(value / scale * buckets + _EDGE)
        counts[min(max(band, 0), buckets - 1)] += 1
    return counts


def bucket_labels(scale: float, buckets: int) -> list[str]:
    """`[low, high)` per band, as the CLI summary names them; the last one is closed."""
    width = scale / buckets
    return [
        f"[{band * width:.3g}, {(band + 1) * width:.3g}{']' if band == buckets - 1 else ')'}"
        for band in range(buckets)
    ]
