"""A calibration run as one value: what was read, what the judge said, the figures.

`CalibrationReport.to_json()` is the `--json` document of `bias-guard
calibrate`; its shape is described in docs/guard.md ("Calibrate").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guard.calibration.judging import Judged, JudgeRun
from guard.calibration.labelled import LabelledSet
from guard.calibration.metrics import Calibration, Counts, Point, ThresholdRow, calibrate

__all__ = ["CalibrationReport", "CategoryFigures", "build_report"]


@dataclass(frozen=True, slots=True)
class CategoryFigures:
    """One category's scored texts (how many, how many biased, how many failed) and its
    figures at each threshold."""

    category: str
    items: int
    biased: int
    failed: int
    rows: list[ThresholdRow]


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    source: str
    judge: str
    scale: float
    grid: float
    label_cut: float | None  # JSONL only: the expected score from which a text is biased
    labelled: LabelledSet
    run: JudgeRun
    calibration: Calibration

    @property
    def biased(self) -> int:
        return sum(judged.item.biased for judged in self.run.scored)

    @property
    def confusion(self) -> Counts | None:
        chosen = self.calibration.chosen
        return None if chosen is None else chosen.counts

    def categories(self) -> list[CategoryFigures]:
        figures = []
        for name, rows in self.calibration.categories.items():
            judged = [j for j in self.run.judged if j.item.category == name]
            scored = [j for j in judged if j.score is not None]
            figures.append(
                CategoryFigures(
                    category=name,
                    items=len(scored),
                    biased=sum(j.item.biased for j in scored),
                    failed=len(judged) - len(scored),
                    rows=rows,
                )
            )
        return figures

    def to_json(self) -> dict[str, Any]:
        calibration = self.calibration
        chosen = calibration.chosen
        usage = self.run.usage
        scored = len(self.run.scored)
        return {
            "source": self.source,
            "format": self.labelled.format,
            "scale": self.scale,
            "grid": self.grid,
            "labelCut": self.label_cut,
            "items": {
                "read": len(self.labelled.items),
                "scored": scored,
                "failed": len(self.run.failed),
                "biased": self.biased,
                "unbiased": scored - self.biased,
                "skipped": len(self.labelled.skipped),
                "leftOut": dict(sorted(self.labelled.left_out.items())),
            },
            "judge": {
                "model": self.judge,
                "calls": self.run.judge_calls,
                "promptTokens": usage.prompt_tokens,
                "completionTokens": usage.completion_tokens,
                "totalTokens": usage.prompt_tokens + usage.completion_tokens,
                "seconds": round(self.run.seconds, 3),
            },
            "thresholds": [row.to_json() for row in calibration.rows],
            "biasedOpinions": [row.to_json() for row in calibration.count_rows],
            "bestF1": None if calibration.best is None else calibration.best.to_json(),
            "targetPrecision": {
                "precision": calibration.target_precision,
                "reached": None if calibration.reaching is None else calibration.reaching.to_json(),
            },
            "chosen": {
                "by": calibration.chosen_by,
                "threshold": None if chosen is None else chosen.threshold,
            },
            "categories": [
                {
                    "category": figures.category,
                    "items": figures.items,
                    "biased": figures.biased,
                    "failed": figures.failed,
                    "thresholds": [row.to_json() for row in figures.rows],
                }
                for figures in self.categories()
            ],
            "failures": [_result(judged) for judged in self.run.failed],
            "results": [_result(judged) for judged in self.run.judged],
        }


def build_report(
    labelled: LabelledSet,
    run: JudgeRun,
    *,
    source: str,
    judge: str,
    scale: float,
    grid: float,
    target_precision: float,
    label_cut: float | None = None,
) -> CalibrationReport:
    """The figures of the scored texts of `run`; failed ones are counted, not used."""
    points = [
        Point(judged.item.biased, judged.score, judged.item.category, judged.biased_opinions or 0)
        for judged in run.judged
        if judged.score is not None
    ]
    calibration = calibrate(
        points,
        scale=scale,
        step=grid,
        target_precision=target_precision,
        categories={item.category for item in labelled.items if item.category is not None},
    )
    return CalibrationReport(
        source=source,
        judge=judge,
        scale=scale,
        grid=grid,
        label_cut=label_cut,
        labelled=labelled,
        run=run,
        calibration=calibration,
    )


def _result(judged: Judged) -> dict[str, Any]:
    item = judged.item
    return {
        "location": item.location,
        "line": item.line,
        "id": item.id,
        "category": item.category,
        "text": item.text,
        "label": "biased" if item.biased else "unbiased",
        "expected": item.expected,
        "score": judged.score,
        "biasedOpinions": judged.biased_opinions,
        "error": judged.error,
    }
