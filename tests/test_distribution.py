"""The distribution: `python -m build` makes an sdist and a wheel (built from the sdist)
that hold every file the two packages read at run time, with one version, and the
wheel, installed into a fresh virtual environment outside the checkout, runs.

The install test is marked `wheel` (`pytest -m wheel` runs it alone, `-m "not wheel"`
leaves it out). It is the one test whose setup reaches beyond loopback: uv installs the
pinned dependencies (requirements/lock.txt, as the image does) from PyPI through its
cache. What it then runs talks to 127.0.0.1 only.
"""

from __future__ import annotations

import itertools
import json
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.parser import HeaderParser
from importlib import metadata
from pathlib import Path

import pytest

import gateway
import guard
from testkit.fake_openai import FakeOpenAI
from tests.support.subprocess_gateway import start_demo

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gateway", "guard")
# What the code reads as files, named by the issue (#22): they must not be left out.
DATA = (
    "gateway/api/ui/templates/base.html",
    "gateway/api/ui/static/review.js",
    "gateway/observability/grafana/bias-gateway.json",
    "gateway/store/migrations.py",
    "gateway/demo/server.py",
    "gateway/demo/rules.py",
    "gateway/demo/apis.py",
    "gateway/py.typed",
    "guard/report/templates/report.html",
    "guard/report/templates/report.css",
    "guard/py.typed",
)


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """`python -m build` as the README says, offline: build and hatchling are in .venv."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return Dist(wheel, sdist)


def package_files() -> set[str]:
    """Every file of the two packages in the checkout that git does not ignore (as hatch
    picks them), as the wheel names them."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", *PACKAGES],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout.splitlines()
    return {name for name in listed if (ROOT / name).is_file()}


def wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_the_wheel_holds_every_file_of_both_packages_and_nothing_else(dist: Dist) -> None:
    files = wheel_files(dist.wheel)
    ours = {name for name in files if name.partition("/")[0] in PACKAGES}
    assert set(DATA) <= ours
    assert ours == package_files()
    others = {name.partition("/")[0] for name in files} - set(PACKAGES)
    assert others == {f"bias_gateway-{guard.__version__}.dist-info"}  # no tests, no config


