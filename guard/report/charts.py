"""Charts as inline SVG, drawn here, for the eval report and the gateway's dashboard.

No chart library, no script, no URL: a page that embeds them opens offline
and renders in any browser. Pure functions that return `Markup`, safe to put
in a Jinja2 template as it is; every label is escaped. The colours are here
too, so the report and the dashboard agree.

>>> svg = bar_chart([("gender", 3), ("political", 1)], title="Top categories")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

__all__ = [
    "BAND_COLOURS",
    "BAR_COLOUR",
    "CATEGORY_COLOUR",
    "FAILED_COLOUR",
    "VERDICT_COLOURS",
    "Bar",
    "Column",
    "Segment",
    "Series",
    "bar_chart",
    "column_chart",
    "line_chart",
    "stacked_columns",
]

# Scores from unbiased to biased, one colour per band: readable on white and for
# the common colour-vision deficiencies.
BAND_COLOURS = ("#2e7d32", "#7cb342", "#f9a825", "#ef6c00", "#c62828")
# The gateway's policy verdicts on the same scale, and anything else.
VERDICT_COLOURS = {
    "pass": BAND_COLOURS[0],
    "flag": BAND_COLOURS[2],
    "block": BAND_COLOURS[4],
    "other": "#546e7a",
}
FAILED_COLOUR = "#757575"
BAR_COLOUR = "#1565c0"
CATEGORY_COLOUR = "#6a1b9a"
_UNKNOWN_COLOUR = "#777"
_NO_DATA = "No data in this window."
_WIDTH = 640


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar of `bar_chart`: `note` is the text beside it (default: the value)."""

    label: str
    value: float
    note: str | None = None
    colour: str | None = None


@dataclass(frozen=True, slots=True)
class Segment:
    """One stacked piece of a `Column`; `title` is shown on hover."""

    value: float
    colour: str
    title: str


@dataclass(frozen=True, slots=True)
class Column:
    """One column of `column_chart`: the tick under it and its segments, bottom up."""

    label: str
    segments: Sequence[Segment]


@dataclass(frozen=True, slots=True)
class Series:
    """One line of `line_chart`: (x, y) points in x order; a None y leaves a gap."""

    name: str
    colour: str
    points: Sequence[tuple[float, float | None]]
    dashed: bool = False


