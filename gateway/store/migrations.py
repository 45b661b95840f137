"""Versioned schema migrations for both engines, run at start or by `bias-gateway migrate`.

Each `Migration` has a version, what it does, and its steps, written once for
both engines in the templates of `gateway.store.dialect` (`{real}`, `{boolean}`,
...). The table `schema_migrations (version, description, applied_at)` records
what ran. Several processes starting at once is safe: SQLite runs the
migrations under its write lock (`BEGIN IMMEDIATE`) and PostgreSQL under a
transaction-scoped advisory lock, and each reads what is applied only once it
holds the lock. A database whose schema is newer than this gateway knows is
refused rather than written with an older idea of it.

Version 1 is the schema as it stood when versions began; version 2 adds the
durable scoring work (`gateway.work.payload`); version 3 the categories and the
indexes of the search and stats APIs (`gateway.store.queries`); version 4 the rate
of overload sampling (`gateway.scoring.shedding`); version 5 the count of biased
opinions a verdict rests on beside its score; version 6 what in an answer addressed
the judge and how its text was read (`guard.integrity`); version 7 empties the score
cache; version 8 adds the reviewers' labels (`gateway.store.reviews`); version 9 the
live probe's pairs (`gateway.store.probes`); version 10 what a process keeps by name
across restarts (`gateway.store.state`). An SQLite file from
before then (it has `scores` but no `schema_migrations`) is brought up to it by
adding the columns it lacks.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from gateway.store.dialect import POSTGRES, SQLITE, Dialect
from gateway.store.probes import PROBE_PAIRS_V9
from gateway.store.records import StoreError

__all__ = [
    "MIGRATIONS",
    "Columns",
    "Migration",
    "Native",
    "latest_version",
    "migrate_postgres",
    "migrate_sqlite",
    "step_sql",
]

# Any fixed number: it names "the migration lock" among the database's advisory locks.
_ADVISORY_LOCK = 726_150_411


@dataclass(frozen=True, slots=True)
class Columns:
    """Columns of `scores` added where missing, as (name, declaration template)."""

    columns: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Native:
    """What each engine says its own way (the category triggers)."""

    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]


Step = str | Columns | Native  # a str: one statement, a template of the dialect's types


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    steps: tuple[Step, ...]


_SCORES_V1 = """CREATE TABLE IF NOT EXISTS scores (
    run_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    created_at {real} NOT NULL,
    model TEXT,
    api TEXT,
    key_name TEXT,
    mode TEXT,
    stream {boolean} NOT NULL DEFAULT {false},
    partial {boolean} NOT NULL DEFAULT {false},
    truncated {boolean} NOT NULL DEFAULT {false},
    score {real},
    verdict TEXT,
    reason TEXT,
    reason_status TEXT,
    status_reason TEXT,
    judge_calls INTEGER,
    judge_tokens INTEGER,
    result TEXT,
    response_id TEXT,
    request_id TEXT,
    prompt TEXT,
    completion TEXT,
    updated_at {real}
)"""
_CACHE_V1 = """CREATE TABLE IF NOT EXISTS score_cache (
    seq {serial},
    key TEXT NOT NULL UNIQUE,
    result TEXT NOT NULL,
    stored_at {real} NOT NULL
)"""

# Version 1, and the columns that SQLite files from before versioning may lack.
_V1: tuple[Step, ...] = (
    _SCORES_V1,
    "CREATE INDEX IF NOT EXISTS scores_status ON scores (status)",
    "CREATE INDEX IF NOT EXISTS scores_created_at ON scores (created_at)",
    _CACHE_V1,
    Columns(
        (
            ("api", "TEXT"),
            ("truncated", "{boolean} NOT NULL DEFAULT {false}"),
            ("reason_status", "TEXT"),
            ("judge_calls", "INTEGER"),
            ("judge_tokens", "INTEGER"),
        )
    ),
)

# Version 2: durable monitor work. A pending record holds what a scorer needs
# (`work`), and a claim on it is a lease; the partial indexes serve the claim,
# the lease sweep and the heartbeat, which all look at pending records only.
_V2: tuple[Step, ...] = (
    Columns(
        (
            ("work", "TEXT"),
            ("attempts", "INTEGER NOT NULL DEFAULT 0"),
            ("lease_until", "{real}"),
            ("leased_by", "TEXT"),
        )
    ),
    "CREATE INDEX IF NOT EXISTS scores_pending ON scores (created_at) WHERE status = 'pending'",
    # The heartbeat and the release find a holder's leases by it, not by a scan of
    # every pending record.
    "CREATE INDEX IF NOT EXISTS scores_leased ON scores (leased_by) WHERE status = 'pending'",
)

# Version 3: categories, and the indexes the search and stats APIs read through.
# `score_categories` holds one row per (record, category) for the category filter
# and group-by; triggers keep it in step with `scores.categories` (a JSON list), so
# it changes exactly when a record does: never for a write the upsert refused.
_SQLITE_TRIGGERS = (
    """CREATE TRIGGER IF NOT EXISTS scores_categories_insert AFTER INSERT ON scores
