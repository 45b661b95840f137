"""The live probe's pairs as the store keeps them: table `probe_pairs` (migration 9).

A pair is one replayed request seen twice: asked about the group its prompt
named (side `a`) and about another group of that dimension (side `b`). A probe
of a dimension of n groups stores n - 1 pairs sharing `probe_id` and side `a`.
No prompt and no answer is kept: the template (the prompt with the group
masked, or its hash without content capture), and per side the group, what
marked a refusal, the score, the biased opinions and the length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass
from typing import Any

from gateway.store.dialect import Dialect

__all__ = [
    "PROBE_PAIRS_V9",
    "ProbePair",
    "ProbeQuery",
    "ProbeSide",
    "ProbeStatements",
    "pair_from_row",
]

# The most pairs one findings window reads: a wider window is cut to its newest ones.
MAX_PAIRS = 100_000

PROBE_PAIRS_V9: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS probe_pairs (
    probe_id TEXT NOT NULL,
    created_at {real} NOT NULL,
    key_name TEXT,
    model TEXT,
    api TEXT,
    dimension TEXT NOT NULL,
    template TEXT NOT NULL,
    group_a TEXT NOT NULL,
    refusal_a TEXT,
    score_a {real},
    biased_a INTEGER,
    length_a INTEGER,
    group_b TEXT NOT NULL,
    refusal_b TEXT,
    score_b {real},
    biased_b INTEGER,
    length_b INTEGER,
    PRIMARY KEY (probe_id, group_b)
)""",
    "CREATE INDEX IF NOT EXISTS probe_pairs_created ON probe_pairs (created_at)",
)

_COLUMNS = (
    "probe_id, created_at, key_name, model, api, dimension, template,"
    " group_a, refusal_a, score_a, biased_a, length_a,"
    " group_b, refusal_b, score_b, biased_b, length_b"
)


@dataclass(frozen=True, slots=True)
class ProbeSide:
    """One answer of a pair: its group; `refusal` says what marked it as one (None: an
    answer); `score` and `biased` are None for a refusal or an answer the judge failed."""

    group: str
    refusal: str | None
    score: float | None
    biased: int | None
    length: int


@dataclass(frozen=True, slots=True)
class ProbePair:
    probe_id: str
    created_at: float
    key_name: str | None
    model: str | None
    api: str | None
    dimension: str
    template: str
    a: ProbeSide
    b: ProbeSide


@dataclass(frozen=True, slots=True)
class ProbeQuery:
    """A findings window: `since <= created_at < until`, one key's or one model's."""

    since: float
    until: float
    key_name: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ProbeStatements:
    """The probe's SQL in one dialect: `insert` (a pair's `rows`), `prune` (before, batch),
    and `select(query)`, the statement and values of a findings window."""

    insert: str
    prune: str
    select: Callable[[ProbeQuery], tuple[str, list[object]]]

    @classmethod
    def of(cls, dialect: Dialect) -> ProbeStatements:
        return cls(
            insert=_insert_sql(dialect),
            prune=_prune_sql(dialect),
            select=lambda query: _select_sql(query, dialect),
        )

    @staticmethod
    def rows(pairs: Sequence[ProbePair]) -> list[tuple[object, ...]]:
        return [_pair_row(pair) for pair in pairs]


def _pair_row(pair: ProbePair) -> tuple[object, ...]:
    head = (pair.probe_id, pair.created_at, pair.key_name, pair.model, pair.api)
    return (*head, pair.dimension, pair.template, *astuple(pair.a), *astuple(pair.b))


def pair_from_row(row: Sequence[Any]) -> ProbePair:
    return ProbePair(
        probe_id=row[0],
        created_at=float(row[1]),
        key_name=row[2],
        model=row[3],
        api=row[4],
        dimension=row[5],
        template=row[6],
        a=_side(row[7:12]),
        b=_side(row[12:17]),
    )


def _side(values: Sequence[Any]) -> ProbeSide:
    group, refusal, score, biased, length = values
    return ProbeSide(
        group, refusal, None if score is None else float(score), biased, int(length or 0)
    )


def _insert_sql(dialect: Dialect) -> str:
    # A pair stored twice (a retried write) is the same pair: kept once.
    return (
        f"INSERT INTO probe_pairs ({_COLUMNS}) VALUES ({dialect.params(17)})"
        " ON CONFLICT (probe_id, group_b) DO NOTHING"
    )


def _select_sql(query: ProbeQuery, dialect: Dialect) -> tuple[str, list[object]]:
    """The window's pairs, newest `MAX_PAIRS`, oldest first."""
    where = [f"created_at >= {dialect.param(1)}", f"created_at < {dialect.param(2)}"]
    values: list[object] = [query.since, query.until]
    for column, value in (("key_name", query.key_name), ("model", query.model)):
        if value is not None:
            values.append(value)
            where.append(f"{column} = {dialect.param(len(values))}")
    values.append(MAX_PAIRS)
    newest = (
        f"SELECT {_COLUMNS} FROM probe_pairs WHERE {' AND '.join(where)}"
        f" ORDER BY created_at DESC, probe_id, group_b LIMIT {dialect.param(len(values))}"
    )
    return f"SELECT * FROM ({newest}) AS newest ORDER BY created_at, probe_id, group_b", values


def _prune_sql(dialect: Dialect) -> str:
    """Up to (batch) pairs created before (before), as retention prunes records."""
    p = dialect.param
    return (
        "DELETE FROM probe_pairs WHERE (probe_id, group_b) IN (SELECT probe_id, group_b"
        f" FROM probe_pairs WHERE created_at < {p(1)} LIMIT {p(2)})"
    )
