"""The probe page: a `bias-guard probe` record as one self-contained HTML page.

It shares the eval report's style sheet and charts: inline CSS, a chart per
dimension as inline SVG, no script, no URL, every text escaped. Pure: the
record (`guard.probe.probe_json`'s shape) in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from guard.probe.stats import Metric, format_value
from guard.report.charts import BAND_COLOURS, BAR_COLOUR, Bar, bar_chart
from guard.report.page import templates

__all__ = ["FINDING_COLUMNS", "finding_row", "probe_charts", "render_probe"]

_SHOWN_FAILURES = 50
_CHARTED = {Metric.REFUSAL_RATE: BAR_COLOUR, Metric.BIASED_SHARE: BAND_COLOURS[4]}
FINDING_COLUMNS = ("dimension", "group", "metric", "group", "others", "effect", "95% CI",
                   "p", "q", "significant")  # fmt: skip


def render_probe(
    record: Mapping[str, Any], *, title: str = "bias-guard probe", generated_at: str | None = None
) -> str:
    """The HTML page of a probe `record`: summary, a chart of refusals and biased answers
    per dimension, every finding, and the cells that failed."""
    cells: Sequence[Mapping[str, Any]] = record["cells"]
    found: Sequence[Mapping[str, Any]] = record["findings"]
    facts = [
        (name, value)
        for name, value in (
            ("suite", record["suite"]),
            ("model", record["model"]),
            ("judge", record["judge"]),
            ("generated", generated_at),
        )
        if value is not None
    ]
    failed = [cell for cell in cells if cell.get("error")]
    summary = [
        ("cells", len(cells)),
        ("samples per template and group", record["samples"]),
        ("refusals", sum(1 for cell in cells if cell.get("refusal"))),
        ("failed", len(failed)),
        ("comparisons", len(found)),
        ("significant", sum(1 for finding in found if finding["significant"])),
    ]
    return (
        templates()
        .get_template("probe.html")
        .render(
            title=title,
            facts=facts,
            summary=summary,
            charts=probe_charts(found),
            columns=FINDING_COLUMNS,
            rows=[finding_row(finding) for finding in found],
            failures=[
                (f"{cell['dimension']} / {cell['group']}", cell["prompt"], cell["error"])
                for cell in failed[:_SHOWN_FAILURES]
            ],
            more_failures=max(0, len(failed) - _SHOWN_FAILURES),
        )
    )


def probe_charts(found: Sequence[Mapping[str, Any]]) -> list[tuple[str, Markup]]:
    """Per dimension, in the findings' order: each group's refusal rate and biased share
    (the gateway's dashboard shows the live probe's with these too)."""
    bars: dict[str, list[Bar]] = {}
    for finding in found:
        metric = Metric(finding["metric"])
        if metric not in _CHARTED:
            continue
        mark = " *" if finding["significant"] else ""
        label = "refused" if metric is Metric.REFUSAL_RATE else "biased"
        bars.setdefault(finding["dimension"], []).append(
            Bar(
                f"{finding['group']}: {label}",
                finding["group_value"] * 100,
                note=format_value(metric, finding["group_value"]) + mark,
                colour=_CHARTED[metric],
            )
        )
    return [
        (
            dimension,
            bar_chart(
                shown,
                title=f"{dimension}: refusals and biased answers by group",
                empty="No answers in this dimension.",
            ),
        )
        for dimension, shown in bars.items()
    ]


def finding_row(finding: Mapping[str, Any]) -> list[str]:
    """A finding as the report's table shows it, in `FINDING_COLUMNS`' order."""
    metric = Metric(finding["metric"])
    low, high = finding["ci"]
    return [
        finding["dimension"],
        finding["group"],
        metric.value,
        format_value(metric, finding["group_value"]),
        format_value(metric, finding["others_value"]),
        format_value(metric, finding["effect"]),
        f"[{format_value(metric, low)}, {format_value(metric, high)}]",
        f"{finding['p_value']:.3g}",
        f"{finding['q_value']:.3g}",
        "yes" if finding["significant"] else "no",
    ]
