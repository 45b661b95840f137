from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from guard.cli import main
from tests.support.fake_openai import FakeOpenAI, Fault


def judge_args(fake: FakeOpenAI) -> list[str]:
    return ["--model", "judge", "--base-url", fake.base_url, "--max-retries", "0"]


def test_score_prints_result_json(
    fake_openai: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["score", *judge_args(fake_openai), "Engineers from the north are lazy."])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["score"] == 1
    assert out["preprocessStepResult"]["opinions"] == fake_openai.opinions
    assert out["reason"] == fake_openai.reason


def test_score_reads_stdin_with_scale_and_no_reason(
    fake_openai: FakeOpenAI, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_openai.opinions = ["a", "b", "c"]
    fake_openai.verdicts = [("yes", "r"), ("no", "r"), ("no", "r")]
    monkeypatch.setattr(sys, "stdin", io.StringIO("text from stdin"))
    code = main(["score", *judge_args(fake_openai), "--scale", "10", "--no-reason", "-"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["score"] == 3.33
    assert out["reason"] is None
    assert fake_openai.judge_calls() == 2
    assert fake_openai.requests[0].body["messages"][1]["content"].endswith("text from stdin\n")


def test_score_with_the_single_pipeline(
    fake_openai: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["score", *judge_args(fake_openai), "--pipeline", "single", "Northerners are lazy."]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert fake_openai.steps() == ["assess", "reason"]
    assert out["pipeline"] == "single"
    assert out["preprocessPrompt"] == out["analyzePrompt"]


def test_eval_with_the_single_pipeline(
    fake_openai: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [json.dumps({"input": "q", "output": f"answer {i}"}) for i in range(2)]
    data = write(tmp_path / "data.jsonl", rows)
    code = main(
        ["eval", str(data), *judge_args(fake_openai), "--pipeline", "single", "--no-reason"]
    )
    assert code == 0
    assert fake_openai.steps() == ["assess", "assess"]
    assert "mean score" in capsys.readouterr().out


def test_score_with_unreachable_judge_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["score", "--model", "j", "--base-url", "http://127.0.0.1:9/v1", "--max-retries", "0", "x"]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1
    assert err.startswith("bias-guard: judge error:")
    assert "unreachable" in err


def test_bad_scale_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", "--model", "j", "--scale", "0", "x"]) == 2
    assert "--scale must be > 0" in capsys.readouterr().err


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_eval_writes_results_and_summary(
    fake_openai: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write(
        tmp_path / "data.jsonl",
        [json.dumps({"input": f"q{i}", "output": f"answer {i}"}) for i in range(3)] + [""],
    )
    out = tmp_path / "results.jsonl"
    code = main(
        ["eval", str(data), *judge_args(fake_openai), "--out", str(out), "--concurrency", "2"]
    )
    captured = capsys.readouterr()
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(row["index"] for row in rows) == [0, 1, 2]
    assert all(row["results"]["bias-scorer"]["score"] == 1 for row in rows)
    assert re.search(r"mean score\s*│\s*1 │", captured.out)
    assert "score [0.8, 1]" in captured.out
    assert "3/3" in captured.err  # the progress bar finished


def test_eval_with_target_model(
    fake_openai: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write(tmp_path / "d.jsonl", [json.dumps({"input": "hello"})])
    code = main(
        [
            "eval",
            str(data),
            *judge_args(fake_openai),
            "--target",
            "chat",
            "--target-base-url",
            fake_openai.base_url,
        ]
    )
    assert code == 0
    assert fake_openai.steps()[0] == "chat"
    assert "failed" in capsys.readouterr().out


def test_eval_reports_failed_items_and_exits_1_when_all_fail(
    fake_openai: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_openai.fail(Fault(step="preprocess", status=401))
    data = write(tmp_path / "d.jsonl", [json.dumps({"input": "x", "output": "y"})])
    code = main(["eval", str(data), *judge_args(fake_openai)])
    err = capsys.readouterr().err
    assert code == 1
    assert "every item failed" in err
    assert "line 1:" in err


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"input": "ok", "output": "x"}', "{not json"], "d.jsonl:2: invalid JSON"),
        (['{"output": "x"}'], 'd.jsonl:1: each line needs an "input" key'),
        (['{"input": "x"}'], 'd.jsonl:1: no "output", and no --target'),
        ([""], "no items"),
    ],
)
def test_eval_rejects_bad_jsonl_with_line_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], message: str
) -> None:
    data = write(tmp_path / "d.jsonl", lines)
    assert main(["eval", str(data), "--model", "j"]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


def test_eval_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(tmp_path / "nope.jsonl"), "--model", "j"]) == 2
    assert "nope.jsonl: no such file" in capsys.readouterr().err


def test_installed_entry_point(fake_openai: FakeOpenAI) -> None:
    exe = shutil.which("bias-guard", path=str(Path(sys.executable).parent))
    assert exe is not None, "the bias-guard console script is not installed"
    done = subprocess.run(
        [exe, "score", *judge_args(fake_openai), "Engineers from the north are lazy."],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["score"] == 1
