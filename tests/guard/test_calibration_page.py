"""The calibration page (`guard.report.render_calibration`) and the report it draws
(`guard.calibration.build_report`), on judge runs built by hand."""

from __future__ import annotations

import re

from guard import Usage
from guard.calibration import (
    CalibrationReport,
    Judged,
    JudgeRun,
    LabelledItem,
    LabelledSet,
    build_report,
)
from guard.report import render_calibration
from tests.support.html_tags import tags_of

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=1>'


def item(n: int, biased: bool, category: str | None = None, *, line: bool = True) -> LabelledItem:
    where = str(n) if line else f"data.intrasentence[{n}]"
    return LabelledItem(
        f"text {n}", biased, where, n if line else None, category, f"id-{n}" if line else None
    )


def report(
    judged: list[Judged], *, target: float = 0.9, left_out: dict[str, int] | None = None
) -> CalibrationReport:
    found = LabelledSet("jsonl", items=[j.item for j in judged], left_out=left_out or {})
    run = JudgeRun(judged, seconds=1.25)
    return build_report(
        found,
        run,
        source="labelled.jsonl",
        judge="judge-model",
        scale=1.0,
        grid=0.5,
        target_precision=target,
        label_cut=0.5,
    )


def scored(n: int, biased: bool, score: float, category: str | None = None) -> Judged:
    usage = Usage(prompt_tokens=100, completion_tokens=10)
    return Judged(item(n, biased, category), score, None, 2, usage)


RUN = [
    scored(1, True, 1.0, "gender"),
    scored(2, True, 0.5, "gender"),
    scored(3, False, 0.5, HOSTILE),
    scored(4, False, 0.0),
    Judged(item(5, True, "gender"), None, f"JudgeOutputError: {HOSTILE}"),
]


def test_the_report_counts_what_was_scored_and_what_failed() -> None:
    found = report(RUN, left_out={"stereoset: unrelated sentences": 3})
    document = found.to_json()
    assert document["items"] == {
        "read": 5,
        "scored": 4,
        "failed": 1,
        "biased": 2,
        "unbiased": 2,
        "skipped": 0,
        "leftOut": {"stereoset: unrelated sentences": 3},
    }
    assert document["judge"] == {
        "model": "judge-model",
        "calls": 8,
        "promptTokens": 400,
        "completionTokens": 40,
        "totalTokens": 440,
        "seconds": 1.25,
    }
    # 0: P 2/4; 0.5: tp 2, fp 1, P 2/3; 1: tp 1, P 1, R 0.5.
    assert [(r["threshold"], r["precision"], r["recall"]) for r in document["thresholds"]] == [
        (0.0, 0.5, 1.0),
        (0.5, 0.6667, 1.0),
        (1.0, 1.0, 0.5),
    ]
    assert document["bestF1"]["threshold"] == 0.5  # F1 0.8 against 0.6667 at 0 and 1
    assert document["targetPrecision"]["reached"]["threshold"] == 1.0
    assert document["chosen"] == {"by": "precision", "threshold": 1.0}
    gender = next(c for c in document["categories"] if c["category"] == "gender")
    assert (gender["items"], gender["biased"], gender["failed"]) == (2, 2, 1)
    [failure] = document["failures"]
    assert (failure["line"], failure["id"], failure["label"]) == (5, "id-5", "biased")


def test_the_page_is_self_contained_and_escapes_every_text() -> None:
    drawn = report(RUN, left_out={"stereoset: unrelated sentences": 3})
    page = render_calibration(drawn, generated_at="2024-01-01 00:00:00 UTC")
    assert '<th scope="row">left out: stereoset: unrelated sentences</th><td>3</td>' in page
    assert page.startswith("<!DOCTYPE html>\n<html")
    assert "<script" not in page
    assert "<img" not in page
    assert "http://" not in page
    assert "https://" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    found = {tag for tag, _ in tags_of(page).tags}
    assert not found & {"script", "link", "img", "iframe", "object", "embed", "base", "image"}
    assert "labelled.jsonl" in page
    assert "judge-model" in page
    assert "2024-01-01 00:00:00 UTC" in page
    assert page.count("<svg") == 1


def test_the_page_shows_the_picks_the_tables_and_the_failures() -> None:
    page = render_calibration(report(RUN))
    picks = page.split('<section id="picks">', 1)[1].split("</section>", 1)[0]
    assert "<td>0.5 (precision 0.6667, recall 1, F1 0.8, flagged 0.75)</td>" in picks  # the best F1
    assert "lowest reaching precision 0.9</th><td>1 (precision 1, recall 0.5" in picks
    rows = page.split('<section id="thresholds">', 1)[1].split("</section>", 1)[0]
    assert rows.count("<tr") == 4  # the heading and three thresholds
    assert '<tr class="chosen"><td>1</td>' in rows
    confusion = page.split('<section id="confusion">', 1)[1].split("</section>", 1)[0]
    assert "chosen as the lowest reaching the target precision" in confusion
    assert '<th scope="row">biased</th><td>1</td><td>1</td><td>2</td>' in confusion
    categories = page.split('<section id="categories">', 1)[1].split("</section>", 1)[0]
    assert re.findall(r"<tr><td>([^<]+)</td>", categories) == [
        "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=1&gt;",
        "gender",
    ]
    failures = page.split('<section id="failures">', 1)[1].split("</section>", 1)[0]
    assert "<td>line 5</td><td>id-5</td>" in failures
    assert "JudgeOutputError: &lt;script&gt;" in failures
    assert '<th scope="row">judge tokens</th><td>440 (400 prompt, 40 completion)</td>' in page
    assert '<th scope="row">wall time</th><td>1.2 s</td>' in page  # 1.25 rounded half even


def test_without_a_pick_the_page_says_so() -> None:
    page = render_calibration(report([scored(1, False, 0.5, "x")]))
    assert "none: no biased text was flagged" in page
    assert "none: no threshold reaches precision 0.9" in page
    assert "No threshold was chosen" in page
    assert "No categories to show." in page
    assert "The judge scored every text." in page


def test_falling_back_to_the_best_f1_and_showing_a_document_path() -> None:
    judged = [
        Judged(item(0, True, line=False), 0.5),
        Judged(item(1, False, line=False), 0.5),
        Judged(item(2, True, line=False), None, "JudgeTimeout: slow"),
    ]
    found = report(judged)
    assert found.calibration.chosen_by == "f1"
    page = render_calibration(found)
    assert "chosen for the best F1" in page
    assert "<td>data.intrasentence[2]</td><td></td>" in page
