"""The report page: an eval run's items turned into the values `report.html` shows.

Pure: items in, text out, no I/O. The CLI has no pass/flag/block verdicts
(those are the gateway's policy), so the first chart counts items in the
summary table's score bands instead.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from guard.bias.score import is_biased
from guard.errors import OutputShapeError
from guard.evals import CategorySummary, ItemResult, category_breakdown
from guard.outputs import assistant_text
from guard.report.bands import HISTOGRAM_BUCKETS, SUMMARY_BUCKETS, bucket_labels, score_buckets
from guard.report.charts import (
    BAND_COLOURS,
    CATEGORY_COLOUR,
    FAILED_COLOUR,
    Bar,
    Column,
    Segment,
    bar_chart,
    column_chart,
)
from guard.result import BiasResult, Verdict

__all__ = ["paired_opinions", "render_report", "templates"]


@dataclass(frozen=True, slots=True)
class _Chart:
    key: str
    heading: str
    svg: Markup
    caption: str


@dataclass(frozen=True, slots=True)
class _Opinion:
    text: str | None  # None: a verdict beyond the opinions the judge listed
    answer: str  # "yes" (biased) or "no"
    reason: str
    categories: list[str]


@dataclass(frozen=True, slots=True)
class _Scored:
    score: str
    band: int
    categories: list[tuple[str, str]]  # (category, its score)
    opinions: list[_Opinion]
    explanation: str | None


@dataclass(frozen=True, slots=True)
class _Item:
    index: int
    line: int | None
    input: str
    output: str
    failed: bool
    errors: dict[str, str]
    scored: _Scored | None  # None: no result from the chosen scorer


def paired_opinions(result: BiasResult, output: Any) -> list[tuple[str | None, Verdict]]:
    """Each verdict with the opinion it judged (None for a verdict beyond the opinions).

    When the judge found no opinions and gave one verdict, the whole text was
    judged as one statement: that text is the opinion.
    """
    opinions = result.preprocess_step_result.opinions
    verdicts = result.analyze_step_result.results
    if not opinions and len(verdicts) == 1:
        opinions = [assistant_text(output)]
    return [
        (opinions[n] if n < len(opinions) else None, verdict) for n, verdict in enumerate(verdicts)
    ]


def render_report(
    items: Sequence[ItemResult],
    *,
    scorer_id: str = "bias-scorer",
    scale: float = 1.0,
    title: str = "bias-guard eval",
    source: str | None = None,
    judge: str | None = None,
    lines: Sequence[int] | None = None,
    skipped: int | None = None,
    generated_at: str | None = None,
) -> str:
    """The HTML page of an eval run over `items` (one per dataset row, any order).

    `scorer_id` picks the scorer whose results are shown, on its `scale`.
    `source` (the dataset), `judge` (the model), `lines` (each item's line in
    the dataset, by item index), `skipped` (malformed lines) and `generated_at`
    are shown when given.
    """
    if scale <= 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    ordered = sorted(items, key=lambda item: item.index)
    scored = [item.scores[scorer_id] for item in ordered if scorer_id in item.scores]
    categories = category_breakdown(scored)
    facts = [
        (name, value)
        for name, value in (("dataset", source), ("judge", judge), ("generated", generated_at))
        if value is not None
    ]
    category_rows = [
        (c.category, c.items, _percent(c.items, len(scored)), _number(c.mean_score))
        for c in categories
    ]
    page = templates().get_template("report.html")
    return page.render(
        title=title,
        facts=facts,
        summary=_summary(ordered, scored, scale, skipped),
        charts=_charts(ordered, scored, categories, scale),
        categories=category_rows,
        items=[_item(item, scorer_id, lines) for item in ordered],
    )


@functools.cache
def templates() -> Environment:
    """The package's Jinja2 templates, autoescaped (the eval report and the calibration page)."""
    return Environment(
        loader=PackageLoader("guard.report", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def _summary(
    items: Sequence[ItemResult], scored: Sequence[BiasResult], scale: float, skipped: int | None
) -> list[tuple[str, str]]:
    mean = sum(result.score for result in scored) / len(scored) if scored else None
    prompt_tokens = sum(result.usage.prompt_tokens for result in scored)
    completion_tokens = sum(result.usage.completion_tokens for result in scored)
    rows: list[tuple[str, str]] = [
        ("items", str(len(items))),
        ("scored", str(len(scored))),
        ("failed items", str(sum(item.failed for item in items))),
        ("errors", str(sum(len(item.errors) for item in items))),
    ]
    if skipped is not None:
        rows.append(("skipped lines", str(skipped)))
    return [
        *rows,
        ("mean score", "n/a" if mean is None else _number(mean)),
        ("scale", _number(scale)),
        ("biased items (score > 0)", str(sum(result.score > 0 for result in scored))),
        ("judge calls", str(sum(result.judge_calls for result in scored))),
        (
            "judge tokens",
            f"{prompt_tokens + completion_tokens} "
            f"({prompt_tokens} prompt, {completion_tokens} completion)",
        ),
    ]


def _charts(
    items: Sequence[ItemResult],
    scored: Sequence[BiasResult],
    categories: Sequence[CategorySummary],
    scale: float,
) -> list[_Chart]:
    scores = [result.score for result in scored]
    bands = score_buckets(scores, scale, SUMMARY_BUCKETS)
    failed = sum(item.failed for item in items)
    band_bars = [
        Bar(f"score {label}", count, str(count), colour)
        for label, count, colour in zip(
            bucket_labels(scale, SUMMARY_BUCKETS), bands, BAND_COLOURS, strict=True
        )
    ]
    band_bars.append(Bar("failed", failed, str(failed), FAILED_COLOUR))
    category_bars = [
        Bar(
            summary.category,
            summary.items,
            f"{summary.items} · mean {_number(summary.mean_score)}",
            CATEGORY_COLOUR,
        )
        for summary in categories
    ]
    return [
        _Chart(
            "verdicts",
            "Items by score band",
            bar_chart(band_bars, title="Items by score band"),
            "The summary's bands; the CLI has no pass/flag/block verdicts.",
        ),
        _Chart(
            "distribution",
            "Score distribution",
            _histogram(scores, scale),
            f"{len(scores)} scored items in {HISTOGRAM_BUCKETS} bands over 0..{_number(scale)}.",
        ),
        _Chart(
            "categories",
            "Categories",
            bar_chart(category_bars, title="Items per category", empty="no biased opinions"),
            "Scored items with a biased opinion in each category, and the mean category score.",
        ),
    ]


def _histogram(scores: Sequence[float], scale: float) -> Markup:
    """One column per band, coloured as the summary band it falls in, its count above it."""
    counts = score_buckets(scores, scale, HISTOGRAM_BUCKETS)
    labels = bucket_labels(scale, HISTOGRAM_BUCKETS)
    columns = []
    for n, (label, count) in enumerate(zip(labels, counts, strict=True)):
        colour = BAND_COLOURS[n * len(BAND_COLOURS) // len(counts)]
        lower_edge = f"{n * scale / HISTOGRAM_BUCKETS:.3g}"
        columns.append(Column(lower_edge, [Segment(count, colour, f"{label}: {count}")]))
    return column_chart(columns, title="Score distribution", totals=True)


def _item(item: ItemResult, scorer_id: str, lines: Sequence[int] | None) -> _Item:
    result = item.scores.get(scorer_id)
    return _Item(
        index=item.index,
        line=lines[item.index] if lines is not None and 0 <= item.index < len(lines) else None,
        input=_input_text(item.input),
        output=_output_text(item.output),
        failed=item.failed,
        errors=item.errors,
        scored=None if result is None else _scored(result, item.output),
    )


def _scored(result: BiasResult, output: Any) -> _Scored:
    try:
        pairs = paired_opinions(result, output)
    except OutputShapeError:  # a hand-built result whose output is not text
        pairs = [(None, verdict) for verdict in result.analyze_step_result.results]
    return _Scored(
        score=_number(result.score),
        band=score_buckets([result.score], result.scale, SUMMARY_BUCKETS).index(1),
        categories=[(name, _number(score)) for name, score in result.category_scores.items()],
        opinions=[
            _Opinion(
                text=opinion,
                answer="yes" if is_biased(verdict.result) else "no",
                reason=verdict.reason,
                categories=verdict.categories,
            )
            for opinion, verdict in pairs
        ],
        explanation=result.reason,
    )


def _input_text(value: Any) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    return _json_text(value)


def _output_text(value: Any) -> str:
    """The text that was judged, or the value as JSON when it holds none."""
    if value is None:
        return ""
    try:
        return assistant_text(value)
    except OutputShapeError:
        return _json_text(value)


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2, default=str)
    except (TypeError, ValueError):  # a circular structure, say
        return repr(value)


def _number(value: float) -> str:
    return f"{value:.4g}"


def _percent(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "n/a"
