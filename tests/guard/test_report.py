from __future__ import annotations

import re

import pytest

from guard import Usage
from guard.bias.categories import category_scores
from guard.bias.score import bias_score, is_biased
from guard.evals import ItemResult
from guard.report import (
    HISTOGRAM_BUCKETS,
    SUMMARY_BUCKETS,
    bucket_labels,
    paired_opinions,
    render_report,
    score_buckets,
)
from guard.result import (
    AnalyzeStepResult,
    BiasResult,
    PreprocessStepResult,
    Verdict,
)
from tests.support.html_tags import tags_of

SCRIPT = "<script>alert(1)</script>"
ATTRIBUTE = '"><img src=x onerror=1>'
HOSTILE = f"{SCRIPT} {ATTRIBUTE} & 'quoted'"
ESCAPED_SCRIPT = "&lt;script&gt;alert(1)&lt;/script&gt;"
ESCAPED_ATTRIBUTE = "&#34;&gt;&lt;img src=x onerror=1&gt;"
CHINESE = "女性不适合当领导。"
KOREAN = "북쪽 사람들은 게으르다."


def result(
    verdicts: list[tuple[str, str, list[str]]],
    *,
    opinions: list[str] | None = None,
    reason: str | None = "The explanation.",
    scale: float = 1,
    calls: int = 3,
) -> BiasResult:
    """A result as the scorer builds it, from (result, reason, categories) verdicts."""
    results = [Verdict(result=r, reason=why, categories=named) for r, why, named in verdicts]
    return BiasResult(
        run_id="run",
        preprocess_step_result=PreprocessStepResult(
            opinions=[f"opinion {n}" for n in range(len(verdicts))]
            if opinions is None
            else opinions
        ),
        preprocess_prompt=None,
        analyze_step_result=AnalyzeStepResult(results=results),
        analyze_prompt=None,
        score=bias_score((v.result for v in results), scale),
        reason=reason,
        generate_reason_prompt=None,
        scale=scale,
        judge_model="judge",
        judge_calls=calls,
        usage=Usage(prompt_tokens=100, completion_tokens=10),
        category_scores=category_scores(
            [v.categories for v in results if is_biased(v.result)], len(results), scale
        ),
    )


def item(index: int, output: object, scored: BiasResult | None = None, **errors: str) -> ItemResult:
    found = ItemResult(index=index, input=f"question {index}", output=output)
    if scored is not None:
        found.scores["bias-scorer"] = scored
    found.errors.update(errors)
    return found


def dataset() -> list[ItemResult]:
    return [
        item(
            0,
            "Women are too emotional. Tea is nice.",
            result([("yes", "Gender stereotype.", ["gender"]), ("no", "Neutral.", [])]),
        ),
        item(
            1,
            "Northern women are lazy.",
            result([("Yes.", "Two stereotypes.", ["geographical", "gender"])]),
        ),
        item(2, "Water boils at 100 C.", result([("no", "A fact.", [])], opinions=[])),
        item(3, "boom", bias_scorer="JudgeOutputError: not JSON"),
    ]


# -- the page -----------------------------------------------------------------------------


def test_the_page_is_one_self_contained_document() -> None:
    page = render_report(dataset(), source="data.jsonl", judge="gpt-4o-mini", lines=[1, 2, 4, 5])
    assert page.startswith("<!DOCTYPE html>\n<html")
    assert page.rstrip().endswith("</html>")
    head = page.split("<head>", 1)[1]
    assert head.startswith('\n<meta charset="utf-8">')  # first in <head>, as browsers want
    assert "<style>" in page
    # Nothing outside the page: no URL at all, no script, no linked or embedded resource.
    assert "http://" not in page
    assert "https://" not in page
    assert "<script" not in page
    assert "url(" not in page
    assert "@import" not in page
    found = {tag for tag, _ in tags_of(page).tags}
    assert not found & {"script", "link", "img", "iframe", "object", "embed", "base", "image"}
    assert all(
        name not in ("src", "href") and not name.startswith("on")
        for _, attrs in tags_of(page).tags
        for name, _ in attrs
    )


def test_the_page_has_the_summary_charts_categories_and_items() -> None:
    page = render_report(dataset(), source="data.jsonl", judge="gpt-4o-mini", lines=[1, 2, 4, 5])
    for section in ("summary", "charts", "categories", "items"):
        assert f'<section id="{section}">' in page
    assert page.count("<svg") == 3
    for chart in ("verdicts", "distribution", "categories"):
        assert f'id="chart-{chart}"' in page
    for index in range(4):
        assert f'<tr id="item-{index}" class="item' in page
    assert "data.jsonl" in page
    assert "gpt-4o-mini" in page
    assert '<div class="line">line 5</div>' in page


