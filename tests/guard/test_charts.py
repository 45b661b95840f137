"""The SVG charts the eval report and the dashboard share (`guard.report.charts`)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from markupsafe import Markup

from guard.report.charts import (
    BAR_COLOUR,
    VERDICT_COLOURS,
    Bar,
    Column,
    Segment,
    bar_chart,
    column_chart,
    stacked_columns,
)

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=1>'


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(svg: str) -> Elements:
    parser = Elements()
    parser.feed(svg)
    parser.close()
    return parser


def rects(svg: str) -> list[dict[str, str | None]]:
    return [attrs for tag, attrs in parsed(svg).tags if tag == "rect"]


def test_a_bar_chart_draws_one_bar_per_item_longest_to_scale() -> None:
    svg = bar_chart([("gender", 4.0), ("political", 1.0)], title="Top categories", unit=" %")
    assert isinstance(svg, Markup)
    assert svg.startswith('<svg role="img"')
    assert svg.endswith("</svg>")
    widths = [float(r["width"] or 0) for r in rects(svg)]
    assert widths[0] == 4 * widths[1]
    assert {r["fill"] for r in rects(svg)} == {BAR_COLOUR}
    text = parsed(svg).text
    assert text[0] == "Top categories"
    assert text[1:] == ["gender", "gender", "4 %", "political", "political", "1 %"]


def test_a_bar_of_its_own_has_its_note_and_colour() -> None:
    svg = bar_chart([Bar("failed", 2, "2 of 9", "#757575"), ("passed", 7)], title="t")
    assert [r["fill"] for r in rects(svg)] == ["#757575", BAR_COLOUR]
    assert "2 of 9" in parsed(svg).text
    assert "7" in parsed(svg).text


def test_a_zero_bar_has_no_length_and_a_tiny_one_is_still_seen() -> None:
    svg = bar_chart([("big", 10_000), ("tiny", 1), ("none", 0)], title="t")
    assert [float(r["width"] or 0) for r in rects(svg)][1:] == [1.0, 0.0]


def test_an_empty_bar_chart_says_so() -> None:
    assert "No data in this window." in bar_chart([], title="t")
    assert "nothing found" in bar_chart([], title="t", empty="nothing found")
    assert not rects(bar_chart([], title="t"))


def test_a_long_label_is_clipped_with_the_whole_label_on_hover() -> None:
    label = "a_category_id_longer_than_the_label_column"
    svg = bar_chart([(label, 1)], title="t")
    assert f"<title>{label}</title>{label[:23]}…</text>" in svg


def test_every_chart_escapes_its_text() -> None:
    charts = [
        bar_chart([(HOSTILE, 1), Bar("x", 1, HOSTILE)], title=HOSTILE, empty=HOSTILE),
        bar_chart([], title="t", empty=HOSTILE),
        stacked_columns([(HOSTILE, {HOSTILE: 1})], title=HOSTILE, series=[HOSTILE]),
        column_chart([Column(HOSTILE, [Segment(1, '"red', HOSTILE)])], title=HOSTILE),
    ]
    for svg in charts:
        assert "<script" not in svg
        assert "<img" not in svg
        assert {tag for tag, _ in parsed(svg).tags} <= {"svg", "title", "text", "rect"}
        assert HOSTILE in "".join(parsed(svg).text)  # shown as text, as written


def test_stacked_columns_stack_in_series_order_with_a_legend() -> None:
    svg = stacked_columns(
        [("10:00", {"pass": 3, "block": 1}), ("11:00", {"flag": 2})],
        title="Verdicts over time",
        series=("pass", "flag", "block"),
    )
    legend, bars = rects(svg)[:3], rects(svg)[3:]
    assert [r["fill"] for r in legend] == [VERDICT_COLOURS[v] for v in ("pass", "flag", "block")]
    # The first column: pass at the bottom, block above it; nothing drawn for a zero count.
    assert [r["fill"] for r in bars] == [
        VERDICT_COLOURS["pass"],
        VERDICT_COLOURS["block"],
        VERDICT_COLOURS["flag"],
    ]
    first_pass, first_block = bars[0], bars[1]
    assert float(first_block["y"] or 0) < float(first_pass["y"] or 0)
    assert re.findall(r"<title>([^<]*)</title></rect>", svg) == [
        "10:00 pass: 3",
        "10:00 block: 1",
        "11:00 flag: 2",
    ]
    # The tallest column reaches the top of the plot and names the axis.
    assert '<text x="34" y="40" text-anchor="end">4</text>' in svg


def test_a_series_without_a_colour_is_grey() -> None:
    svg = stacked_columns([("a", {"mystery": 1})], title="t", series=["mystery"])
    assert {r["fill"] for r in rects(svg)} == {"#777"}


def test_column_totals_and_ticks() -> None:
    columns = [Column(str(n), [Segment(n, "#000", f"band {n}")]) for n in range(20)]
    svg = column_chart(columns, title="t", totals=True)
    ticks = re.findall(r'class="tick">([^<]*)</text>', svg)
    assert ticks == ["0", "2", "4", "6", "8", "10", "12", "14", "16", "18"]
    totals = re.findall(r'text-anchor="middle">(\d+)</text>', svg)
    assert totals == [str(n) for n in range(1, 20)]  # none above an empty column
    assert "No data" not in svg
    assert "No data in this window." in column_chart([], title="t")