def test_the_wheel_declares_both_commands(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as archive:
        entry_points = archive.read(
            f"bias_gateway-{guard.__version__}.dist-info/entry_points.txt"
        ).decode()
    assert "bias-gateway = gateway.cli:main" in entry_points
    assert "bias-guard = guard.cli:main" in entry_points


def test_the_sdist_holds_the_sources_the_wheel_is_built_from(dist: Dist) -> None:
    top = f"bias_gateway-{guard.__version__}"
    with tarfile.open(dist.sdist) as archive:
        names = {name.partition("/")[2] for name in archive.getnames()}
    assert {"pyproject.toml", "README.md", "PKG-INFO"} <= names
    assert package_files() <= names
    assert dist.sdist.name == f"{top}.tar.gz"


def test_the_version_has_one_source() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == "guard/__init__.py"
    assert gateway.__version__ is guard.__version__
    assert metadata.version("bias-gateway") == guard.__version__  # the installed .venv


def test_the_wheel_metadata_carries_that_version(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as archive:
        text = archive.read(f"bias_gateway-{guard.__version__}.dist-info/METADATA").decode()
    assert HeaderParser().parsestr(text)["Version"] == guard.__version__


# -- the wheel, installed -----------------------------------------------------------


@dataclass(frozen=True)
class Venv:
    root: Path
    cwd: Path  # a folder outside the checkout to run in
    env: dict[str, str]

    def bin(self, name: str) -> str:
        return str(self.root / "bin" / name)

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, capture_output=True, text=True, env=self.env, cwd=self.cwd, timeout=timeout
        )


def _install(wheel: Path, venv: Path) -> None:
    """The wheel and its pinned dependencies, as the image installs them; elsewhere than
    the lock's platform (Python 3.11, linux x86_64) the gateway extra, resolved."""
    uv = [sys.executable, "-m", "uv"]
    python = ["--python", str(venv / "bin" / "python")]
    subprocess.run([*uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    pinned = sys.version_info[:2] == (3, 11) and platform.machine() == "x86_64"
    if pinned and sys.platform == "linux":
        lock = str(ROOT / "requirements" / "lock.txt")
        steps = [
            ["--require-hashes", "--no-deps", "-r", lock],
            ["--no-deps", str(wheel)],
        ]
    else:
        steps = [[f"{wheel}[gateway]"]]
    for step in steps:
        done = subprocess.run(
            [*uv, "pip", "install", "--quiet", *python, *step],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def venv(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    root = tmp_path_factory.mktemp("venv")
    _install(dist.wheel, root)
    cwd = tmp_path_factory.mktemp("elsewhere")
    assert not cwd.is_relative_to(ROOT)
    # Nothing of the checkout on the path: no PYTHONPATH, no .venv, not the cwd.
    env = {
        "PATH": f"{root / 'bin'}:/usr/bin:/bin",
        "HOME": str(cwd),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    return Venv(root, cwd, env)


@pytest.mark.wheel
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_installed_packages_come_from_the_venv_not_the_checkout(venv: Venv) -> None:
    done = venv.run(
        venv.bin("python"),
        "-c",
        "import json, gateway, guard, gateway.demo.server; "
        "print(json.dumps([gateway.__file__, guard.__file__, gateway.__version__]))",
    )
    assert done.returncode == 0, done.stderr
    gateway_file, guard_file, version = json.loads(done.stdout)
    for file in (gateway_file, guard_file):
        assert Path(file).is_relative_to(venv.root), file
    assert version == guard.__version__


@pytest.mark.wheel
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_both_commands_print_the_one_version(venv: Venv) -> None:
    gateway_version = venv.run(venv.bin("bias-gateway"), "--version")
    guard_version = venv.run(venv.bin("bias-guard"), "--version")
    assert gateway_version.stdout == f"bias-gateway {guard.__version__}\n"
    assert guard_version.stdout == f"bias-guard {guard.__version__}\n"  # installed: no note


@pytest.mark.wheel
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_bias_guard_scores_with_the_fake_judge(venv: Venv, fake_openai: FakeOpenAI) -> None:
    done = venv.run(
        venv.bin("bias-guard"),
        "score",
        "--model",
        "judge",
        "--base-url",
        fake_openai.base_url,
        "--max-retries",
        "0",
        "Engineers from the north are lazy.",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["score"], result["reason"]) == (1, fake_openai.reason)
    assert [o["biased"] for o in result["opinions"]] == [True]


@pytest.fixture
def demo(venv: Venv) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """`bias-gateway demo` from the venv, once it has printed what to try."""
    process, _, printed = start_demo([venv.bin("bias-gateway")], venv.cwd, venv.env)
    try:
        yield process, [line.rstrip("\n") for line in printed]
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=15)


@pytest.mark.wheel
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_demo_passes_flags_and_blocks_as_its_printed_commands_promise(
    venv: Venv, demo: tuple[subprocess.Popen[str], list[str]]
) -> None:
    """Run the printed commands in a shell, as a new user pastes them."""
    curl = shutil.which("curl")
    assert curl, "the demo prints curl commands: install curl"
    process, printed = demo
    promised: list[tuple[str, str]] = []  # (the verdict a comment promises, its command)
    for comment, command in itertools.pairwise(printed):
        found = re.search(r"x-bias-verdict: (\w+)$", comment)
        if comment.startswith("# ") and found and command.startswith("curl "):
            promised.append((found.group(1), command))
    assert [verdict for verdict, _ in promised] == ["pass", "flag", "block"]
    env = {**venv.env, "PATH": f"{Path(curl).parent}:{venv.env['PATH']}"}
    run_id = ""
    for verdict, command in promised:
        done = subprocess.run(
            ["bash", "-c", command], capture_output=True, text=True, env=env, timeout=30
        )
        fields = (line.partition(":") for line in done.stdout.splitlines())
        headers = {name.strip().lower(): value.strip() for name, _, value in fields}
        assert headers.get("x-bias-verdict") == verdict, done.stdout + done.stderr
        run_id = headers["x-bias-run-id"]
    lookup = next(line for line in printed if line.startswith("curl -s ") and "RUN_ID" in line)
    done = subprocess.run(
        ["bash", "-c", lookup.replace("RUN_ID", run_id)],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert json.loads(done.stdout)["verdict"] == "block", done.stdout
    # The SDK line names the venv's Python, which has openai (litellm brings it).
    sdk = next(shlex.split(line) for line in printed if "from openai import OpenAI" in line)
    assert sdk[0] == venv.bin("python")
    ran = venv.run(*sdk)
    assert (ran.returncode, ran.stdout) == (0, "scored flag\n"), ran.stderr
    assert process.poll() is None


def test_the_uv_that_installs_the_wheel_is_the_one_scripts_lock_pins() -> None:
    pins = re.findall(r'"uv==([\d.]+)"', (ROOT / "scripts" / "lock").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    dev = project["project"]["optional-dependencies"]["dev"]
    assert pins == [r.removeprefix("uv==") for r in dev if r.startswith("uv==")]