def summary_value(page: str, name: str) -> str:
    found = re.search(rf'<th scope="row">{re.escape(name)}</th><td>(.*?)</td>', page)
    assert found is not None, name
    return found.group(1)


def test_the_summary_table() -> None:
    page = render_report(dataset(), skipped=2)
    assert summary_value(page, "items") == "4"
    assert summary_value(page, "scored") == "3"
    assert summary_value(page, "failed items") == "1"
    assert summary_value(page, "errors") == "1"
    assert summary_value(page, "skipped lines") == "2"
    assert summary_value(page, "mean score") == "0.5"  # (0.5 + 1 + 0) / 3
    assert summary_value(page, "scale") == "1"
    assert summary_value(page, "biased items (score &gt; 0)") == "2"
    assert summary_value(page, "judge calls") == "9"
    assert summary_value(page, "judge tokens") == "330 (300 prompt, 30 completion)"


def test_skipped_lines_are_left_out_when_unknown() -> None:
    assert '<th scope="row">skipped lines</th>' not in render_report(dataset())


def test_the_score_band_chart_counts_items_as_the_cli_summary_does() -> None:
    page = render_report(dataset())
    chart = page.split('id="chart-verdicts"', 1)[1].split("</figure>", 1)[0]
    labels = re.findall(r"<title>(.*?)</title>", chart)[1:]  # after the chart's own title
    assert labels == [*(f"score {label}" for label in bucket_labels(1, 5)), "failed"]
    # One bar per band and one for failed items, with their counts beside them.
    counts = re.findall(r'<text x="[\d.]+" y="\d+">(\d+)</text>', chart)
    assert counts == ["1", "0", "1", "0", "1", "1"]


def test_the_histogram_has_ten_bands_over_the_scale() -> None:
    page = render_report(dataset())
    chart = page.split('id="chart-distribution"', 1)[1].split("</figure>", 1)[0]
    bars = re.findall(r"<rect [^>]*><title>(.*?): (\d+)</title></rect>", chart)
    assert len(bars) == HISTOGRAM_BUCKETS
    assert bars[0] == ("[0, 0.1)", "1")
    assert bars[5] == ("[0.5, 0.6)", "1")
    assert bars[9] == ("[0.9, 1]", "1")
    assert sum(int(count) for _, count in bars) == 3


def test_the_categories_chart_and_table() -> None:
    page = render_report(dataset())
    chart = page.split('id="chart-categories"', 1)[1].split("</figure>", 1)[0]
    assert re.findall(r"<title>(\w+)</title>", chart) == ["gender", "geographical"]
    assert "2 · mean 0.5" in chart  # gender: (0.5 + 1 + 0) / 3
    assert "1 · mean 0.3333" in chart
    table = page.split('<section id="categories">', 1)[1].split("</section>", 1)[0]
    assert re.findall(
        r"<tr><td>(.*?)</td><td>(\d+)</td><td>(.*?)</td><td>(.*?)</td></tr>", table
    ) == [
        ("gender", "2", "67%", "0.5"),
        ("geographical", "1", "33%", "0.3333"),
    ]


def test_no_categories_are_said_so() -> None:
    page = render_report([item(0, "Tea.", result([("no", "fine", [])]))])
    assert "no biased opinions" in page
    assert "No biased opinion named a category." in page
    assert page.count("<svg") == 3


def row_of(page: str, index: int) -> str:
    return page.split(f'<tr id="item-{index}"', 1)[1].split("</tr>", 1)[0]


def test_each_item_shows_its_texts_score_categories_opinions_and_explanation() -> None:
    page = render_report(dataset())
    first = row_of(page, 0)
    assert "question 0" in first
    assert "Women are too emotional. Tea is nice." in first
    assert '<span class="badge band-2">0.5</span>' in first
    assert '<span class="tag">gender 0.5</span>' in first
    assert re.findall(r'<span class="verdict (\w+)">', first) == ["yes", "no"]
    assert '<q dir="auto">opinion 0</q>' in first
    assert "Gender stereotype." in first
    assert "Neutral." in first
    assert "The explanation." in first
    second = row_of(page, 1)
    assert re.findall(r'<span class="verdict (\w+)">', second) == ["yes"]  # "Yes." is yes
    assert '<span class="tag">geographical</span><span class="tag">gender</span>' in second


