"""Schema migrations on both engines: a database that any earlier version of the schema
left is brought up to date, to exactly the schema a new database gets, and a new
database gets exactly the schema the migrations have always made.

`schemas/<engine>-<version>.sql` hold the DDL each migration ran on a new database
before the engines shared one migration template, captured from that code.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from gateway.config import StoreSettings
from gateway.store import ScoreRecord, open_store
from gateway.store.migrations import MIGRATIONS
from gateway.store.queries import ScoreQuery
from tests.support.resources import ENGINES

SCHEMAS = Path(__file__).parent / "schemas"
OLD_RECORD = "INSERT INTO scores (run_id, status, created_at) VALUES ('old', 'scored', 1)"
Fresh = Callable[[], StoreSettings]
# The versions in order; a number may be missing (another branch's migration, to come).
VERSIONS = [migration.version for migration in MIGRATIONS]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def fresh(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Fresh:
    """A factory of locations of new, empty databases of the engine under test."""
    made = iter(range(1_000))

    def make() -> StoreSettings:
        if engine == "postgresql":
            return StoreSettings(url=request.getfixturevalue("make_pg_url")())
        return StoreSettings(path=str(tmp_path / f"scores-{next(made)}.db"))

    return make


def _engine(location: StoreSettings) -> str:
    return "sqlite" if location.url is None else "postgresql"


async def build_old(location: StoreSettings, version: int) -> None:
    """The database as the schema at `version` left it, holding one record."""
    scripts = [
        (SCHEMAS / f"{_engine(location)}-{number}.sql").read_text()
        for number in VERSIONS[: VERSIONS.index(version) + 1]
    ]
    if location.url is None:
        conn = sqlite3.connect(location.path, isolation_level=None)
        try:
            for number, script in zip(VERSIONS, scripts, strict=False):
                conn.executescript(script)
                conn.execute("INSERT INTO schema_migrations VALUES (?, 'old', 0)", (number,))
            conn.execute(OLD_RECORD)
        finally:
            conn.close()
        return
    pg = await asyncpg.connect(location.url.get_secret_value())
    try:
        for number, script in zip(VERSIONS, scripts, strict=False):
            await pg.execute(script)
            await pg.execute("INSERT INTO schema_migrations VALUES ($1, 'old', 0)", number)
        await pg.execute(OLD_RECORD)
    finally:
        await pg.close()


async def schema(location: StoreSettings) -> Any:
    """Everything the schema is made of, as the database describes it."""
    if location.url is None:
        conn = sqlite3.connect(location.path)
        try:
            return conn.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
            ).fetchall()
        finally:
            conn.close()
    pg = await asyncpg.connect(location.url.get_secret_value())
    here = "= current_schema()"
    try:
        return {
            what: [tuple(row) for row in await pg.fetch(sql)]
            for what, sql in {
                "columns": "SELECT table_name, ordinal_position, column_name, data_type,"
                " is_nullable, column_default FROM information_schema.columns"
                f" WHERE table_schema {here} ORDER BY 1, 2",
                "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes"
                f" WHERE schemaname {here} ORDER BY 1, 2",
                "constraints": "SELECT conrelid::regclass::text, conname,"
                " pg_get_constraintdef(c.oid) FROM pg_constraint c"
                f" JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname {here}"
                " ORDER BY 1, 2",
                "triggers": "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger"
                " WHERE NOT tgisinternal ORDER BY 1",
                "functions": "SELECT proname, pg_get_functiondef(p.oid) FROM pg_proc p"
                f" JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname {here}"
                " ORDER BY 1",
            }.items()
        }
    finally:
        await pg.close()


async def applied(location: StoreSettings) -> list[int]:
    if location.url is None:
        with sqlite3.connect(location.path) as conn:
            rows = conn.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
        conn.close()
        return [row[0] for row in rows]
    pg = await asyncpg.connect(location.url.get_secret_value())
    try:
        return [
            row[0] for row in await pg.fetch("SELECT version FROM schema_migrations ORDER BY 1")
        ]
    finally:
        await pg.close()


async def migrate(location: StoreSettings) -> None:
    store = open_store(location)
    await store.open(sweep_pending=False)
    await store.close()


async def test_a_new_database_gets_the_schema_migrations_have_always_made(fresh: Fresh) -> None:
    new, old = fresh(), fresh()
    await migrate(new)
    await build_old(old, VERSIONS[-1])
    assert await schema(new) == await schema(old)
    assert await applied(new) == VERSIONS


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_database_of_an_older_version_is_brought_up_to_date(
    fresh: Fresh, version: int
) -> None:
    old, new = fresh(), fresh()
    await build_old(old, version)
    await migrate(new)
    store = open_store(old)
    await store.open(sweep_pending=False)
    try:
        kept = await store.get("old")
        assert kept is not None
        assert (kept.status, kept.attempts, kept.categories) == ("scored", 0, None)
        assert kept.biased_opinions is None  # never counted: unknown, not zero
        store.submit(
            ScoreRecord("new", "scored", created_at=2.0, categories=["gender"], biased_opinions=3)
        )
        # The category triggers run: the new record is found by its category.
        found = await store.search(ScoreQuery(category="gender"))
        assert [record.run_id for record in found] == ["new"]
        assert found[0].biased_opinions == 3
    finally:
        await store.close()
    assert await applied(old) == VERSIONS
    assert await schema(old) == await schema(new)


async def test_the_score_cache_from_before_version_7_is_emptied(fresh: Fresh) -> None:
    # Its entries may hold the judged texts, content capture or not.
    old = fresh()
    await build_old(old, 6)
    text_entry = "INSERT INTO score_cache (key, result, stored_at) VALUES ('k', 'a text', 1)"
    if old.url is None:
        with sqlite3.connect(old.path) as conn:
            conn.execute(text_entry)
        conn.close()
    else:
        pg = await asyncpg.connect(old.url.get_secret_value())
        try:
            await pg.execute(text_entry)
        finally:
            await pg.close()
    store = open_store(old)
    await store.open(sweep_pending=False)
    try:
        assert await store.cached(10) == []
        assert await store.get("old") is not None  # the records stay
    finally:
        await store.close()
