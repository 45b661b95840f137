"""scripts/promtool and the `promtool` fixture: found, installed from Debian's package
when root with apt-get, else skipped with a reason, or failed where the run requires it."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.support import resources
from tests.support.apt_scripts import run_script, stub_tools
from tests.support.promtool import promtool_path

ROOT = Path(__file__).resolve().parents[1]


def _script(
    tmp_path: Path,
    *args: str,
    root: bool = False,
    apt: str = "",
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run scripts/promtool with nothing on PATH but the tools it uses, and stubs of
    `id` (root or not) and, when `apt` is given, `apt-get` (that shell code, args logged)."""
    tools = tmp_path / "tools"
    stub_tools(tools, ("readlink", "tail", "mktemp"), root=root, apt=apt, log=tmp_path / "apt.log")
    return run_script(
        "promtool", *(args or ("path",)), tools=tools, tmp_path=tmp_path, env=env or {}
    )


def test_the_script_installs_promtool_when_root_with_apt(tmp_path: Path) -> None:
    made = tmp_path / "tools" / "promtool"
    chmod = shutil.which("chmod")
    installs = f'case "$1" in install) echo "#!/bin/sh" > {made} && {chmod} +x {made};; esac'
    done = _script(tmp_path, root=True, apt=installs)
    assert (done.returncode, done.stdout.strip()) == (0, str(made))
    assert "installing promtool from Debian's prometheus package" in done.stderr
    assert (tmp_path / "apt.log").read_text().splitlines() == [
        "update -qq []",
        "install -y -qq --no-install-recommends prometheus [noninteractive]",
    ]
    again = _script(tmp_path)  # found now: nothing installed
    assert (again.returncode, again.stdout.strip(), again.stderr) == (0, str(made), "")
    assert len((tmp_path / "apt.log").read_text().splitlines()) == 2


def test_a_failed_install_is_an_error(tmp_path: Path) -> None:
    done = _script(tmp_path, root=True, apt='echo "E: Unable to locate package"; exit 100')
    assert done.returncode == 1
    assert "apt-get install prometheus failed" in done.stderr
    assert "E: Unable to locate package" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("how", ["not root", "no apt-get", "BIAS_TEST_PROMTOOL_INSTALL=0"])
def test_the_script_gives_the_skip_reason_when_it_cannot_install(tmp_path: Path, how: str) -> None:
    env = {"BIAS_TEST_PROMTOOL_INSTALL": "0"} if how.startswith("BIAS") else {}
    apt = "" if how == "no apt-get" else "exit 100"
    done = _script(tmp_path, root=how != "not root", apt=apt, env=env)
    assert done.returncode == 3
    assert "promtool not found" in done.stdout
    assert "will be skipped" in done.stderr
    assert not (tmp_path / "apt.log").exists()


@pytest.mark.parametrize("env", [{"CI": "true"}, {"BIAS_TEST_PROMTOOL_REQUIRED": "1"}])
def test_the_script_fails_where_promtool_is_required(tmp_path: Path, env: dict[str, str]) -> None:
    done = _script(tmp_path, env=env)
    assert done.returncode == 1
    assert "error" in done.stderr
    assert done.stdout == ""


def test_the_script_shows_its_usage(tmp_path: Path) -> None:
    done = _script(tmp_path, "where")
    assert done.returncode == 2
    assert "usage: scripts/promtool path" in done.stderr


def test_the_fixture_finds_promtool_on_path_or_as_told(tmp_path: Path) -> None:
    (tmp_path / "promtool").write_text("#!/bin/sh\n")
    (tmp_path / "promtool").chmod(0o755)
    assert promtool_path({"PATH": str(tmp_path)}) == str(tmp_path / "promtool")
    assert promtool_path({"PATH": "", "BIAS_TEST_PROMTOOL": "/opt/promtool"}) == "/opt/promtool"


def test_a_missing_promtool_skips_unless_the_run_requires_it(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "BIAS_TEST_PROMTOOL_SKIP": "no promtool here"}
    saved = set(resources._required)
    try:
        resources._required.clear()
        with pytest.raises(pytest.skip.Exception, match="no promtool here"):
            promtool_path(env)
        resources._required.add("promtool")
        with pytest.raises(pytest.fail.Exception, match=r"no promtool here .*--require promtool"):
            promtool_path(env)
    finally:
        resources._required.clear()
        resources._required.update(saved)
