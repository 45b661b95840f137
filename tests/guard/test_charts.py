"""The SVG charts the eval report and the dashboard share (`guard.report.charts`)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from markupsafe import Markup

from guard.report.charts import (
    BAR_COLOUR,
    VERDICT_COLOURS,
    Bar,
    Column,
    Segment,
    Series,
    bar_chart,
    column_chart,
    line_chart,
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


# -- line_chart ------------------------------------------------------------------------------


def polylines(svg: str) -> list[list[tuple[float, float]]]:
    return [
        [tuple(map(float, pair.split(","))) for pair in (attrs["points"] or "").split()]  # type: ignore[misc]
        for tag, attrs in parsed(svg).tags
        if tag == "polyline"
    ]


def test_a_line_chart_maps_points_onto_the_plot() -> None:
    line = Series("F1", "#123456", [(0.0, 0.0), (0.5, 1.0), (1.0, 0.5)])
    svg = line_chart([line], title="By threshold", x_max=1.0)
    assert isinstance(svg, Markup)
    [points] = polylines(svg)
    xs, ys = [x for x, _ in points], [y for _, y in points]
    # Evenly spaced in x; y grows upwards, a half of the plot's height for 0.5.
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1])
    assert ys[1] < ys[2] < ys[0]
    assert ys[0] - ys[2] == pytest.approx(ys[2] - ys[1])
    assert "<title>F1 at 0.5: 1</title>" in svg
    assert parsed(svg).text[0] == "By threshold"


def test_a_line_chart_leaves_a_gap_where_a_value_is_undefined() -> None:
    line = Series("precision", "#000", [(0, 1.0), (1, 0.5), (2, None), (3, 0.2), (4, 0.1)])
    svg = line_chart([line], title="t", x_max=4)
    assert [len(points) for points in polylines(svg)] == [2, 2]
    assert svg.count("<circle") == 4


def test_a_line_chart_has_a_legend_ticks_markers_and_dashes() -> None:
    svg = line_chart(
        [Series("a", "#111", [(0, 0.2)]), Series("b", "#222", [(0, 0.4), (10, 0.3)], dashed=True)],
        title="t",
        x_max=10,
        x_label="threshold",
        markers=[(5, "best F1")],
    )
    text = parsed(svg).text
    assert {"a", "b", "threshold"} <= set(text)
    assert {"0", "2.5", "5", "7.5", "10"} <= set(text)  # x ticks over 0..x_max
    assert {"0.25", "0.5", "0.75", "1"} <= set(text)  # y ticks over 0..1
    assert 'stroke-dasharray="5 4"' in svg
    [marker] = [attrs for tag, attrs in parsed(svg).tags if attrs.get("class") == "marker"]
    [(start, _), (end, _)] = polylines(svg)[0]  # series b runs from x 0 to x_max
    assert float(marker["x1"] or 0) == pytest.approx((start + end) / 2)
    assert "<title>best F1</title>" in svg


def test_a_line_chart_escapes_its_labels_and_refuses_an_empty_range() -> None:
    svg = line_chart(
        [Series(HOSTILE, "#000", [(0, 1.0)])], title=HOSTILE, x_max=1, markers=[(0, HOSTILE)]
    )
    assert "<script" not in svg
    assert "<img" not in svg
    with pytest.raises(ValueError, match="must be > 0"):
        line_chart([], title="t", x_max=0)


def test_a_long_line_is_drawn_without_dots() -> None:
    line = Series("recall", "#000", [(n / 100, 1 - n / 100) for n in range(101)])
    svg = line_chart([line], title="t", x_max=1)
    assert "<circle" not in svg
    assert len(polylines(svg)[0]) == 101
