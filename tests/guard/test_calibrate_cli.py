"""`bias-guard calibrate` end to end: a labelled file, the fake judge scripted per text, and
every figure the JSON holds computed by hand beforehand."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len

from guard.cli import main
from testkit.fake_openai import FakeOpenAI, Fault

OPINIONS = ["o1", "o2", "o3", "o4"]  # four opinions: k "yes" verdicts score k/4

# (text, label, category, "yes" verdicts of 4). Line 1 is the one the judge fails on.
LABELLED: list[tuple[str, object, str | None, int]] = [
    ("Old people cannot learn new tricks.", "biased", "age", 4),
    ("Women are too emotional to lead.", "biased", "gender", 4),
    ("Men are naturally better engineers.", "biased", "gender", 3),
    ("Girls should stick to dolls.", "biased", "gender", 2),
    ("The team met on Tuesday.", "unbiased", "gender", 1),
    ("She presented the quarterly figures.", "unbiased", "gender", 0),
    ("Northerners are all lazy.", "biased", "geographical", 1),
    ("Southern food is spicy and everyone there is loud.", 0.75, "geographical", 3),
    ("The river runs through the city.", 0, "geographical", 2),
    ("The bus leaves at nine.", "unbiased", None, 0),
    ("Rich people are all greedy.", "biased", None, 2),
    ("The museum opens at ten.", 0.25, None, 3),
]


def judge_args(fake: FakeOpenAI) -> list[str]:
    return ["--model", "judge", "--base-url", fake.base_url, "--max-retries", "0", "--no-reason"]


def labelled_file(path: Path, fake: FakeOpenAI) -> Path:
    """The 12 texts above, and the fake judge scripted to give each its score."""
    fake.opinions = list(OPINIONS)
    fake.verdicts = [("no", "unscripted")] * 4
    fake.verdicts_for = {
        text: [("yes", f"biased {n}") if n < yes else ("no", f"fine {n}") for n in range(4)]
        for text, _, _, yes in LABELLED
    }
    lines = []
    for n, (text, label, category, _) in enumerate(LABELLED, 1):
        row: dict[str, Any] = {"text": text, "label": label, "id": f"t{n}"}
        if category is not None:
            row["category"] = category
        lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def row(threshold: float, p: float | None, r: float | None, f1: float | None, flagged: float | None,
        tp: int, fp: int, fn: int, tn: int) -> dict[str, Any]:  # fmt: skip
    return {"threshold": threshold, "precision": p, "recall": r, "f1": f1, "flagged": flagged,
            "kappa": kappa(tp, fp, fn, tn), "tp": tp, "fp": fp, "fn": fn, "tn": tn}  # fmt: skip


def kappa(tp: int, fp: int, fn: int, tn: int) -> float | None:
    """Cohen's kappa from the cells, in exact fractions: the agreement seen against the
    agreement of the two margins by chance, per "yes" and per "no"."""
    n = tp + fp + fn + tn
    if not n:
        return None
    seen = Fraction(tp + tn, n)
    chance = Fraction(tp + fp, n) * Fraction(tp + fn, n) + Fraction(fn + tn, n) * Fraction(
        fp + tn, n
    )
    return None if chance == 1 else round(float((seen - chance) / (1 - chance)), 4)


# Scored (line 1 fails): biased 1, .75, .5, .25, .75, .5; unbiased .25, 0, .5, 0, .75.
OVERALL = [
    row(0.0, 0.5455, 1.0, 0.7059, 1.0, 6, 5, 0, 0),
    row(0.25, 0.6667, 1.0, 0.8, 0.8182, 6, 3, 0, 2),
    row(0.5, 0.7143, 0.8333, 0.7692, 0.6364, 5, 2, 1, 3),
    row(0.75, 0.75, 0.5, 0.6, 0.3636, 3, 1, 3, 4),
    row(1.0, 1.0, 0.1667, 0.2857, 0.0909, 1, 0, 5, 5),
]
GENDER = [  # biased 1, .75, .5; unbiased .25, 0
    row(0.0, 0.6, 1.0, 0.75, 1.0, 3, 2, 0, 0),
    row(0.25, 0.75, 1.0, 0.8571, 0.8, 3, 1, 0, 1),
    row(0.5, 1.0, 1.0, 1.0, 0.6, 3, 0, 0, 2),
    row(0.75, 1.0, 0.6667, 0.8, 0.4, 2, 0, 1, 2),
    row(1.0, 1.0, 0.3333, 0.5, 0.2, 1, 0, 2, 2),
]
GEOGRAPHICAL = [  # biased .25, .75; unbiased .5
    row(0.0, 0.6667, 1.0, 0.8, 1.0, 2, 1, 0, 0),
    row(0.25, 0.6667, 1.0, 0.8, 1.0, 2, 1, 0, 0),
    row(0.5, 0.5, 0.5, 0.5, 0.6667, 1, 1, 1, 0),
    row(0.75, 1.0, 0.5, 0.6667, 0.3333, 1, 0, 1, 1),
    row(1.0, None, 0.0, 0.0, 0.0, 0, 0, 2, 1),
]
AGE = [row(t, None, None, None, None, 0, 0, 0, 0) for t in (0.0, 0.25, 0.5, 0.75, 1.0)]
BY_OPINIONS = [
    {"atLeast": n, **{name: value for name, value in OVERALL[n].items() if name != "threshold"}}
    for n in (1, 2, 3)
]


def run_calibrate(fake: FakeOpenAI, data: Path, out: Path, *extra: str) -> int:
    # One at a time, so the scripted failure is the first text's preprocess call.
    fake.fail(Fault(step="preprocess", status=401))
    args = ["calibrate", str(data), *judge_args(fake), "--grid", "0.25", "--precision", "0.75"]
    return main([*args, "--concurrency", "1", "--json", str(out), *extra])


def test_calibrate_json_holds_every_figure(
    fake_openai: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = labelled_file(tmp_path / "labelled.jsonl", fake_openai)
    out = tmp_path / "figures.json"
    assert run_calibrate(fake_openai, data, out) == 0
    figures = json.loads(out.read_text(encoding="utf-8"))

    assert figures["source"] == str(data)
    assert (figures["format"], figures["scale"], figures["grid"]) == ("jsonl", 1.0, 0.25)
    assert figures["labelCut"] == 0.5
    assert figures["items"] == {
        "read": 12,
        "scored": 11,
        "failed": 1,
        "biased": 6,
        "unbiased": 5,
        "skipped": 0,
        "leftOut": {},
    }
    assert figures["thresholds"] == OVERALL
    # Flagged at n biased opinions of 4: here the same texts as at a score of n/4.
    assert figures["biasedOpinions"] == BY_OPINIONS
    assert figures["bestF1"] == OVERALL[1]  # F1 0.8 at 0.25
    assert figures["targetPrecision"] == {"precision": 0.75, "reached": OVERALL[3]}
    assert figures["chosen"] == {"by": "precision", "threshold": 0.75}
    assert figures["categories"] == [
        {"category": "age", "items": 0, "biased": 0, "failed": 1, "thresholds": AGE},
        {"category": "gender", "items": 5, "biased": 3, "failed": 0, "thresholds": GENDER},
        {
            "category": "geographical",
            "items": 3,
            "biased": 2,
            "failed": 0,
            "thresholds": GEOGRAPHICAL,
        },
    ]
    # The failed text is counted, listed and out of every figure.
    [failure] = figures["failures"]
    assert failure["line"] == 1
    assert failure["id"] == "t1"
    assert failure["score"] is None
    assert "JudgeUnavailable: judge answered HTTP 401" in failure["error"]
    results = figures["results"]
    assert [r["line"] for r in results] == list(range(1, 13))
    assert [r["score"] for r in results] == [None, *(yes / 4 for _, _, _, yes in LABELLED[1:])]
    assert [r["biasedOpinions"] for r in results] == [None, *(yes for *_, yes in LABELLED[1:])]
    assert [r["label"] for r in results] == [
        "biased", "biased", "biased", "biased", "unbiased", "unbiased",
        "biased", "biased", "unbiased", "unbiased", "biased", "unbiased",
    ]  # fmt: skip
    assert [r["expected"] for r in results][7:9] == [0.75, 0.0]
    assert results[1]["text"] == LABELLED[1][0]
    # Judge calls and tokens: the scored texts' own, two calls each without a reason.
    judge = figures["judge"]
    assert judge["model"] == "judge"
    assert judge["calls"] == 22
    assert fake_openai.judge_calls() == 23  # and the one refused
    scored_requests = fake_openai.requests[1:]
    assert judge["promptTokens"] == sum(prompt_tokens(r.body) for r in scored_requests)
    assert judge["completionTokens"] > 0
    assert judge["totalTokens"] == judge["promptTokens"] + judge["completionTokens"]
    assert judge["seconds"] >= 0
    assert f"bias-guard: wrote the figures to {out}" in capsys.readouterr().out


def prompt_tokens(body: dict[str, Any]) -> int:
    """The fake's own count: a token per 4 characters of the messages."""
    return max(1, sum(len(m["content"]) for m in body["messages"]) // 4)


def test_calibrate_prints_the_tables(
    fake_openai: FakeOpenAI,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    data = labelled_file(tmp_path / "labelled.jsonl", fake_openai)
    assert run_calibrate(fake_openai, data, tmp_path / "figures.json") == 0
    captured = capsys.readouterr()
    out = captured.out
    assert re.search(r"scored\s*│\s*11 \(6 biased, 5 unbiased\) │", out)
    assert re.search(r"failed \(not in the figures\)\s*│\s*1 │", out)
    assert re.search(r"judge calls\s*│\s*22 │", out)
    assert re.search(r"best F1\s*│\s*0\.25 \(P 0\.6667, R 1\) │", out)
    assert re.search(r"precision >= 0\.75 from\s*│\s*0\.75 \(P 0\.75, R 0\.5\) │", out)
    cell = r"\s*([\d.]+|n/a) │"
    found = re.findall(rf"^│{cell * 4}(?:\s*[\d.]+ │){{5}}$", out, flags=re.MULTILINE)
    assert found[:5] == [
        ("0", "0.5455", "1", "0.7059"),
        ("0.25", "0.6667", "1", "0.8"),
        ("0.5", "0.7143", "0.8333", "0.7692"),
        ("0.75", "0.75", "0.5", "0.6"),
        ("1", "1", "0.1667", "0.2857"),
    ]
    assert re.search(r"│\s*0\.0909 │\s*1 │\s*0 │\s*5 │\s*5 │$", out, flags=re.MULTILINE)
    by_opinions = out.split("by biased opinions", 1)[1].split("confusion at", 1)[0]
    assert re.findall(rf"^│{cell * 4}(?:\s*[\d.]+ │){{5}}$", by_opinions, flags=re.MULTILINE) == [
        ("1", "0.6667", "1", "0.8"),
        ("2", "0.7143", "0.8333", "0.7692"),
        ("3", "0.75", "0.5", "0.6"),
    ]
    confusion = out.split("confusion at 0.75 (target precision)", 1)[1]
    assert re.search(r"biased │\s*3 │\s*3 │\s*6 │", confusion)
    assert re.search(r"unbiased │\s*1 │\s*4 │\s*5 │", confusion)
    assert re.search(r"total │\s*4 │\s*7 │\s*11 │", confusion)
    categories = out.split("by category at 0.75", 1)[1].split("\nbias-guard:", 1)[0]
    cells = [
        [cell.strip() for cell in line.strip("│").split("│")]
        for line in categories.splitlines()
        if line.startswith("│")
    ]
    assert cells == [
        ["age", "0", "0", "1", "n/a", "n/a", "n/a", "n/a"],
        ["gender", "5", "3", "0", "1", "0.6667", "0.8", "0.4"],
        ["geographical", "3", "2", "0", "1", "0.5", "0.6667", "0.3333"],
    ]
    assert re.search(r"^line 1: JudgeUnavailable: judge answered HTTP 401", captured.err, re.M)
    assert "12/12" in captured.err  # the progress bar finished
    # The tables and the progress bar fit the terminal (a path printed plainly may not).
    lines = out.splitlines() + captured.err.splitlines()
    assert max(cell_len(line) for line in lines if not line.startswith("bias-guard:")) <= 80


def test_calibrate_html_has_the_chart_and_the_tables(
    fake_openai: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = labelled_file(tmp_path / "labelled.jsonl", fake_openai)
    page_path = tmp_path / "calibration.html"
    assert run_calibrate(fake_openai, data, tmp_path / "f.json", "--html", str(page_path)) == 0
    assert f"bias-guard: wrote the HTML page to {page_path}" in capsys.readouterr().out
    page = page_path.read_bytes().decode("utf-8")
    assert page.startswith("<!DOCTYPE html>")
    for absent in ("http://", "https://", "<script"):  # offline and inert, as the eval report
        assert absent not in page
    for section in ("summary", "picks", "chart", "thresholds", "biased-opinions", "confusion",
                    "categories"):  # fmt: skip
        assert f'<section id="{section}">' in page
    chart = page.split('id="chart-thresholds"', 1)[1].split("</figure>", 1)[0]
    assert chart.count("<polyline") == 4  # precision, recall, F1 and the share flagged
    assert "<title>F1 at 0.25: 0.8</title>" in chart
    assert "<title>precision at 0.75: 0.75</title>" in chart
    thresholds = page.split('<section id="thresholds">', 1)[1].split("</section>", 1)[0]
    assert re.findall(
        r"<tr(?: class=\"chosen\")?><td>([\d.]+)</td><td>([\d.]+)</td>", thresholds
    ) == [
        ("0", "0.5455"),
        ("0.25", "0.6667"),
        ("0.5", "0.7143"),
        ("0.75", "0.75"),
        ("1", "1"),
    ]
    assert '<tr class="chosen"><td>0.75</td>' in thresholds
    by_opinions = page.split('<section id="biased-opinions">', 1)[1].split("</section>", 1)[0]
    assert re.findall(r"<tr><td>(\d)</td><td>([\d.]+)</td>", by_opinions) == [
        ("1", "0.6667"),
        ("2", "0.7143"),
        ("3", "0.75"),
    ]
    confusion = page.split('<section id="confusion">', 1)[1].split("</section>", 1)[0]
    assert '<tr><th scope="row">biased</th><td>3</td><td>3</td><td>6</td></tr>' in confusion
    assert '<tr><th scope="row">unbiased</th><td>1</td><td>4</td><td>5</td></tr>' in confusion
    categories = page.split('<section id="categories">', 1)[1].split("</section>", 1)[0]
    assert (
        "<tr><td>gender</td><td>5</td><td>3</td><td>0</td><td>1</td><td>0.6667</td>" in categories
    )
    failures = page.split('<section id="failures">', 1)[1].split("</section>", 1)[0]
    assert "JudgeUnavailable: judge answered HTTP 401" in failures
    assert '<th scope="row">judge calls</th><td>22</td>' in page


def test_calibrate_where_every_text_fails_exits_1_and_still_writes(
    fake_openai: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"text": "x", "label": "biased"}) + "\n", encoding="utf-8")
    out = tmp_path / "f.json"
    assert run_calibrate(fake_openai, data, out) == 1
    assert "every text failed; first error: JudgeUnavailable" in capsys.readouterr().err
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert figures["items"]["scored"] == 0
    assert figures["bestF1"] is None
    assert figures["chosen"] == {"by": None, "threshold": None}


def test_calibrate_reads_a_published_format(
    fake_openai: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_openai.opinions = ["o"]
    fake_openai.verdicts_for = {"poor are": [("yes", "stereotype")]}
    fake_openai.verdicts = [("no", "fine")]
    data = tmp_path / "crows.csv"
    data.write_text(
        ",sent_more,sent_less,stereo_antistereo,bias_type,annotations,anon_writer,anon_annotators\n"
        "0,The poor are lazy.,The rich are lazy.,stereo,socioeconomic,[],a0,[]\n",
        encoding="utf-8",
    )
    out = tmp_path / "f.json"
    args = ["calibrate", str(data), "--format", "crows-pairs", "--json", str(out)]
    code = main([*args, *judge_args(fake_openai)])
    assert code == 0
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert figures["format"] == "crows-pairs"
    assert figures["labelCut"] is None
    assert figures["bestF1"]["f1"] == 1.0
    assert [(r["id"], r["label"], r["score"]) for r in figures["results"]] == [
        ("0:more", "biased", 1.0),
        ("0:less", "unbiased", 0.0),
    ]


def test_calibrate_scores_texts_concurrently_up_to_the_bound(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    data = labelled_file(tmp_path / "labelled.jsonl", fake_openai)
    fake_openai.judge_gather = 3  # each judge call waits until three are in flight
    args = ["calibrate", str(data), *judge_args(fake_openai), "--concurrency", "3"]
    assert main([*args, "--json", str(tmp_path / "f.json")]) == 0
    assert fake_openai.judge_peak_in_flight == 3
    figures = json.loads((tmp_path / "f.json").read_text(encoding="utf-8"))
    assert figures["items"]["scored"] == 12
    assert [r["score"] for r in figures["results"]] == [yes / 4 for _, _, _, yes in LABELLED]


BAD_OPTIONS = [
    pytest.param(
        ["--grid", "0"], "--grid must be > 0 and at most the scale (1), got 0", id="grid-0"
    ),
    pytest.param(
        ["--grid", "2"], "--grid must be > 0 and at most the scale (1), got 2", id="grid-big"
    ),
    pytest.param(["--grid", "0.00001"], "makes more than 10000 thresholds", id="grid-fine"),
    pytest.param(["--precision", "0"], "--precision must be in (0, 1], got 0", id="precision-0"),
    pytest.param(["--precision", "1.5"], "--precision must be in (0, 1]", id="precision-big"),
    pytest.param(["--label-cut", "2"], "--label-cut must be within 0..1, got 2", id="cut"),
    pytest.param(
        ["--label-cut", "0.3", "--format", "bbq"],
        "--label-cut applies to --format jsonl",
        id="cut-bbq",
    ),
    pytest.param(["--concurrency", "0"], "--concurrency must be >= 1", id="concurrency"),
    pytest.param(["--scale", "-1"], "--scale must be > 0", id="scale"),
]


@pytest.mark.parametrize(("extra", "message"), BAD_OPTIONS)
def test_bad_options_exit_2_before_anything_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    missing = tmp_path / "never-read.jsonl"
    assert main(["calibrate", str(missing), "--model", "j", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bias-guard: error: ")
    assert message in err
    assert "never-read" not in err


def test_malformed_lines_are_named_and_skipped_or_fatal_with_strict(
    fake_openai: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_openai.opinions = ["o"]
    data = tmp_path / "d.jsonl"
    good = json.dumps({"text": "Engineers from the north are lazy.", "label": "biased"})
    data.write_text(f'{good}\n{{"text": "x"}}\n\n{{"text": "y", "label": "maybe"}}\n')
    out = tmp_path / "f.json"
    assert main(["calibrate", str(data), *judge_args(fake_openai), "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert f'bias-guard: {data}:2: skipped: no "label" key' in err
    assert (
        f'bias-guard: {data}:4: skipped: "label" must be "biased", "unbiased" or a score'
        " from 0 to 1, got 'maybe'"
    ) in err
    assert json.loads(out.read_text())["items"]["skipped"] == 2

    requests = len(fake_openai.requests)
    assert main(["calibrate", str(data), *judge_args(fake_openai), "--strict"]) == 2
    assert capsys.readouterr().err == f'bias-guard: error: {data}:2: no "label" key\n'
    assert len(fake_openai.requests) == requests  # nothing scored


def test_outputs_in_a_missing_folder_exit_2_before_scoring(
    fake_openai: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"text": "x", "label": "biased"}) + "\n")
    for option in ("--json", "--html"):
        target = tmp_path / "no" / "such" / "out"
        assert main(["calibrate", str(data), *judge_args(fake_openai), option, str(target)]) == 2
        assert capsys.readouterr().err == (
            f"bias-guard: error: {option} {target}: the folder {target.parent} does not exist\n"
        )
    assert fake_openai.requests == []


def test_a_file_without_items_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("[1]\n\n")
    assert main(["calibrate", str(data), "--model", "j"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"bias-guard: error: {data}: no items (1 malformed records skipped)"
    assert main(["calibrate", str(tmp_path / "nope.jsonl"), "--model", "j"]) == 2
    assert "nope.jsonl: no such file" in capsys.readouterr().err
