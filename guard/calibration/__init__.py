"""Calibration: how good a judge is at each threshold, on texts labelled biased or not.

`read_labelled` reads a labelled file (the project's JSONL, or the published
CrowS-Pairs, StereoSet and BBQ files, each mapped to labelled texts as its
module says); `judge_texts` scores each text once; `build_report` computes,
on a grid of thresholds, precision, recall, F1 and the share flagged, overall
and per category, with the threshold that maximises F1 and the lowest one that
reaches a target precision, and the count rules' figures (flag at n biased
opinions, whatever the score) beside them (`guard.calibration.metrics`, pure).

    labelled = read_labelled(Path("data.jsonl"))
    run = await judge_texts(labelled.items, scorer, concurrency=4)
    report = build_report(labelled, run, source="data.jsonl", judge=scorer.judge.model,
                          scale=scorer.scale, grid=0.05, target_precision=0.9)
    report.calibration.best.threshold
"""

from guard.calibration.judging import Judged, JudgeRun, judge_texts
from guard.calibration.labelled import LabelledItem, LabelledSet, Skipped
from guard.calibration.metrics import (
    COUNT_RULES,
    Calibration,
    CountRow,
    Counts,
    Point,
    ThresholdRow,
    best_f1,
    calibrate,
    confusion,
    counts_at,
    counts_by_opinions,
    lowest_reaching,
    threshold_grid,
)
from guard.calibration.readers import FORMATS, read_labelled
from guard.calibration.report import CalibrationReport, CategoryFigures, build_report

__all__ = [
    "COUNT_RULES",
    "FORMATS",
    "Calibration",
    "CalibrationReport",
    "CategoryFigures",
    "CountRow",
    "Counts",
    "JudgeRun",
    "Judged",
    "LabelledItem",
    "LabelledSet",
    "Point",
    "Skipped",
    "ThresholdRow",
    "best_f1",
    "build_report",
    "calibrate",
    "confusion",
    "counts_at",
    "counts_by_opinions",
    "judge_texts",
    "lowest_reaching",
    "read_labelled",
    "threshold_grid",
]
