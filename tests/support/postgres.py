"""A throwaway PostgreSQL cluster for the test session, and a fresh database per test.

Registered as a plugin by tests/conftest.py. The fixtures:

    pg_cluster   (session)   PgCluster: one cluster for the whole session, started on
                             first use, stopped and removed at the session's end
    make_pg_url  (function)  Callable[[], str]: each call creates a fresh database and
                             returns its URL; all are dropped after the test
    pg_url       (function)  str: the URL of one fresh database, dropped after the test

The server binaries come from BIAS_TEST_PG_BIN (scripts/test sets it, through
scripts/postgres, which installs Debian's `postgresql` package when it is missing),
else /usr/lib/postgresql/*/bin (newest first), else `initdb` on PATH. Without them the
PostgreSQL tests (marked `postgres`) skip, with the reason; where the run requires
the server (`pytest --require postgres`, as .ci/run has it) they fail instead.

The cluster itself (`PgCluster`, `start_cluster`: how it is made, who runs it, what it
listens on) is `testkit/postgres.py`, which the benches use too.
"""

from __future__ import annotations

import atexit
import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from typing import NoReturn

import pytest

from testkit.postgres import SEARCH, TOOLS, PgCluster, find_bin_dir, start_cluster
from tests.support.resources import missing

__all__ = ["databases", "unavailable"]


def unavailable(env: Mapping[str, str] = os.environ) -> NoReturn:
    """Skip, or fail where the run requires the server (`--require postgres`), for want
    of the server binaries."""
    reason = env.get("BIAS_TEST_PG_SKIP") or (
        f"PostgreSQL server binaries ({', '.join(TOOLS)}) not found in BIAS_TEST_PG_BIN, "
        f"under {SEARCH} or on PATH (scripts/test installs them when it can)"
    )
    missing("postgres", reason)


@pytest.fixture
def own_pg_cluster() -> Iterator[PgCluster]:
    """A cluster of the test's own, to stop and start without disturbing the others."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        unavailable()
    cluster = start_cluster(bin_dir)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """One throwaway PostgreSQL cluster for the session (skips when there is no server)."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        unavailable()
    cluster = start_cluster(bin_dir)
    atexit.register(cluster.stop)  # should the session end without its teardown
    try:
        yield cluster
    finally:
        cluster.stop()
        atexit.unregister(cluster.stop)


@contextlib.contextmanager
def databases(cluster: PgCluster) -> Iterator[Callable[[], str]]:
    """A factory of fresh databases' URLs; on exit all are dropped, in use or not."""
    created: list[str] = []

    def make() -> str:
        created.append(cluster.create_database())
        return cluster.url(created[-1])

    try:
        yield make
    finally:
        for name in created:
            cluster.drop_database(name)


@pytest.fixture
def make_pg_url(pg_cluster: PgCluster) -> Iterator[Callable[[], str]]:
    """A factory: each call creates a fresh database; all are dropped after the test."""
    with databases(pg_cluster) as make:
        yield make


@pytest.fixture
def pg_url(make_pg_url: Callable[[], str]) -> str:
    """The URL of a fresh database, dropped after the test."""
    return make_pg_url()