WHEN new.categories IS NOT NULL BEGIN
    INSERT OR IGNORE INTO score_categories (category, created_at, run_id)
    SELECT value, new.created_at, new.run_id FROM json_each(new.categories);
END;""",
    """CREATE TRIGGER IF NOT EXISTS scores_categories_update AFTER UPDATE OF categories ON scores
BEGIN
    DELETE FROM score_categories WHERE run_id = old.run_id;
    INSERT OR IGNORE INTO score_categories (category, created_at, run_id)
    SELECT value, new.created_at, new.run_id FROM json_each(coalesce(new.categories, '[]'));
END;""",
    """CREATE TRIGGER IF NOT EXISTS scores_categories_delete AFTER DELETE ON scores BEGIN
    DELETE FROM score_categories WHERE run_id = old.run_id;
END;""",
)
_POSTGRES_TRIGGERS = (
    """CREATE OR REPLACE FUNCTION scores_categories_sync() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM score_categories WHERE run_id = OLD.run_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.categories IS NOT NULL THEN
        INSERT INTO score_categories (category, created_at, run_id)
        SELECT DISTINCT value, NEW.created_at, NEW.run_id
        FROM jsonb_array_elements_text(NEW.categories::jsonb) AS value
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS scores_categories_insert ON scores",
    """CREATE TRIGGER scores_categories_insert AFTER INSERT ON scores
    FOR EACH ROW WHEN (NEW.categories IS NOT NULL) EXECUTE FUNCTION scores_categories_sync()""",
    "DROP TRIGGER IF EXISTS scores_categories_update ON scores",
    """CREATE TRIGGER scores_categories_update AFTER UPDATE OF categories ON scores
    FOR EACH ROW EXECUTE FUNCTION scores_categories_sync()""",
    "DROP TRIGGER IF EXISTS scores_categories_delete ON scores",
    """CREATE TRIGGER scores_categories_delete AFTER DELETE ON scores
    FOR EACH ROW EXECUTE FUNCTION scores_categories_sync()""",
)
_V3: tuple[Step, ...] = (
    Columns((("categories", "TEXT"), ("trace_id", "TEXT"))),
    "CREATE INDEX IF NOT EXISTS scores_key_created ON scores (key_name, created_at)",
    "CREATE INDEX IF NOT EXISTS scores_verdict_created ON scores (verdict, created_at)",
    "CREATE INDEX IF NOT EXISTS scores_model_created ON scores (model, created_at)",
    "CREATE TABLE IF NOT EXISTS score_categories ("
    " category TEXT NOT NULL, created_at {real} NOT NULL, run_id TEXT NOT NULL,"
    " PRIMARY KEY (category, created_at, run_id))",
    "CREATE INDEX IF NOT EXISTS score_categories_run ON score_categories (run_id)",
    # A window grouped by category: an index-only range scan instead of a full one.
    "CREATE INDEX IF NOT EXISTS score_categories_created"
    " ON score_categories (created_at, category, run_id)",
    Native(sqlite=_SQLITE_TRIGGERS, postgres=_POSTGRES_TRIGGERS),
)

_V4: tuple[Step, ...] = (Columns((("sample_rate", "{real}"),)),)
# Records from before it read as null: their count was never kept.
_V5: tuple[Step, ...] = (Columns((("biased_opinions", "INTEGER"),)),)

# Version 6: tamper findings (JSON, NULL when none) and the normalising steps applied;
# the search's `tamper` filter walks the partial index of records that have findings.
_V6: tuple[Step, ...] = (
    Columns((("tamper", "TEXT"), ("normalised", "TEXT"))),
    "CREATE INDEX IF NOT EXISTS scores_tamper_created ON scores (created_at)"
    " WHERE tamper IS NOT NULL",
)

# Version 7: the score cache emptied once. Its entries from before held, without
# content capture too, the texts they were judged from (the explanation's prompt,
# the quoted opinions): now a store without capture keeps the verdicts only.
_V7: tuple[Step, ...] = ("DELETE FROM score_cache",)

