"""How often the judge and the reviewers agree: the figures of `GET /v1/bias/reviews/agreement`.

Pure. Each reviewer's current label of a record (`gateway.store.reviews.Reviewed`) is
one observation: the judge's positive is a flag or a block, the reviewer's is
`biased`. The confusion table, precision, recall, F1 and Cohen's kappa are
`guard.calibration.metrics`' own, the arithmetic `bias-guard calibrate` uses; so are
the thresholds table (the records' scores against the labels, threshold by threshold)
and the lowest threshold reaching a precision. Per category, where reviewers labelled
opinions, each labelled opinion is an observation: the judge's positive is its verdict
biased and naming the category, the reviewer's the same of its label.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from gateway.store.reviews import Reviewed
from guard import is_biased
from guard.calibration.metrics import Point, best_f1, confusion, lowest_reaching, sweep

__all__ = ["GRID_STEPS", "JUDGE_POSITIVE", "agreement", "export_lines"]

JUDGE_POSITIVE = ("flag", "block")
GRID_STEPS = 20  # the thresholds table: twentieths of the scale


def _opinion_pairs(item: Reviewed) -> Iterable[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Each opinion the reviewer labelled, with the judge's verdict on it (None: none)."""
    verdicts = ((item.result or {}).get("analyzeStepResult") or {}).get("results") or []
    for label in item.review.opinions or []:
        index = label.get("index")
        judged = verdicts[index] if isinstance(index, int) and index < len(verdicts) else None
        yield label, judged


def _by_category(reviewed: Sequence[Reviewed], only: str | None) -> dict[str, Any]:
    pairs = [pair for item in reviewed for pair in _opinion_pairs(item)]
    named = {
        category
        for label, judged in pairs
        for category in [
            *(label.get("categories") or []),
            *((judged or {}).get("categories") or []),
        ]
    }
    figures = {}
    for category in sorted(named if only is None else named & {only}):

        def says(labelled: dict[str, Any] | None, biased: bool) -> bool:
            return biased and category in ((labelled or {}).get("categories") or [])  # noqa: B023  # used at once, in this loop's turn

        counts = confusion(
            (
                says(label, bool(label.get("biased"))),
                says(judged, judged is not None and is_biased(str(judged.get("result", "")))),
            )
            for label, judged in pairs
        )
        figures[category] = {"opinions": counts.total, **counts.to_json()}
    return figures


def agreement(
    reviewed: Sequence[Reviewed], *, scale: float, precision: float, category: str | None
) -> dict[str, Any]:
    """The figures of `reviewed` (see the module's docstring); `precision` is the one a
    threshold must reach, `category` narrows the per-category figures to one."""
    counts = confusion(
        (item.review.label == "biased", item.verdict in JUDGE_POSITIVE) for item in reviewed
    )
    points = [
        Point(item.review.label == "biased", item.score)
        for item in reviewed
        if item.score is not None
    ]
    grid = [round(scale * step / GRID_STEPS, 10) for step in range(GRID_STEPS + 1)]
    rows = sweep(points, grid)
    reaching, best = lowest_reaching(rows, precision), best_f1(rows)
    return {
        "reviewed": counts.total,
        "judge": counts.to_json(),
        "categories": _by_category(reviewed, category),
        "thresholds": [row.to_json() for row in rows],
        "precision": precision,
        "reaching": None if reaching is None else reaching.to_json(),
        "best_f1": None if best is None else best.to_json(),
        "scale": scale,
    }


def export_lines(reviewed: Sequence[Reviewed]) -> tuple[list[dict[str, Any]], int]:
    """One labelled line per reviewed record whose text was kept, in the JSONL that
    `bias-guard calibrate` reads (`guard.calibration.labelled`), and how many reviewed
    records were left out for want of their text. A record several reviewers labelled
    takes the newest label (`reviewed` is oldest first)."""
    newest = {item.review.run_id: item for item in reviewed}
    lines, left_out = [], 0
    for run_id, item in newest.items():
        if not item.completion:
            left_out += 1
            continue
        labelled = [
            category
            for opinion in item.review.opinions or []
            if opinion.get("biased")
            for category in opinion.get("categories") or []
        ]
        categories = list(dict.fromkeys(labelled)) or (
            item.categories if item.review.label == "biased" else []
        )
        line = {"text": item.completion, "label": item.review.label, "categories": categories}
        if categories:
            line["category"] = categories[0]  # calibrate's per-category figures read it
        lines.append({**line, "id": run_id, "run_id": run_id, "score": item.score})
    return lines, left_out
