"""The house stays readable: no module of the two packages or of the bench grows past
400 lines (STYLE), and the tests share helpers through `tests/support/` alone: no file
under tests/ imports from a conftest (pytest finds fixtures there by itself) or from a
test module.

The package layers themselves are import-linter's contract (`scripts/check`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(
    path for package in ("gateway", "guard", "bench") for path in (ROOT / package).rglob("*.py")
)
MOST_LINES = 400


def test_the_packages_are_found() -> None:
    assert len(MODULES) > 50


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_module_is_over_400_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MOST_LINES, f"{path.relative_to(ROOT)} has {lines} lines: split it"


TEST_FILES = sorted((ROOT / "tests").rglob("*.py"))


def reached_into(source: str) -> list[str]:
    """The modules `source` imports that are a conftest or a test module of the suite."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if _a_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if _a_test_module(module):
                found.append(module)
                continue
            within = module if module.endswith(".") else f"{module}."
            found += [within + a.name for a in node.names if _a_test_module(within + a.name)]
    return found


def _a_test_module(name: str) -> bool:
    """Whether `name` (absolute, or relative: a module of the suite) is a conftest or a
    test module of the suite."""
    parts = name.lstrip(".").split(".")
    ours = name.startswith(".") or parts[0] == "tests"
    return ours and any(part == "conftest" or part.startswith("test_") for part in parts)


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from tests.gateway.conftest import policy", ["tests.gateway.conftest"]),
        ("from tests.proxy.test_surfaces import Api", ["tests.proxy.test_surfaces"]),
        ("import tests.guard.test_report", ["tests.guard.test_report"]),
        ("from tests.guard import test_report", ["tests.guard.test_report"]),
        ("from .test_queue import send", [".test_queue"]),
        ("from . import conftest", [".conftest"]),
        ("from tests.support.gateways import policy", []),
        ("from gateway.store import ScoreRecord\nimport pytest", []),
    ],
)
def test_the_import_rule_tells_a_reach_into_a_test_module(source: str, found: list[str]) -> None:
    assert reached_into(source) == found


def test_the_test_files_are_found() -> None:
    assert len(TEST_FILES) > 100


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda path: str(path.relative_to(ROOT)))
def test_tests_share_helpers_through_tests_support_alone(path: Path) -> None:
    reached = reached_into(path.read_text(encoding="utf-8"))
    assert not reached, (
        f"{path.relative_to(ROOT)} imports {reached}: move the helper to tests/support/"
    )


def test_no_module_imports_itself_back_through_others() -> None:
    """No import cycle between our modules, imports made only for type checking included:
    graphlib's topological sort of the import graph names one if there is."""
    import graphlib

    import grimp

    graph = grimp.build_graph("gateway", "guard", "bench", "testkit")
    imports = {
        module: graph.find_modules_directly_imported_by(module) & graph.modules
        for module in graph.modules
    }
    try:
        graphlib.TopologicalSorter(imports).prepare()
    except graphlib.CycleError as exc:
        pytest.fail(f"an import cycle: {' -> '.join(exc.args[1])}")