def test_a_text_judged_whole_is_its_own_opinion() -> None:
    page = render_report(dataset())
    assert '<q dir="auto">Water boils at 100 C.</q>' in row_of(page, 2)
    assert '<span class="none">none</span>' in row_of(page, 2)  # no categories


def test_a_failed_item_shows_its_errors() -> None:
    page = render_report(dataset())
    failed = row_of(page, 3)
    assert failed.startswith(' class="item failed"')
    assert '<span class="badge failed">failed</span>' in failed
    assert (
        '<ul class="errors"><li><strong>bias_scorer</strong>: JudgeOutputError: not JSON' in failed
    )


def test_a_missing_explanation_and_a_verdict_beyond_the_opinions() -> None:
    scored = result(
        [("yes", "r1", ["gender"]), ("no", "r2", [])], opinions=["only one"], reason=None
    )
    row = row_of(render_report([item(0, "text", scored)]), 0)
    assert "(no opinion text)" in row
    assert row.endswith('<td><span class="none">none</span></td>')


def test_outputs_show_the_judged_text_and_other_values_as_json() -> None:
    completion = {"choices": [{"message": {"role": "assistant", "content": "judged text"}}]}
    items = [
        ItemResult(index=0, input=[{"role": "user", "content": "hi"}], output=completion),
        ItemResult(index=1, input=None, output=None, errors={"target": "RuntimeError: down"}),
        ItemResult(index=2, input={"q": 1}, output=42, errors={"bias-scorer": "bad output"}),
    ]
    items[0].scores["bias-scorer"] = result([("no", "fine", [])])
    page = render_report(items)
    assert "judged text" in row_of(page, 0)
    assert "&#34;role&#34;: &#34;user&#34;" in row_of(page, 0)
    assert '<span class="none">empty</span>' in row_of(page, 1)
    assert "RuntimeError: down" in row_of(page, 1)
    assert "&#34;q&#34;: 1" in row_of(page, 2)
    assert '<div class="text" dir="auto">42</div>' in row_of(page, 2)


def test_items_are_shown_in_dataset_order() -> None:
    page = render_report(list(reversed(dataset())))
    assert [int(n) for n in re.findall(r'<tr id="item-(\d+)"', page)] == [0, 1, 2, 3]


def test_only_the_chosen_scorers_results_are_shown() -> None:
    page = render_report(dataset(), scorer_id="another")
    assert summary_value(page, "scored") == "0"
    assert summary_value(page, "mean score") == "n/a"
    assert '<span class="badge failed">failed</span>' in row_of(page, 0)


def test_a_run_where_everything_failed() -> None:
    page = render_report([item(0, "x", None, bias_scorer="down"), item(1, "y", None, target="t")])
    assert summary_value(page, "mean score") == "n/a"
    assert summary_value(page, "failed items") == "2"
    assert "0 scored items in 10 bands" in page
    assert page.count("<svg") == 3


def test_an_empty_run_renders() -> None:
    page = render_report([])
    assert summary_value(page, "items") == "0"
    assert page.count("<svg") == 3


def test_another_scale() -> None:
    scored = result([("yes", "r", ["gender"]), ("no", "r", []), ("no", "r", [])], scale=10)
    page = render_report([item(0, "t", scored)], scale=10)
    assert summary_value(page, "mean score") == "3.33"
    assert summary_value(page, "scale") == "10"
    assert '<span class="badge band-1">3.33</span>' in page
    assert "[2, 4)" in page
    assert "[3, 4): 1" in page


def test_a_bad_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="scale"):
        render_report([], scale=0)


# -- escaping and text ----------------------------------------------------------------


def test_every_text_is_escaped() -> None:
    hostile = result([("yes", HOSTILE, [HOSTILE]), ("no", HOSTILE, [])], reason=HOSTILE)
    hostile.preprocess_step_result.opinions[:] = [HOSTILE, HOSTILE]
    hostile.category_scores[HOSTILE] = 0.5
    items = [
        ItemResult(index=0, input=HOSTILE, output=HOSTILE, scores={"bias-scorer": hostile}),
        ItemResult(index=1, input={HOSTILE: HOSTILE}, output=HOSTILE, errors={HOSTILE: HOSTILE}),
    ]
    page = render_report(items, title=HOSTILE, source=HOSTILE, judge=HOSTILE, generated_at=HOSTILE)
    assert SCRIPT not in page
    assert ATTRIBUTE not in page
    assert "<script" not in page
    assert "<img" not in page
    assert ESCAPED_SCRIPT in page
    assert ESCAPED_ATTRIBUTE in page
    assert "&#39;quoted&#39;" in page
    # As a browser parses it: no script, no image, no event handler, only our own tags.
    parsed = tags_of(page).tags
    assert {tag for tag, _ in parsed} <= {
        "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "p",
        "strong", "section", "table", "thead", "tbody", "tr", "th", "td", "div", "figure",
        "figcaption", "svg", "text", "rect", "line", "span", "ol", "ul", "li", "q",
    }  # fmt: skip
    assert not [name for _, attrs in parsed for name, _ in attrs if name.startswith("on")]
    # Each place the text goes: title, header, input, output, opinion, reason, category,
    # explanation, error source and message, and the category chart and table.
    assert page.count(ESCAPED_SCRIPT) >= 15


