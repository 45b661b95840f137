"""Prometheus's `promtool`, from Debian's `prometheus` package, for the alert rules' tests.

`scripts/test` finds (or installs) it with `scripts/promtool path` and exports its path as
`BIAS_TEST_PROMTOOL`; without it the tests that take the `promtool` fixture (marked
`promtool`) skip, or fail where the run requires it (`pytest --require promtool`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

import pytest

from tests.support.resources import missing

__all__ = ["promtool", "promtool_path"]


def promtool_path(env: Mapping[str, str] = os.environ) -> str:
    """promtool's path, from `BIAS_TEST_PROMTOOL` or the PATH in `env`; else skip (or
    fail, under `--require promtool`) with `BIAS_TEST_PROMTOOL_SKIP`'s reason."""
    found = env.get("BIAS_TEST_PROMTOOL") or shutil.which("promtool", path=env.get("PATH"))
    if found:
        return found
    return missing(
        "promtool",
        env.get("BIAS_TEST_PROMTOOL_SKIP")
        or "promtool not found (scripts/test installs Debian's prometheus package when it can)",
    )


@pytest.fixture
def promtool() -> str:
    """promtool's path (`promtool_path`)."""
    return promtool_path()
