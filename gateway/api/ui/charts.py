"""The dashboard's charts as inline SVG, drawn here: no chart library, no script, no
network, so the pages work offline and render in any browser. Pure functions;
every label is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from markupsafe import Markup

__all__ = ["COLOURS", "bar_chart", "stacked_columns"]

# Verdict colours, readable on white and for the common colour-vision deficiencies.
COLOURS = {"pass": "#2e7d32", "flag": "#f9a825", "block": "#c62828", "other": "#546e7a"}
_WIDTH = 640


def bar_chart(
    items: Sequence[tuple[str, float]], *, title: str, unit: str = "", colour: str = "#1565c0"
) -> Markup:
    """Horizontal bars, one per (label, value), longest first as given."""
    row = 26
    height = max(1, len(items)) * row + 10
    top = float(max((value for _, value in items), default=0) or 1)
    label_width = 170
    span = _WIDTH - label_width - 70
    parts = [_open(title, _WIDTH, height)]
    if not items:
        parts.append(_note("No data in this window.", 20))
    for index, (label, value) in enumerate(items):
        y = 5 + index * row
        width = max(1.0, value / top * span) if value else 0
        parts.append(
            f'<text x="{label_width - 8}" y="{y + 17}" text-anchor="end">'
            f"{escape(_clip(label))}</text>"
            f'<rect x="{label_width}" y="{y + 4}" width="{width:.1f}" height="{row - 8}"'
            f' fill="{colour}"><title>{escape(label)}: {_number(value)}{unit}</title></rect>'
            f'<text x="{label_width + width + 6:.1f}" y="{y + 17}">{_number(value)}{unit}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def stacked_columns(
    columns: Sequence[tuple[str, dict[str, int]]], *, title: str, series: Sequence[str]
) -> Markup:
    """One column per (label, counts by series), stacked in `series` order, with a legend."""
    height, bottom, left = 220, 30, 40
    plot = height - bottom - 30
    top = float(max((sum(counts.values()) for _, counts in columns), default=0) or 1)
    step = (_WIDTH - left - 10) / max(1, len(columns))
    width = max(2.0, step * 0.8)
    parts = [_open(title, _WIDTH, height)]
    for index, name in enumerate(series):  # the legend
        key_x = left + index * 90
        parts.append(
            f'<rect x="{key_x}" y="4" width="12" height="12" fill="{COLOURS.get(name, "#777")}"/>'
            f'<text x="{key_x + 16}" y="15">{escape(name)}</text>'
        )
    parts.append(
        f'<text x="{left - 6}" y="{30 + 10}" text-anchor="end">{top:g}</text>'
        f'<text x="{left - 6}" y="{height - bottom}" text-anchor="end">0</text>'
    )
    if not columns:
        parts.append(_note("No data in this window.", height / 2))
    label_every = max(1, len(columns) // 8)
    for index, (label, counts) in enumerate(columns):
        x = left + index * step
        y = float(height - bottom)
        for name in series:
            count = counts.get(name, 0)
            if not count:
                continue
            bar = float(count) / top * plot
            y -= bar
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{bar:.1f}"'
                f' fill="{COLOURS.get(name, "#777")}"><title>{escape(label)} {escape(name)}:'
                f" {count}</title></rect>"
            )
        if index % label_every == 0:
            parts.append(
                f'<text x="{x:.1f}" y="{height - bottom + 16}" class="tick">'
                f"{escape(_clip(label, 12))}</text>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))


def _open(title: str, width: int, height: float) -> str:
    return (
        f'<svg role="img" viewBox="0 0 {width} {height:.0f}"'
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
