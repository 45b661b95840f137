"""The calibration page: a `CalibrationReport` as one self-contained HTML page.

It sits beside the eval report and shares its style sheet and charts: inline
CSS, an inline SVG chart, no script, no URL, every text escaped. Pure: a
report in, text out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from guard.calibration import CalibrationReport, CountRow, Counts, ThresholdRow
from guard.report.charts import BAND_COLOURS, BAR_COLOUR, CATEGORY_COLOUR, Series, line_chart
from guard.report.page import templates

__all__ = ["render_calibration", "thresholds_chart"]

_FLAGGED_COLOUR = "#546e7a"


@dataclass(frozen=True, slots=True)
class _Row:
    threshold: str
    cells: list[str]  # precision, recall, F1, flagged, tp, fp, fn, tn
    chosen: bool = False


def render_calibration(
    report: CalibrationReport,
    *,
    title: str = "bias-guard calibrate",
    generated_at: str | None = None,
) -> str:
    """The HTML page of `report`: summary, the two picks, the precision/recall/F1 chart,
    every threshold, the confusion table and the categories at the chosen threshold,
    and the texts the judge failed on."""
    calibration = report.calibration
    chosen = calibration.chosen
    facts = [
        (name, value)
        for name, value in (
            ("dataset", report.source),
            ("format", report.labelled.format),
            ("judge", report.judge),
            ("generated", generated_at),
        )
        if value is not None
    ]
    page = templates().get_template("calibration.html")
    return page.render(
        title=title,
        facts=facts,
        summary=_summary(report),
        picks=_picks(report),
        chart=_chart(report),
        rows=[_row(row, chosen) for row in calibration.rows],
        count_rows=[_row(row) for row in calibration.count_rows],
        chosen=None if chosen is None else _number(chosen.threshold),
        chosen_by=calibration.chosen_by,
        confusion=None if chosen is None else _confusion(chosen.counts),
        categories=_categories(report, chosen),
        failures=[
            (
                _where(judged.item.location, judged.item.line),
                judged.item.id or "",
                judged.error or "",
            )
            for judged in report.run.failed
        ],
    )


def _categories(report: CalibrationReport, chosen: ThresholdRow | None) -> list[tuple[Any, ...]]:
    """Per category at the chosen threshold: items, biased, failed, then the four ratios."""
    if chosen is None:
        return []
    found = report.calibration.category_at(chosen.threshold)
    return [
        (f.category, f.items, f.biased, f.failed, *_ratios(found[f.category]))
        for f in report.categories()
    ]


def _summary(report: CalibrationReport) -> list[tuple[str, str]]:
    usage = report.run.usage
    scored = len(report.run.scored)
    rows = [
        ("texts read", str(len(report.labelled.items))),
        ("scored", str(scored)),
        ("failed (left out of the figures)", str(len(report.run.failed))),
        ("biased (scored)", str(report.biased)),
        ("unbiased (scored)", str(scored - report.biased)),
        ("malformed records skipped", str(len(report.labelled.skipped))),
    ]
    rows += [
        (f"left out: {reason}", str(n)) for reason, n in sorted(report.labelled.left_out.items())
    ]
    rows += [
        ("scale", _number(report.scale)),
        ("grid step", _number(report.grid)),
    ]
    if report.label_cut is not None:
        rows.append(("expected scores biased from", _number(report.label_cut)))
    total = usage.prompt_tokens + usage.completion_tokens
    return [
        *rows,
        ("judge calls", str(report.run.judge_calls)),
        (
            "judge tokens",
            f"{total} ({usage.prompt_tokens} prompt, {usage.completion_tokens} completion)",
        ),
        ("wall time", f"{report.run.seconds:.1f} s"),
    ]


def _picks(report: CalibrationReport) -> list[tuple[str, str]]:
    calibration = report.calibration
    target = _number(calibration.target_precision)

    def said(row: ThresholdRow | None, none: str) -> str:
        if row is None:
            return none
        precision, recall, f1, flagged = _ratios(row.counts)
        return (
            f"{_number(row.threshold)} (precision {precision}, recall {recall}, F1 {f1},"
            f" flagged {flagged})"
        )

    return [
        ("best F1", said(calibration.best, "none: no biased text was flagged")),
        (
            f"lowest reaching precision {target}",
            said(calibration.reaching, f"none: no threshold reaches precision {target}"),
        ),
    ]


def _chart(report: CalibrationReport) -> Markup:
    calibration = report.calibration
    return thresholds_chart(
        calibration.rows, scale=report.scale, best=calibration.best, reaching=calibration.reaching
    )


def thresholds_chart(
    rows: Sequence[ThresholdRow],
    *,
    scale: float,
    best: ThresholdRow | None = None,
    reaching: ThresholdRow | None = None,
) -> Markup:
    """Precision, recall, F1 and the share flagged over `rows`' thresholds (0 to
    `scale`), with the best F1's and the lowest reaching the precision's marked: the
    calibration page's chart, and the dashboard's agreement page's."""

    def series(name: str, colour: str, key: str, *, dashed: bool = False) -> Series:
        points = [(row.threshold, getattr(row.counts, key)) for row in rows]
        return Series(name, colour, points, dashed=dashed)

    markers = []
    if best is not None:
        markers.append((best.threshold, "best F1"))
    if reaching is not None:
        markers.append((reaching.threshold, "lowest reaching the precision"))
    return line_chart(
        [
            series("precision", BAR_COLOUR, "precision"),
            series("recall", BAND_COLOURS[3], "recall"),
            series("F1", CATEGORY_COLOUR, "f1"),
            series("flagged", _FLAGGED_COLOUR, "flagged", dashed=True),
        ],
        title="Precision, recall and F1 by threshold",
        x_max=scale,
        x_label="threshold (flagged at a score >= it)",
        markers=markers,
    )


def _row(row: ThresholdRow | CountRow, chosen: ThresholdRow | None = None) -> _Row:
    counts = row.counts
    first = _number(row.threshold) if isinstance(row, ThresholdRow) else str(row.at_least)
    return _Row(
        threshold=first,
        cells=[*_ratios(counts), *(str(n) for n in (counts.tp, counts.fp, counts.fn, counts.tn))],
        chosen=chosen is not None and row == chosen,
    )


def _confusion(counts: Counts) -> dict[str, Any]:
    return {
        "rows": [
            ("biased", counts.tp, counts.fn, counts.tp + counts.fn),
            ("unbiased", counts.fp, counts.tn, counts.fp + counts.tn),
        ],
        "totals": (counts.tp + counts.fp, counts.fn + counts.tn, counts.total),
    }


def _ratios(counts: Counts) -> tuple[str, str, str, str]:
    return (
        _fraction(counts.precision),
        _fraction(counts.recall),
        _fraction(counts.f1),
        _fraction(counts.flagged),
    )


def _where(location: str, line: int | None) -> str:
    return location if line is None else f"line {line}"


def _fraction(value: float | None) -> str:
    return "n/a" if value is None else f"{round(value, 4):g}"


def _number(value: float) -> str:
    return f"{value:g}"
