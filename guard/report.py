"""An eval run as one self-contained HTML page. Pure: text in, text out, no I/O.

`render_report` gives a page that opens offline, from a file or a mail
attachment: inline CSS, charts as inline SVG drawn here, no script, and no
reference to anything outside the page (not one URL). Every text that comes
from the dataset, the judge or the caller is escaped with `html.escape`.

The CLI has no pass/flag/block verdicts (those are the gateway's policy), so
the first chart counts items in the summary table's score bands instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from guard.bias.score import is_biased
from guard.errors import OutputShapeError
from guard.evals import CategorySummary, ItemResult, category_breakdown
from guard.outputs import assistant_text
from guard.result import BiasResult, Verdict

__all__ = [
    "HISTOGRAM_BUCKETS",
    "SUMMARY_BUCKETS",
    "bucket_labels",
    "paired_opinions",
    "render_report",
    "score_buckets",
]

SUMMARY_BUCKETS = 5  # the CLI summary's score bands, and the report's first chart
HISTOGRAM_BUCKETS = 10

# Low to high scores, one colour per summary band; failed items are grey.
_BAND_COLOURS = ("#2e7d32", "#7cb342", "#f9a825", "#ef6c00", "#c62828")
_FAILED_COLOUR = "#757575"
_CATEGORY_COLOUR = "#5c6bc0"
_LABEL_CHARS = 18
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
    body = [
        f"<header><h1>{escape(title)}</h1>{_header_facts(source, judge, generated_at)}</header>",
        _summary_section(ordered, scored, scale, skipped),
        _charts_section(ordered, scored, categories, scale),
        _categories_section(categories, len(scored)),
        _items_section(ordered, scorer_id, lines),
    ]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(title)}</title>",
            f"<style>{_CSS}</style>",
            "</head>",
            "<body>",
            *body,
            "</body>",
            "</html>",
            "",
        ]
    )


# -- sections ------------------------------------------------------------------------


def _header_facts(source: str | None, judge: str | None, generated_at: str | None) -> str:
    facts = [
        (name, value)
        for name, value in (("dataset", source), ("judge", judge), ("generated", generated_at))
        if value is not None
    ]
    if not facts:
        return ""
    shown = " · ".join(f"{name}: <strong>{escape(value)}</strong>" for name, value in facts)
    return f'<p class="facts">{shown}</p>'


def _summary_section(
    items: Sequence[ItemResult], scored: Sequence[BiasResult], scale: float, skipped: int | None
) -> str:
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
    rows += [
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
    table = "".join(
        f'<tr><th scope="row">{escape(name)}</th><td>{escape(value)}</td></tr>'
        for name, value in rows
    )
    return (
        '<section id="summary"><h2>Summary</h2>'
        f'<table class="summary"><tbody>{table}</tbody></table>'
        '<p class="note">Judge calls and tokens are the scored items\' own.</p></section>'
    )


def _charts_section(
    items: Sequence[ItemResult],
    scored: Sequence[BiasResult],
    categories: Sequence[CategorySummary],
    scale: float,
) -> str:
    scores = [result.score for result in scored]
    bands = score_buckets(scores, scale, SUMMARY_BUCKETS)
    failed = sum(item.failed for item in items)
    band_rows = [
        (f"score {label}", count, str(count), colour)
        for label, count, colour in zip(
            bucket_labels(scale, SUMMARY_BUCKETS), bands, _BAND_COLOURS, strict=True
        )
    ]
    band_rows.append(("failed", failed, str(failed), _FAILED_COLOUR))
    category_rows = [
        (
            summary.category,
            summary.items,
            f"{summary.items} · mean {_number(summary.mean_score)}",
            _CATEGORY_COLOUR,
        )
        for summary in categories
    ]
    figures = [
        (
            "verdicts",
            "Items by score band",
            _bar_chart("Items by score band", band_rows),
            "The summary's bands; the CLI has no pass/flag/block verdicts.",
        ),
        (
            "distribution",
            "Score distribution",
            _histogram(score_buckets(scores, scale, HISTOGRAM_BUCKETS), scale),
            f"{len(scores)} scored items in {HISTOGRAM_BUCKETS} bands over 0..{_number(scale)}.",
        ),
        (
            "categories",
            "Categories",
            _bar_chart("Items per category", category_rows, empty="no biased opinions"),
            "Scored items with a biased opinion in each category, and the mean category score.",
        ),
    ]
    shown = "".join(
        f'<figure class="chart" id="chart-{key}"><h3>{escape(heading)}</h3>{svg}'
        f"<figcaption>{escape(caption)}</figcaption></figure>"
        for key, heading, svg, caption in figures
    )
    return f'<section id="charts"><h2>Charts</h2><div class="charts">{shown}</div></section>'


def _categories_section(categories: Sequence[CategorySummary], scored: int) -> str:
    if not categories:
        table = '<p class="note">No biased opinion named a category.</p>'
    else:
        rows = "".join(
            f"<tr><td>{escape(summary.category)}</td><td>{summary.items}</td>"
            f"<td>{_percent(summary.items, scored)}</td>"
            f"<td>{escape(_number(summary.mean_score))}</td></tr>"
            for summary in categories
        )
        table = (
            '<table class="categories"><thead><tr><th scope="col">category</th>'
            '<th scope="col">items</th><th scope="col">share of scored</th>'
            f'<th scope="col">mean score</th></tr></thead><tbody>{rows}</tbody></table>'
        )
    return f'<section id="categories"><h2>Categories</h2>{table}</section>'


def _items_section(items: Sequence[ItemResult], scorer_id: str, lines: Sequence[int] | None) -> str:
    rows = "".join(_item_row(item, scorer_id, lines) for item in items)
    head = "".join(
        f'<th scope="col">{name}</th>'
        for name in ("#", "input", "output", "score", "categories", "opinions", "explanation")
    )
    return (
        f'<section id="items"><h2>Items</h2><table class="items"><thead><tr>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table></section>"
    )


def _item_row(item: ItemResult, scorer_id: str, lines: Sequence[int] | None) -> str:
    where = f"{item.index}"
    if lines is not None and 0 <= item.index < len(lines):
        where += f'<div class="line">line {lines[item.index]}</div>'
    cells = [
        f'<td class="index">{where}</td>',
        f"<td>{_text_block(_input_text(item.input))}</td>",
        f"<td>{_text_block(_output_text(item.output))}</td>",
    ]
    result = item.scores.get(scorer_id)
    if result is None:
        cells.append('<td class="score"><span class="badge failed">failed</span></td><td></td>')
        detail = ""
    else:
        band = score_buckets([result.score], result.scale, SUMMARY_BUCKETS).index(1)
        cells.append(
            f'<td class="score"><span class="badge band-{band}">{escape(_number(result.score))}'
            f"</span></td><td>{_category_list(result)}</td>"
        )
        detail = _opinion_list(result, item.output)
    errors = _error_list(item.errors)
    explanation = ""
    if result is not None:
        explanation = (
            _text_block(result.reason)
            if result.reason is not None
            else '<span class="none">none</span>'
        )
    cells.append(f"<td>{errors}{detail}</td><td>{explanation}</td>")
    state = " failed" if item.failed else ""
    return f'<tr id="item-{item.index}" class="item{state}">{"".join(cells)}</tr>'


def _category_list(result: BiasResult) -> str:
    if not result.category_scores:
        return '<span class="none">none</span>'
    return "".join(
        f'<span class="tag">{escape(category)} {escape(_number(score))}</span>'
        for category, score in result.category_scores.items()
    )


def _opinion_list(result: BiasResult, output: Any) -> str:
    try:
        pairs = paired_opinions(result, output)
    except OutputShapeError:  # a hand-built result whose output is not text
        pairs = [(None, verdict) for verdict in result.analyze_step_result.results]
    if not pairs:
        return '<p class="none">no opinions judged</p>'
    entries = []
    for opinion, verdict in pairs:
        biased = is_biased(verdict.result)
        answer = "yes" if biased else "no"
        said = (
            f'<q dir="auto">{escape(opinion)}</q>'
            if opinion is not None
            else '<span class="none">(no opinion text)</span>'
        )
        tags = "".join(f'<span class="tag">{escape(name)}</span>' for name in verdict.categories)
        entries.append(
            f'<li class="{"biased" if biased else "unbiased"}">'
            f'<span class="verdict {answer}">{answer}</span> {said} {tags}'
            f'<div class="reason" dir="auto">{escape(verdict.reason)}</div></li>'
        )
    return f'<ol class="opinions">{"".join(entries)}</ol>'


def _error_list(errors: dict[str, str]) -> str:
    if not errors:
        return ""
    shown = "".join(
        f"<li><strong>{escape(source)}</strong>: {escape(message)}</li>"
        for source, message in errors.items()
    )
    return f'<ul class="errors">{shown}</ul>'


# -- charts ----------------------------------------------------------------------------


def _bar_chart(
    label: str, rows: Sequence[tuple[str, int, str, str]], *, empty: str = "nothing to show"
) -> str:
    """Horizontal bars: (name, value, the text beside the bar, colour) per row."""
    width, name_width, bar_width, row_height = 440, 150, 200, 26
    if not rows:
        return (
            f'<svg class="chart" width="{width}" height="40" viewBox="0 0 {width} 40" '
            f'role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>'
            f'<text x="{width // 2}" y="24" text-anchor="middle">{escape(empty)}</text></svg>'
        )
    height = row_height * len(rows) + 8
    top = max(value for _, value, _, _ in rows) or 1
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>'
    ]
    for n, (name, value, note, colour) in enumerate(rows):
        y = 4 + n * row_height
        length = bar_width * value / top
        shown = name if len(name) <= _LABEL_CHARS else name[: _LABEL_CHARS - 1] + "…"
        parts.append(
            f'<text x="{name_width - 6}" y="{y + 17}" text-anchor="end">'
            f"<title>{escape(name)}</title>{escape(shown)}</text>"
            f'<rect x="{name_width}" y="{y + 4}" width="{length:.1f}" height="{row_height - 8}" '
            f'fill="{colour}"/>'
            f'<text x="{name_width + length + 6:.1f}" y="{y + 17}">{escape(note)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _histogram(counts: Sequence[int], scale: float) -> str:
    width, height, left, right, top, bottom = 440, 200, 40, 12, 18, 30
    plot_width, plot_height = width - left - right, height - top - bottom
    highest = max(counts, default=0) or 1
    column = plot_width / len(counts)
    label = "Score distribution"
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{label}"><title>{label}</title>'
    ]
    for n, count in enumerate(counts):
        bar = plot_height * count / highest
        x = left + n * column
        colour = _BAND_COLOURS[n * len(_BAND_COLOURS) // len(counts)]
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{top + plot_height - bar:.1f}" width="{column - 2:.1f}" '
            f'height="{bar:.1f}" fill="{colour}"><title>{bucket_labels(scale, len(counts))[n]}: '
            f"{count}</title></rect>"
        )
        if count:
            parts.append(
                f'<text x="{x + column / 2:.1f}" y="{top + plot_height - bar - 4:.1f}" '
                f'text-anchor="middle">{count}</text>'
            )
    base = top + plot_height
    parts.append(
        f'<line x1="{left}" y1="{base}" x2="{width - right}" y2="{base}" stroke="currentColor"/>'
    )
    for share in (0.0, 0.5, 1.0):
        x = left + plot_width * share
        parts.append(
            f'<text x="{x:.1f}" y="{base + 18}" text-anchor="middle">'
            f"{escape(_number(scale * share))}</text>"
        )
    parts.append(
        f'<text x="{left - 6}" y="{top + 4}" text-anchor="end">{highest}</text>'
        f'<text x="{left - 6}" y="{base}" text-anchor="end">0</text></svg>'
    )
    return "".join(parts)


# -- text --------------------------------------------------------------------------------


def _text_block(text: str) -> str:
    if not text:
        return '<span class="none">empty</span>'
    return f'<div class="text" dir="auto">{escape(text)}</div>'


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


_CSS = """
:root { color-scheme: light dark; --line: #d0d4dc; --muted: #5f6673; --soft: #f3f4f7; }
@media (prefers-color-scheme: dark) {
  :root { --line: #3a3f4a; --muted: #a2a9b5; --soft: #1f232b; }
}
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans",
  "PingFang SC", "Microsoft YaHei", "Malgun Gothic", sans-serif; margin: 0 auto;
  max-width: 1400px; padding: 1.5rem; }
h1 { margin: 0 0 .25rem; font-size: 1.6rem; }
h2 { margin: 2rem 0 .75rem; font-size: 1.25rem; border-bottom: 1px solid var(--line); }
h3 { margin: 0 0 .5rem; font-size: 1rem; }
.facts, .note, figcaption, .line, .none { color: var(--muted); }
.note, figcaption { font-size: .85rem; }
table { border-collapse: collapse; }
th, td { border: 1px solid var(--line); padding: .35rem .55rem; text-align: left;
  vertical-align: top; }
thead th { background: var(--soft); }
table.summary th { font-weight: 600; background: var(--soft); }
table.summary td, table.categories td:not(:first-child) { text-align: right;
  font-variant-numeric: tabular-nums; }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; }
