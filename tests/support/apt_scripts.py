"""Running the scripts that install a test resource from Debian's packages
(scripts/postgres, scripts/promtool) with nothing on PATH but what they use, and
stubs of `id` and `apt-get`, so that every branch runs without root or a network."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["run_script", "stub_tools"]

ROOT = Path(__file__).resolve().parents[2]


def stub_tools(tools: Path, uses: Iterable[str], *, root: bool, apt: str, log: Path) -> None:
    """Fill `tools`, the script's whole PATH: links to the real `uses`, a stub `id`
    (root or not) and, when `apt` is given, a stub `apt-get` running that shell code
    with its arguments logged to `log`."""
    tools.mkdir(exist_ok=True)
    for name in uses:
        found = shutil.which(name)
        assert found, name
        if not (tools / name).exists():  # a second run in the same folder
            (tools / name).symlink_to(found)
    stubs = {"id": f"echo {0 if root else 1000}"}
    if apt:
        stubs["apt-get"] = f'echo "$* [$DEBIAN_FRONTEND]" >> {log}\n{apt}'
    for name, body in stubs.items():
        (tools / name).write_text(f"#!/bin/sh\n{body}\n")
        (tools / name).chmod(0o755)


def run_script(
    script: str, *args: str, tools: Path, tmp_path: Path, env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """scripts/`script` `args` under bash, with `tools` as its PATH."""
    bash = shutil.which("bash")
    assert bash
    return subprocess.run(
        [bash, str(ROOT / "scripts" / script), *args],
        env={"PATH": str(tools), "TMPDIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        check=False,
    )
