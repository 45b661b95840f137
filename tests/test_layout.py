"""The house stays readable: no module of the two packages grows past 400 lines (STYLE).

The package layers themselves are import-linter's contract (`scripts/check`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(
    path for package in ("gateway", "guard") for path in (ROOT / package).rglob("*.py")
)
MOST_LINES = 400


def test_the_packages_are_found() -> None:
    assert len(MODULES) > 50


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_module_is_over_400_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MOST_LINES, f"{path.relative_to(ROOT)} has {lines} lines: split it"
