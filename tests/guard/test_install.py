"""guard's install needs only what guard uses, and importing guard loads nothing of the gateway.

pyproject.toml's [project].dependencies are the library's (and `bias-guard`'s);
the gateway's are the `gateway` extra. Both are read from pyproject.toml and
checked against what guard imports (by reading its source) and what `import
guard` loads (in a fresh interpreter).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from functools import cache
from importlib import metadata, util
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
GUARD = ROOT / "guard"


def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project


def _names(requirements: Iterable[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def base() -> set[str]:
    return _names(_project()["dependencies"])  # type: ignore[arg-type]


def extra(name: str) -> set[str]:
    extras: dict[str, list[str]] = _project()["optional-dependencies"]  # type: ignore[assignment]
    return _names(extras[name])


def closure(names: Iterable[str]) -> set[str]:
    """These distributions and everything they require (their own extras left out)."""
    found: set[str] = set()
    todo = list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in found:
            continue
        found.add(name)
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found


@cache
def owners() -> dict[str, str]:
    """Each installed file (normalised path) -> its distribution's canonical name."""
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"])
        for file in dist.files or []:
            found[os.path.normpath(str(dist.locate_file(file)))] = name
    return found


def owner(module: str) -> str:
    spec = util.find_spec(module)
    assert spec is not None, f"guard imports {module}: not installed"
    assert spec.origin is not None, module
    return owners()[os.path.normpath(spec.origin)]


def third_party_imports() -> dict[str, bool]:
    """Every module outside the standard library that guard imports -> at module level?"""
    found: dict[str, bool] = {}
    for path in GUARD.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top_level = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
                if _namespace(node.module):  # `from opentelemetry import trace`
                    modules = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for module in modules:
                root = module.partition(".")[0]
                if root == "guard" or root in sys.stdlib_module_names:
                    continue
                found[module] = found.get(module, False) or id(node) in top_level
    return found


def _namespace(module: str) -> bool:
    spec = util.find_spec(module)
    return spec is not None and spec.origin is None


def test_the_base_install_is_exactly_what_guard_imports() -> None:
    imports = third_party_imports()
    assert {"httpx", "pydantic", "opentelemetry.trace", "jinja2", "rich.table"} <= set(imports)
    needed = {owner(module) for module, eager in imports.items() if eager}
    assert needed == base(), "[project].dependencies should be what guard imports, no more"


def test_litellm_is_an_extra_imported_only_when_a_litellm_judge_calls() -> None:
    imports = third_party_imports()
    lazy = {owner(module) for module, eager in imports.items() if not eager} - base()
    assert lazy == extra("litellm") == {"litellm"}
    assert "litellm" not in base()
    assert extra("litellm") <= extra("gateway")  # the gateway routes provider/model upstreams


# Imports guard's public modules and prints {module: the distribution its file belongs
# to}. With distribution names in argv, their modules cannot be imported, as if only
# the base install were there.
_IMPORT_GUARD = """
import importlib.machinery, json, os, re, sys
from importlib import metadata

owners = {}
for dist in metadata.distributions():
    name = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
    for file in dist.files or []:
        owners[os.path.normpath(str(dist.locate_file(file)))] = name
refused = set(sys.argv[1:])

class Refuse:
    def find_spec(self, name, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and owners.get(os.path.normpath(spec.origin or "")) in refused:
            raise ModuleNotFoundError(f"No module named {name!r} (refused)", name=name)
        return None

sys.meta_path.insert(0, Refuse())
import guard, guard.cli, guard.report, guard.report.charts, guard.testing
files = {n: getattr(m, "__file__", None) for n, m in list(sys.modules.items())}
print(json.dumps({n: owners.get(os.path.normpath(f)) for n, f in files.items() if f}))
if refused:
    try:
        import starlette
        print("starlette imported", file=sys.stderr)
    except ModuleNotFoundError:
        pass
"""


def import_guard(*refused: str) -> tuple[dict[str, str | None], str]:
    """The modules loaded (and their distributions), and what the interpreter said."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_GUARD, *refused],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, str | None] = json.loads(done.stdout)
    return loaded, done.stderr


def distributions(loaded: dict[str, str | None]) -> set[str]:
    return {name for name in loaded.values() if name is not None}


def test_importing_guard_loads_nothing_of_the_gateway_extra() -> None:
    loaded, _ = import_guard()
    by = distributions(loaded)
    assert {"pydantic", "httpx", "jinja2"} <= by  # the check does see third-party modules
    assert {"starlette", "uvicorn", "aiohttp", "asyncpg"} <= extra("gateway")
    assert not by & extra("gateway"), f"import guard loaded {sorted(by & extra('gateway'))}"
    assert not [name for name in loaded if name == "gateway" or name.startswith("gateway.")]


def test_guard_imports_without_anything_the_gateway_extra_brings() -> None:
    gateway_only = closure(extra("gateway")) - closure(base())
    assert {"starlette", "uvicorn", "aiohttp", "asyncpg", "litellm", "yarl"} <= gateway_only
    loaded, stderr = import_guard(*sorted(gateway_only))
    by = distributions(loaded)
    assert not by & gateway_only, f"import guard loaded {sorted(by & gateway_only)}"
    assert "starlette imported" not in stderr  # the refusal works


def test_a_litellm_judge_without_litellm_says_what_to_install() -> None:
    code = (
        "import asyncio, sys\n"
        "sys.modules['litellm'] = None  # as if it were not installed\n"
        "from guard import JudgeUnavailable, LiteLLMJudge\n"
        "judge = LiteLLMJudge('anthropic/claude-x', max_retries=0)\n"
        "try:\n"
        "    asyncio.run(judge.complete([{'role': 'user', 'content': 'hi'}]))\n"
        "except JudgeUnavailable as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == (
        "judge anthropic/claude-x needs litellm, which is not installed: "
        "pip install 'bias-gateway[litellm]'"
    )


def test_the_gateway_on_a_base_install_says_which_extra_it_needs() -> None:
    code = (
        "import sys\n"
        "sys.modules['starlette'] = None  # as if the gateway extra were not installed\n"
        "import gateway\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    assert "the gateway needs its extra: pip install 'bias-gateway[gateway]'" in done.stderr