def bar_chart(
    bars: Sequence[Bar | tuple[str, float]],
    *,
    title: str,
    unit: str = "",
    colour: str = BAR_COLOUR,
    empty: str = _NO_DATA,
) -> Markup:
    """Horizontal bars, one per `Bar` or (label, value), in the order given.

    A bar without a colour of its own is `colour`; `empty` is said when there are none.
    """
    rows = [bar if isinstance(bar, Bar) else Bar(*bar) for bar in bars]
    notes = [bar.note if bar.note is not None else f"{_number(bar.value)}{unit}" for bar in rows]
    row = 26
    height = max(1, len(rows)) * row + 10
    top = float(max((bar.value for bar in rows), default=0) or 1)
    label_width = 170
    # Room beside the longest bar for the longest note, at about 7 units a character.
    span = _WIDTH - label_width - max(70, 10 + 7 * max(map(len, notes), default=0))
    parts = [_open(title, height)]
    if not rows:
        parts.append(_note(empty, 20))
    for index, (bar, note) in enumerate(zip(rows, notes, strict=True)):
        y = 5 + index * row
        width = max(1.0, bar.value / top * span) if bar.value else 0
        parts.append(
            f'<text x="{label_width - 8}" y="{y + 17}" text-anchor="end">'
            f"<title>{escape(bar.label)}</title>{escape(_clip(bar.label))}</text>"
            f'<rect x="{label_width}" y="{y + 4}" width="{width:.1f}" height="{row - 8}"'
            f' fill="{escape(bar.colour or colour)}"/>'
            f'<text x="{label_width + width + 6:.1f}" y="{y + 17}">{escape(note)}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def column_chart(
    columns: Sequence[Column],
    *,
    title: str,
    legend: Sequence[tuple[str, str]] = (),
    totals: bool = False,
    empty: str = _NO_DATA,
) -> Markup:
    """Vertical columns of stacked segments, a (name, colour) `legend` above them.

    With `totals`, each column's sum is written above it. A tick names at most
    about eight columns, evenly spaced.
    """
    height, bottom, left = 220, 30, 40
    plot = height - bottom - 30
    top = float(max((_total(column) for column in columns), default=0) or 1)
    step = (_WIDTH - left - 10) / max(1, len(columns))
    width = max(2.0, step * 0.8)
    parts = [_open(title, height)]
    for index, (name, colour) in enumerate(legend):
        key_x = left + index * 90
        parts.append(
            f'<rect x="{key_x}" y="4" width="12" height="12" fill="{escape(colour)}"/>'
            f'<text x="{key_x + 16}" y="15">{escape(name)}</text>'
        )
    parts.append(
        f'<text x="{left - 6}" y="{30 + 10}" text-anchor="end">{top:g}</text>'
        f'<text x="{left - 6}" y="{height - bottom}" text-anchor="end">0</text>'
    )
    if not columns:
        parts.append(_note(empty, height / 2))
    label_every = max(1, len(columns) // 8)
    for index, column in enumerate(columns):
        x = left + index * step
        y = float(height - bottom)
        for segment in column.segments:
            bar = float(segment.value) / top * plot
            y -= bar
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{bar:.1f}"'
                f' fill="{escape(segment.colour)}"><title>{escape(segment.title)}</title></rect>'
            )
        if totals and _total(column):
            parts.append(
                f'<text x="{x + width / 2:.1f}" y="{y - 4:.1f}" text-anchor="middle">'
                f"{_number(_total(column))}</text>"
            )
        if index % label_every == 0:
            parts.append(
                f'<text x="{x:.1f}" y="{height - bottom + 16}" class="tick">'
                f"{escape(_clip(column.label, 12))}</text>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))


def stacked_columns(
    columns: Sequence[tuple[str, Mapping[str, int]]],
    *,
    title: str,
    series: Sequence[str],
    colours: Mapping[str, str] = VERDICT_COLOURS,
) -> Markup:
    """One column per (label, counts by series), stacked in `series` order, with a legend."""

    def colour(name: str) -> str:
        return colours.get(name, _UNKNOWN_COLOUR)

    return column_chart(
        [
            Column(
                label,
                [
                    Segment(counts[name], colour(name), f"{label} {name}: {counts[name]}")
                    for name in series
                    if counts.get(name)
                ],
            )
            for label, counts in columns
        ],
        title=title,
        legend=[(name, colour(name)) for name in series],
    )


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_max: float,
    y_max: float = 1.0,
    x_label: str = "",
    markers: Sequence[tuple[float, str]] = (),
) -> Markup:
    """Lines over 0..x_max by 0..y_max with a (name, colour) legend and five ticks on
    each axis; each `markers` entry, (x, label), is a vertical dashed line.

    Points are dotted (their value on hover) while there are at most 60 of them.
    """
    if not x_max > 0 or not y_max > 0:
        raise ValueError("x_max and y_max must be > 0")
    height, top, bottom, left, right = 260, 34, 40, 44, 14
    plot_w, plot_h = _WIDTH - left - right, height - top - bottom

    def x_at(x: float) -> float:
        return left + min(max(x / x_max, 0.0), 1.0) * plot_w

    def y_at(y: float) -> float:
        return top + (1 - min(max(y / y_max, 0.0), 1.0)) * plot_h

    parts = [_open(title, height)]
    for index, line in enumerate(series):
        key_x = left + index * 120
        parts.append(
            f'<rect x="{key_x}" y="6" width="12" height="12" fill="{escape(line.colour)}"/>'
            f'<text x="{key_x + 16}" y="17">{escape(line.name)}</text>'
        )
    for n in range(5):
        y, x = y_max * n / 4, x_max * n / 4
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y_at(y):.1f}" y2="{y_at(y):.1f}"'
            f' class="grid"/><text x="{left - 6}" y="{y_at(y) + 4:.1f}" text-anchor="end">'
            f"{_number(round(y, 6))}</text>"
            f'<text x="{x_at(x):.1f}" y="{top + plot_h + 16}" text-anchor="middle">'
            f"{_number(round(x, 6))}</text>"
        )
    if x_label:
        parts.append(
            f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle"'
            f' class="tick">{escape(x_label)}</text>'
        )
    for x, label in markers:
        parts.append(
            f'<line x1="{x_at(x):.1f}" x2="{x_at(x):.1f}" y1="{top}" y2="{top + plot_h}"'
            f' class="marker"><title>{escape(label)}</title></line>'
        )
    for line in series:
        parts.extend(_line(line, x_at, y_at))
    parts.append("</svg>")
    return Markup("".join(parts))


def _line(
    series: Series, x_at: Callable[[float], float], y_at: Callable[[float], float]
) -> list[str]:
    """A series' polylines, one per run of defined points, and its dots."""
    dash = ' stroke-dasharray="5 4"' if series.dashed else ""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, y in series.points:
        if y is None:
            runs.append([])
        else:
            runs[-1].append((x, y))
    parts = []
    for run in runs:
        if len(run) > 1:
            drawn = " ".join(f"{x_at(x):.1f},{y_at(y):.1f}" for x, y in run)
            parts.append(
                f'<polyline points="{drawn}" fill="none" stroke="{escape(series.colour)}"'
                f' stroke-width="2"{dash}/>'
            )
    if len(series.points) <= 60:
        parts.extend(
            f'<circle cx="{x_at(x):.1f}" cy="{y_at(y):.1f}" r="3" fill="{escape(series.colour)}">'
            f"<title>{escape(series.name)} at {_number(x)}: {_number(round(y, 4))}</title></circle>"
            for run in runs
            for x, y in run
        )
    return parts


def _total(column: Column) -> float:
    return sum(segment.value for segment in column.segments)


def _open(title: str, height: float) -> str:
    return (
        f'<svg role="img" viewBox="0 0 {_WIDTH} {height:.0f}"'
        f' width="100%" class="chart" aria-label="{escape(title)}"><title>{escape(title)}</title>'
    )


def _note(text: str, y: float) -> str:
    return (
        f'<text x="{_WIDTH / 2}" y="{y:.0f}" text-anchor="middle" class="note">'
        f"{escape(text)}</text>"
    )


def _clip(text: str, most: int = 24) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