# Version 8: reviewers' labels (`gateway.store.reviews`), appended and never updated (a
# reviewer's later review of a record supersedes its earlier one in the figures; both are
# kept), and each record's place in the review queue, decided when it is stored. The
# queue walks the partial index of records that have one; "has this reviewer labelled
# it" is a probe of (run_id, reviewer); the agreement and retention read reviews by time.
_V8: tuple[Step, ...] = (
    Columns((("review_rank", "INTEGER"),)),
    # In the queue's order (rank, then newest first): read in order, never sorted.
    "CREATE INDEX IF NOT EXISTS scores_review_queue"
    " ON scores (review_rank, created_at DESC, run_id DESC) WHERE review_rank IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS scores_key_review_queue"
    " ON scores (key_name, review_rank, created_at DESC, run_id DESC)"
    " WHERE review_rank IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS reviews ("
    " id {serial}, run_id TEXT NOT NULL, reviewer TEXT NOT NULL, key_name TEXT,"
    " label TEXT NOT NULL, opinions TEXT, note TEXT, created_at {real} NOT NULL)",
    "CREATE INDEX IF NOT EXISTS reviews_run_reviewer ON reviews (run_id, reviewer, created_at)",
    "CREATE INDEX IF NOT EXISTS reviews_created ON reviews (created_at)",
    "CREATE INDEX IF NOT EXISTS reviews_key_created ON reviews (key_name, created_at)",
)

# Version 10: what a process last saw of things that outlive it, by name
# (`gateway.store.state`): the judge's identity, which a changed judge is told by, and the
# report of the canary that checked the last change against the reviewers' labels.
_V10: tuple[Step, ...] = (
    "CREATE TABLE IF NOT EXISTS gateway_state ("
    " name TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at {real} NOT NULL)",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "scores and score_cache", _V1),
    Migration(2, "durable scoring work: work, attempts, lease", _V2),
    Migration(3, "categories, trace ids, and indexes for search and stats", _V3),
    Migration(4, "the rate a record was sampled at while overload shed the rest", _V4),
    Migration(5, "the count of biased opinions a verdict rests on", _V5),
    Migration(6, "tamper findings and the normalising steps of the judged text", _V6),
    Migration(7, "the score cache emptied of entries that may hold judged texts", _V7),
    Migration(8, "reviews: reviewers' labels of judged records", _V8),
    Migration(9, "the live probe's pairs of answers", PROBE_PAIRS_V9),
    Migration(10, "gateway state: the judge last seen and its canary", _V10),
)

_LEDGER = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at {real} NOT NULL)"
)


def latest_version() -> int:
    return MIGRATIONS[-1].version


def step_sql(step: Step, dialect: Dialect, present: Collection[str] = ()) -> list[str]:
    """One step's statements in `dialect`; `Columns` adds those not `present`."""
    if isinstance(step, Native):
        return list(step.sqlite if dialect.name == SQLITE.name else step.postgres)
    if isinstance(step, Columns):
        return [
            f"ALTER TABLE scores ADD COLUMN{dialect.column_guard} {name} {dialect.ddl(declaration)}"
            for name, declaration in step.columns
            if name not in present
        ]
    return [dialect.ddl(step)]


def _check_known(applied: set[int]) -> None:
    newest = max(applied, default=0)
    if newest > latest_version():
        raise StoreError(
            f"the database's schema is at version {newest}, newer than this gateway knows"
            f" ({latest_version()}): upgrade the gateway, or use another database"
        )


def _ledger_insert(dialect: Dialect) -> str:
    return f"INSERT INTO schema_migrations VALUES ({dialect.params(3)})"


def migrate_sqlite(conn: sqlite3.Connection) -> list[int]:
    """Apply what is missing, under the write lock; returns the versions applied now."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(SQLITE.ddl(_LEDGER))
        applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        _check_known(applied)
        done = []
        for migration in MIGRATIONS:
            if migration.version in applied:
                continue
            for step in migration.steps:
                # SQLite has no ADD COLUMN IF NOT EXISTS: what is there is looked up.
                present = {row[1] for row in conn.execute("PRAGMA table_info(scores)")}
                for statement in step_sql(step, SQLITE, present):
                    conn.execute(statement)
            conn.execute(
                _ledger_insert(SQLITE), (migration.version, migration.description, time.time())
            )
            done.append(migration.version)
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    return done


async def migrate_postgres(conn: Any) -> list[int]:
    """The same for PostgreSQL, on an asyncpg connection, under the advisory lock."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _ADVISORY_LOCK)
        await conn.execute(POSTGRES.ddl(_LEDGER))
        applied = {row[0] for row in await conn.fetch("SELECT version FROM schema_migrations")}
        _check_known(applied)
        done = []
        for migration in MIGRATIONS:
            if migration.version in applied:
                continue
            for step in migration.steps:
                for statement in step_sql(step, POSTGRES):
                    await conn.execute(statement)
            await conn.execute(
                _ledger_insert(POSTGRES), migration.version, migration.description, time.time()
            )
            done.append(migration.version)
    return done
