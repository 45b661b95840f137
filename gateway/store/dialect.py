"""The SQL of the score store, for both engines, from one place. Pure.

A `Dialect` holds what SQLite's and PostgreSQL's SQL do differently:
placeholders (`?` or `$1`), the two-argument maximum, column types, row locks
for claims made at once, and the score cache's ordering key. `Statements`
builds from one every statement an engine runs, so the engines only hold
their drivers, connections, and what only one of them has (PostgreSQL's
LISTEN/NOTIFY, SQLite's sweep at start). The search and stats queries
(`gateway.store.queries`), the record upsert (`upsert_sql`) and the
migrations (`gateway.store.migrations`) are written with it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway.store.records import COLUMNS

__all__ = ["POSTGRES", "SQLITE", "Dialect", "Statements", "upsert_sql"]


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str  # the engine's name, as `Store.engine` gives it
    numbered: bool  # placeholders are $1, $2, ... rather than ?
    greatest: str  # the two-argument maximum
    real: str  # a float column
    boolean: str  # a boolean column, and its false value
    false: str
    column_guard: str  # what ADD COLUMN says to skip a column that exists, if it can
    serial: str  # the score cache's key of insertion order
    next_seq: str  # a new, highest value of that key
    # Claimers running at once each take other rows instead of queueing on one
    # another's (PostgreSQL); SQLite's one writer at a time needs no row locks.
    skip_locked: str

    def param(self, number: int) -> str:
        """The placeholder of a statement's `number`-th value (from 1)."""
        return f"${number}" if self.numbered else "?"

    def params(self, count: int, *, first: int = 1) -> str:
        """`count` placeholders, comma-separated, numbered from `first`."""
        return ", ".join(self.param(number) for number in range(first, first + count))

    def floor(self, expression: str) -> str:
        """The integer part of a non-negative `expression`."""
        # PostgreSQL rounds a cast to integer; SQLite's cast truncates.
        return f"floor({expression})" if self.numbered else f"CAST({expression} AS INTEGER)"

    def one_of(self, column: str, count: int, *, first: int) -> str:
        """`column` is one of `count` values (`list_values` gives them), from `first`."""
        if self.numbered:  # one array: a single statement to prepare, whatever the count
            return f"{column} = ANY({self.param(first)}::text[])"
        return f"{column} IN ({self.params(count, first=first)})"

    def list_values(self, values: Sequence[str]) -> tuple[object, ...]:
        """The values of a `one_of` term, as the statement takes them."""
        return (list(values),) if self.numbered else tuple(values)

    def ddl(self, template: str) -> str:
        """`template` with the dialect's types: {real}, {boolean}, {false}, {serial}."""
        return template.format(
            real=self.real, boolean=self.boolean, false=self.false, serial=self.serial
        )


SQLITE = Dialect(
    name="sqlite",
    numbered=False,
    greatest="max",
    real="REAL",
    boolean="INTEGER",
    false="0",
    column_guard="",
    serial="INTEGER PRIMARY KEY",
    next_seq="(SELECT MAX(seq) + 1 FROM score_cache)",
    skip_locked="",
)

POSTGRES = Dialect(
    name="postgresql",
    numbered=True,
    greatest="GREATEST",
    real="DOUBLE PRECISION",
    boolean="BOOLEAN",
    false="FALSE",
    column_guard=" IF NOT EXISTS",
    serial="BIGSERIAL PRIMARY KEY",
    next_seq="nextval(pg_get_serial_sequence('score_cache', 'seq'))",
    skip_locked=" FOR UPDATE SKIP LOCKED",
)

_LEASE_CLEARED = "lease_until = NULL, leased_by = NULL"
_PENDING_WORK = "status = 'pending' AND work IS NOT NULL"


