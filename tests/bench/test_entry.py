"""`python -m bench <scenario>`: the list, the errors, and arguments passed through."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from bench.__main__ import FAKES, SCENARIOS, summary

ROOT = Path(__file__).resolve().parents[2]


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def modules_with_main() -> set[str]:
    """Every bench module that defines a `main`, as a dotted name."""
    found = set()
    for path in (ROOT / "bench").rglob("*.py"):
        if re.search(r"^def main\(", path.read_text(encoding="utf-8"), re.MULTILINE):
            found.add(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return found - {"bench.__main__"}


def test_every_module_with_a_main_is_a_scenario_or_a_fake() -> None:
    assert set(SCENARIOS.values()) | set(FAKES) == modules_with_main()


def test_help_lists_every_scenario_with_its_docstring_line() -> None:
    done = bench("--help")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for name, module in SCENARIOS.items():
        line = summary(module)
        assert line, f"{module} has no docstring line to list"
        assert any(entry.split() == [name, *line.split()] for entry in lines), name


def test_no_scenario_lists_them_and_fails() -> None:
    done = bench()
    assert done.returncode == 2
    assert "name a scenario" in done.stderr
    assert all(f"  {name} " in done.stderr for name in SCENARIOS)


def test_an_unknown_scenario_is_a_usage_error() -> None:
    done = bench("nosuch", "--help")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "no scenario 'nosuch'" in done.stderr
    assert "python -m bench --help" in done.stderr


def test_the_arguments_after_the_name_go_to_the_scenario() -> None:
    done = bench("stream_texts", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m bench stream_texts")
    assert summary(SCENARIOS["stream_texts"]) in " ".join(done.stdout.split())

    refused = bench("store_commit", "--linger", "5")
    assert refused.returncode == 2
    assert "unrecognized arguments: --linger 5" in refused.stderr

    wrong = bench("prejudge", "--requests", "many")
    assert wrong.returncode == 2
    assert "argument --requests: invalid int value: 'many'" in wrong.stderr


def test_the_readme_table_names_every_scenario() -> None:
    readme = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `(\w+)` \|", readme, re.MULTILINE)
    assert listed == list(SCENARIOS)