def test_chinese_and_korean_text_survive() -> None:
    scored = result([("yes", "性别刻板印象。", ["gender"])], opinions=[CHINESE])
    items = [
        ItemResult(index=0, input="问题", output=CHINESE, scores={"bias-scorer": scored}),
        ItemResult(
            index=1,
            input="질문",
            output=KOREAN,
            scores={"bias-scorer": result([("yes", "지역 고정관념.", ["geographical"])])},
        ),
    ]
    page = render_report(items, source="데이터.jsonl")
    assert '<meta charset="utf-8">' in page
    for text in (
        CHINESE,
        KOREAN,
        "性别刻板印象。",
        "지역 고정관념.",
        "问题",
        "질문",
        "데이터.jsonl",
    ):
        assert text in page
    assert page.encode("utf-8").decode("utf-8") == page


def test_a_long_category_id_is_shortened_in_the_chart_only() -> None:
    long_id = "a_rather_long_category_identifier"
    page = render_report([item(0, "t", result([("yes", "r", [long_id])]))])
    chart = page.split('id="chart-categories"', 1)[1].split("</figure>", 1)[0]
    assert f"<title>{long_id}</title>a_rather_long_category_…</text>" in chart
    assert f"<td>{long_id}</td>" in page


# -- pure helpers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "scale", "buckets", "expected"),
    [
        ([], 1, 5, [0, 0, 0, 0, 0]),
        ([0, 0.19, 0.2, 0.6, 0.8, 0.99, 1], 1, 5, [2, 1, 0, 1, 3]),
        # 0.3 * 10 and 0.7 * 10 are just below 3 and 7 in floating point.
        ([0.3, 0.7, 0.1, 0.09], 1, 10, [1, 1, 0, 1, 0, 0, 0, 1, 0, 0]),
        ([0.6], 1, 5, [0, 0, 0, 1, 0]),  # 0.6 / 0.2 is 2.9999999999999996
        ([3.33, 10, 0], 10, 5, [1, 1, 0, 0, 1]),
        ([-1, 2], 1, 2, [1, 1]),  # outside 0..scale: the nearest band
        ([0.5], 1, 1, [1]),
    ],
)
def test_score_buckets(
    scores: list[float], scale: float, buckets: int, expected: list[int]
) -> None:
    assert score_buckets(scores, scale, buckets) == expected


@pytest.mark.parametrize(("scale", "buckets"), [(0, 5), (-1, 5), (1, 0)])
def test_score_buckets_refuses_bad_arguments(scale: float, buckets: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        score_buckets([0.5], scale, buckets)


def test_bucket_labels() -> None:
    assert bucket_labels(1, SUMMARY_BUCKETS) == [
        "[0, 0.2)",
        "[0.2, 0.4)",
        "[0.4, 0.6)",
        "[0.6, 0.8)",
        "[0.8, 1]",
    ]
    assert bucket_labels(10, 2) == ["[0, 5)", "[5, 10]"]


def test_paired_opinions() -> None:
    two = result([("yes", "r1", ["gender"]), ("no", "r2", [])], opinions=["a", "b"])
    assert [(opinion, v.reason) for opinion, v in paired_opinions(two, "text")] == [
        ("a", "r1"),
        ("b", "r2"),
    ]
    whole = result([("no", "r", [])], opinions=[])
    assert [opinion for opinion, _ in paired_opinions(whole, {"text": "the text"})] == ["the text"]
    beyond = result([("no", "r1", []), ("no", "r2", [])], opinions=["a"])
    assert [opinion for opinion, _ in paired_opinions(beyond, "t")] == ["a", None]
    assert paired_opinions(result([], opinions=[]), "t") == []