@dataclass(frozen=True, slots=True)
class Statements:
    """Every statement an engine runs, in its dialect; the values each takes, in order,
    are named after it.

    Records: `upsert` (`COLUMNS`), `select` (run_id), `counts`. The score cache:
    `cache_put` (key, result, stored_at), `cache_trim` (limit), `cache_load`
    (limit: the newest, oldest first), `cache_get` (key). Retention:
    `prune_records`, `prune_cache` and `prune_reviews` (before, batch). Durable work
    (`gateway.work`):

    - `claim` (lease_until, worker, now, max_attempts, limit): lease unleased (or
      lapsed) pending records with work, oldest first;
    - `renew` (lease_until, worker): extend every lease a worker holds (its heartbeat);
    - `release` (worker): give a worker's leases back untried (no attempt spent);
      `release_some(count)` those of `count` run ids too;
    - `exhausted` (now, max_attempts, now): end as `error` work whose lease lapsed
      `max_attempts` times;
    - `lost` (now, now): end a pending record without work (a stream in flight) whose
      lease lapsed;
    - `pending`: how much work waits or runs.
    """

    dialect: Dialect
    upsert: str
    select: str
    counts: str
    cache_put: str
    cache_trim: str
    cache_load: str
    cache_get: str
    prune_records: str
    prune_cache: str
    prune_reviews: str
    claim: str
    renew: str
    release: str
    exhausted: str
    lost: str
    pending: str

    @classmethod
    def of(cls, dialect: Dialect) -> Statements:
        p = dialect.param
        columns = ", ".join(COLUMNS)
        return cls(
            dialect=dialect,
            upsert=upsert_sql(dialect),
            select=f"SELECT {columns} FROM scores WHERE run_id = {p(1)}",
            counts="SELECT status, COUNT(*) FROM scores GROUP BY status",
            # A re-judged key takes a new, highest seq: seq order is insertion order.
            cache_put=(
                f"INSERT INTO score_cache (key, result, stored_at) VALUES ({dialect.params(3)})"
                " ON CONFLICT (key) DO UPDATE SET result = excluded.result,"
                f" stored_at = excluded.stored_at, seq = {dialect.next_seq}"
            ),
            # By rank, not by `MAX(seq) - limit`: seq has gaps on both engines (a
            # replaced entry leaves its old seq behind; a PostgreSQL upsert that updates
            # still draws a value for the insert it did not do).
            cache_trim=(
                "DELETE FROM score_cache WHERE seq <"
                f" (SELECT seq FROM score_cache ORDER BY seq DESC LIMIT 1 OFFSET {p(1)} - 1)"
            ),
            cache_load=(
                "SELECT key, result FROM (SELECT seq, key, result FROM score_cache"
                f" ORDER BY seq DESC LIMIT {p(1)}) AS newest ORDER BY seq"
            ),
            cache_get=f"SELECT result FROM score_cache WHERE key = {p(1)}",
            # Bounded batches through the created_at index; pending records are never pruned.
            prune_records=(
                "DELETE FROM scores WHERE run_id IN (SELECT run_id FROM scores"
                f" WHERE created_at < {p(1)} AND status <> 'pending' LIMIT {p(2)})"
            ),
            prune_cache=(
                "DELETE FROM score_cache WHERE seq IN"
                f" (SELECT seq FROM score_cache WHERE stored_at < {p(1)} LIMIT {p(2)})"
            ),
            prune_reviews=(
                "DELETE FROM reviews WHERE id IN"
                f" (SELECT id FROM reviews WHERE created_at < {p(1)} LIMIT {p(2)})"
            ),
            # One UPDATE ... RETURNING: one round trip, not a SELECT then an UPDATE.
            claim=(
                f"UPDATE scores SET lease_until = {p(1)}, leased_by = {p(2)},"
                f" attempts = attempts + 1 WHERE run_id IN (SELECT run_id FROM scores"
                f" WHERE {_PENDING_WORK} AND (lease_until IS NULL OR lease_until < {p(3)})"
                f" AND attempts < {p(4)} ORDER BY created_at LIMIT {p(5)}{dialect.skip_locked})"
                f" RETURNING {columns}"
            ),
            renew=(
                f"UPDATE scores SET lease_until = {p(1)}"
                f" WHERE leased_by = {p(2)} AND status = 'pending'"
            ),
            release=(
                f"UPDATE scores SET {_LEASE_CLEARED},"
                f" attempts = {dialect.greatest}(attempts - 1, 0)"
                f" WHERE leased_by = {p(1)} AND {_PENDING_WORK}"
            ),
            exhausted=(
                "UPDATE scores SET status = 'error', status_reason = 'attempts_exhausted',"
                f" work = NULL, {_LEASE_CLEARED}, updated_at = {p(1)} WHERE {_PENDING_WORK}"
                f" AND attempts >= {p(2)} AND (lease_until IS NULL OR lease_until < {p(3)})"
                " RETURNING run_id"
            ),
            lost=(
                "UPDATE scores SET status = 'dropped', status_reason = 'gateway_lost',"
                f" {_LEASE_CLEARED}, updated_at = {p(1)} WHERE status = 'pending'"
                f" AND work IS NULL AND lease_until < {p(2)} RETURNING run_id"
            ),
            pending=f"SELECT COUNT(*) FROM scores WHERE {_PENDING_WORK}",
        )

    def release_some(self, count: int) -> str:
        """`release`, of the leases on `count` run ids only (from the second value)."""
        return f"{self.release} AND {self.dialect.one_of('run_id', count, first=2)}"


def upsert_sql(dialect: Dialect) -> str:
    """The one write of a record, in `dialect`: insert, or update a record that is
    not final yet. A final status is written once: a late or duplicate write (a
    scorer whose lease lapsed, a retry) leaves it as it is, except that a score
    waiting for its deferred explanation takes that explanation. `attempts` only
    grows."""
    updates = [
        f"{name} = excluded.{name}" for name in COLUMNS if name not in ("run_id", "attempts")
    ]
    updates.append(f"attempts = {dialect.greatest}(scores.attempts, excluded.attempts)")
    return (
        f"INSERT INTO scores ({', '.join(COLUMNS)}) VALUES ({dialect.params(len(COLUMNS))})"
        f" ON CONFLICT (run_id) DO UPDATE SET {', '.join(updates)}"
        " WHERE scores.status = 'pending'"
        " OR (scores.reason_status = 'pending' AND excluded.status = scores.status)"
    )
