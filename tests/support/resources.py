"""Tests that need something outside Python carry its marker: `postgres` (a server from
Debian's packages), `browser` (headless Chromium and chromedriver), `mounts` (root and
mount(8), for small real filesystems), `compose` (docker-compose), `promtool` (from
Debian's prometheus package) and `real_model` (llama.cpp with a small model; left out
of the gate unless `-m real_model` asks).

Without the thing they need, marked tests skip and say why; `pytest --require
postgres,browser` makes them fail instead, as `.ci/run` does for what CI must run.
Tests that take a resource's fixture (`pg_cluster`, `chromium`, ...) are marked for
it here, so `-m "not postgres"` leaves them out too.
"""

from __future__ import annotations

from typing import NoReturn

import pytest

__all__ = ["ENGINES", "RESOURCES", "missing", "required"]

RESOURCES = ("postgres", "browser", "mounts", "compose", "promtool", "real_model")

# Fixtures that need a resource: a test taking one (directly or through another) is
# marked for it.
_FIXTURES = {
    "pg_cluster": "postgres",
    "own_pg_cluster": "postgres",
    "chromium": "browser",
    "full_disk_store": "mounts",
    "promtool": "promtool",
}

# The store's engines, for a fixture's params: the PostgreSQL one marked as needing it.
ENGINES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]

_required: set[str] = set()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--require",
        default="",
        metavar="MARKERS",
        help=(
            "comma-separated resources whose tests fail instead of skipping when the"
            f" resource is missing: {', '.join(RESOURCES)}"
        ),
    )


def pytest_configure(config: pytest.Config) -> None:
    asked = {name.strip() for name in str(config.getoption("require")).split(",") if name.strip()}
    unknown = sorted(asked - set(RESOURCES))
    if unknown:
        raise pytest.UsageError(
            f"--require: unknown {', '.join(unknown)} (known: {', '.join(RESOURCES)})"
        )
    _required.clear()
    _required.update(asked)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            resource = _FIXTURES.get(fixture)
            if resource is not None and item.get_closest_marker(resource) is None:
                item.add_marker(resource)


def required(resource: str) -> bool:
    """Whether this run was told to fail, not skip, where `resource` is missing."""
    return resource in _required


def missing(resource: str, reason: str) -> NoReturn:
    """Skip for want of `resource`, or fail where the run requires it."""
    if required(resource):
        pytest.fail(f"{reason} (this run has --require {resource})", pytrace=False)
    pytest.skip(reason)