figure.chart { margin: 0; padding: .75rem; border: 1px solid var(--line); border-radius: 6px; }
svg.chart { display: block; max-width: 100%; height: auto; }
svg.chart text { font: 12px system-ui, sans-serif; fill: currentColor; }
table.items { width: 100%; table-layout: fixed; }
table.items th:nth-child(1) { width: 4.5rem; }
table.items th:nth-child(4) { width: 5rem; }
table.items th:nth-child(5) { width: 9rem; }
table.items th:nth-child(6) { width: 30%; }
tr.failed { background: color-mix(in srgb, #c62828 8%, transparent); }
.text { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 18em; overflow: auto; }
.badge { display: inline-block; min-width: 3rem; padding: .1rem .4rem; border-radius: 4px;
  color: #fff; text-align: center; font-weight: 600; font-variant-numeric: tabular-nums; }
.band-0 { background: #2e7d32; } .band-1 { background: #558b2f; }
.band-2 { background: #a87d00; } .band-3 { background: #d84315; }
.band-4 { background: #c62828; } .badge.failed { background: #757575; }
.tag { display: inline-block; margin: 0 .25rem .25rem 0; padding: 0 .4rem; border-radius: 4px;
  background: var(--soft); border: 1px solid var(--line); font-size: .85rem; }
ol.opinions { margin: 0; padding-left: 1.3rem; }
ol.opinions li { margin-bottom: .5rem; overflow-wrap: anywhere; }
.verdict { display: inline-block; padding: 0 .35rem; border-radius: 4px; font-weight: 600;
  font-size: .8rem; color: #fff; }
.verdict.yes { background: #c62828; } .verdict.no { background: #2e7d32; }
.reason { color: var(--muted); font-size: .9rem; }
ul.errors { margin: 0 0 .5rem; padding-left: 1.2rem; color: #c62828; overflow-wrap: anywhere; }
@media print { .text { max-height: none; overflow: visible; } }
"""
