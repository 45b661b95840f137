"""The repository's scripts: `scripts/bootstrap` installs once, then only when asked to."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tree(tmp_path: Path) -> Path:
    """A copy of the script beside a pyproject, with a `.venv/bin/python` that logs its calls."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "bootstrap", tmp_path / "scripts" / "bootstrap")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "calls.log"}\n')
    python.chmod(0o755)
    return tmp_path


def _bootstrap(tree: Path, **env: str) -> list[str]:
    log = tree / "calls.log"
    log.unlink(missing_ok=True)
    subprocess.run(
        ["bash", "scripts/bootstrap"], cwd=tree, check=True, env={"PATH": "/usr/bin:/bin", **env}
    )
    return log.read_text().splitlines() if log.exists() else []


def test_bootstrap_installs_once_until_the_project_changes(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    first = _bootstrap(tree)
    assert first == ["-m pip install --quiet --upgrade pip", "-m pip install --quiet -e .[dev]"]
    assert _bootstrap(tree) == []  # nothing changed: no pip at all
    (tree / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    assert _bootstrap(tree) == first
    assert _bootstrap(tree, BOOTSTRAP_FORCE="1") == first
