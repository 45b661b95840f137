"""What a benchmark report says about the code and the machine it measured."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
from pathlib import Path

from bench.harness.paths import ROOT

__all__ = ["cpu_model", "load_average", "machine_line", "source_note"]


def source_note() -> str:
    """The commit, and the gateway files that differ from it (read-only git)."""

    def git(*args: str) -> str:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10, check=False
            )
            return done.stdout.strip()
        return ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = [
        line[3:]
        for line in git("status", "--porcelain").splitlines()
        if line[3:].startswith(("gateway/", "guard/"))
    ]
    return commit + (f" plus uncommitted {', '.join(changed)}" if changed else "")


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def machine_line() -> str:
    """The machine a report measured on: cores, CPU, memory, system and Python."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 30
    return (
        f"{os.cpu_count()} cores ({cpu_model()}), {memory} GiB,"
        f" {platform.system()} {platform.release()}; Python {platform.python_version()}"
    )


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages, to two places."""
    return [round(value, 2) for value in os.getloadavg()]
