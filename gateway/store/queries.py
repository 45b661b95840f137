"""The search and stats queries over the score store, as SQL for either engine. Pure.

`ScoreQuery` filters records (newest first, a page at a time, with an opaque
keyset cursor); `StatsQuery` summarises a window, optionally by group. Both
are turned into SQL here in the engine's dialect (`gateway.store.dialect`), so
the engines only run what they are handed. Every filter column is served by an
index from migration 3: `created_at`, `(key_name, created_at)`,
`(verdict, created_at)`, `(model, created_at)`, and `score_categories`
`(category, created_at, run_id)`; a category filter walks that table instead.
`mode` (taken by the what-if API only) has no index of its own: it narrows the
rows the time range or another filter's index finds. `tamper` (any finding, or one
kind) reads the partial index of records with findings (migration 5).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gateway.domain import VERDICTS
from gateway.store.dialect import Dialect
from gateway.store.records import COLUMNS, STATUSES

__all__ = [
    "GROUPS",
    "STATS_COLUMNS",
    "TIME_BUCKETS",
    "CursorError",
    "Params",
    "ScoreQuery",
    "StatsGroup",
    "StatsQuery",
    "decode_cursor",
    "encode_cursor",
    "p90_sql",
    "search_sql",
    "stats_rows",
    "stats_sql",
    "stats_window",
]

TIME_BUCKETS = {"minute": 60, "hour": 3600, "day": 86400}
GROUPS = ("verdict", "status", "model", "key", "category", "score", *TIME_BUCKETS)
GroupBy = Literal["verdict", "status", "model", "key", "category", "score", "minute", "hour", "day"]
SCORE_BUCKETS = 10  # group_by=score: tenths of the scale, the top one closed
_GROUP_COLUMNS = {
    "verdict": "s.verdict",
    "status": "s.status",
    "model": "s.model",
    "key": "s.key_name",
}


class CursorError(ValueError):
    """A `cursor` this gateway did not hand out."""


@dataclass(frozen=True, slots=True)
class ScoreQuery:
    """Which records to list; every field but `limit` and `cursor` narrows the set."""

    verdict: tuple[str, ...] | None = None  # any of these
    status: str | None = None
    model: str | None = None
    key: str | None = None
    mode: str | None = None  # the mode the request ran in: off, monitor or enforce
    category: str | None = None
    tamper: str | None = None  # "any" finding, or one kind (`guard.integrity.tamper`)
    min_score: float | None = None
    since: float | None = None  # epoch seconds, inclusive
    until: float | None = None  # epoch seconds, exclusive
    limit: int = 50
    cursor: tuple[float, str] | None = None  # (created_at, run_id) of the last one seen


@dataclass(frozen=True, slots=True)
class StatsQuery:
    filters: ScoreQuery
    group_by: GroupBy | None = None
    scale: float = 1.0  # the judge's scale: group_by=score's buckets are tenths of it


STATS_COLUMNS = (
    "records",
    *(f"status_{status}" for status in sorted(STATUSES)),
    *(f"verdict_{verdict}" for verdict in VERDICTS),
    "scored",
    "mean_score",
    "judge_calls",
    "judge_tokens",
    "overload_sampled",
    "at_reduced_rate",
)


@dataclass(slots=True)
class StatsGroup:
    """One group's summary (or the whole window's, with `key` None)."""

    key: str | float | None
    records: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, int] = field(default_factory=dict)
    mean_score: float | None = None
    p90_score: float | None = None
    judge_calls: int = 0
    judge_tokens: int = 0
    overload_sampled: int = 0  # skipped `overload_sampled`: shed while the judge was behind
    at_reduced_rate: int = 0  # records made while their key's responses were being shed

    @property
    def sampled(self) -> bool:
        """Whether the scores are a sample: overload shed some of the window's responses."""
        return self.at_reduced_rate > 0

    @property
    def scored_share(self) -> float | None:
        """Of the responses scored or shed by overload, the share scored (None: neither)."""
        scored = self.statuses.get("scored", 0)
        judged_or_shed = scored + self.overload_sampled
        return round(scored / judged_or_shed, 4) if judged_or_shed else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "records": self.records,
            "status": self.statuses,
            "verdict": self.verdicts,
            "score": {"mean": self.mean_score, "p90": self.p90_score, "sampled": self.sampled},
            "judge": {"calls": self.judge_calls, "tokens": self.judge_tokens},
            "sampling": {
                "scored_share": self.scored_share,
                "overload_sampled": self.overload_sampled,
            },
        }


def encode_cursor(created_at: float, run_id: str) -> str:
    raw = json.dumps([created_at, run_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, run_id = json.loads(raw)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise CursorError("cursor: not one this gateway gave out") from exc
    if not isinstance(created_at, int | float) or not isinstance(run_id, str):
        raise CursorError("cursor: not one this gateway gave out")
    return float(created_at), run_id


class Params:
    """Collects values and names their placeholders in the engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.values: list[object] = []

    def __call__(self, value: object) -> str:
        self.values.append(value)
        return self.dialect.param(len(self.values))


def _conditions(query: ScoreQuery, param: Params, *, at: str) -> list[str]:
    """The WHERE terms of `query` but the category and cursor; `at` is the time column."""
    terms = []
    if query.verdict is not None:
        terms.append(f"s.verdict IN ({', '.join(param(verdict) for verdict in query.verdict)})")
    for column, value in (
        ("s.status", query.status),
        ("s.model", query.model),
        ("s.key_name", query.key),
        ("s.mode", query.mode),
    ):
        if value is not None:
            terms.append(f"{column} = {param(value)}")
    if query.tamper is not None:
        terms.append("s.tamper IS NOT NULL")
        if query.tamper != "any":
            # The stored JSON is compact (`records.json_text`); an excerpt's own quotes
            # are escaped there, so only a finding's kind matches this.
            pattern = '%"kind":"' + query.tamper + '"%'
            terms.append(f"s.tamper LIKE {param(pattern)}")
    if query.min_score is not None:
        terms.append(f"s.score >= {param(query.min_score)}")
    if query.since is not None:
        terms.append(f"{at} >= {param(query.since)}")
    if query.until is not None:
        terms.append(f"{at} < {param(query.until)}")
    return terms


def search_sql(query: ScoreQuery, dialect: Dialect) -> tuple[str, list[object]]:
    """One page, newest first: `limit + 1` rows, so the caller knows if there are more."""
    param = Params(dialect)
    columns = ", ".join(f"s.{name}" for name in COLUMNS)
    if query.category is not None:
        # Walk the category's index in time order and fetch each record by key.
        at, order_id = "c.created_at", "c.run_id"
        source = "score_categories c JOIN scores s ON s.run_id = c.run_id"
        terms = [f"c.category = {param(query.category)}"]
    else:
        at, order_id = "s.created_at", "s.run_id"
        source = "scores s"
        terms = []
    terms += _conditions(query, param, at=at)
    if query.cursor is not None:
        created_at, run_id = query.cursor
        first, second, third = param(created_at), param(created_at), param(run_id)
        terms.append(f"({at} < {first} OR ({at} = {second} AND {order_id} < {third}))")
    where = f" WHERE {' AND '.join(terms)}" if terms else ""
    limit = param(query.limit + 1)
    sql = f"SELECT {columns} FROM {source}{where} ORDER BY {at} DESC, {order_id} DESC LIMIT {limit}"
    return sql, param.values


def _group_expression(
    group_by: GroupBy | None, at: str, dialect: Dialect, scale: float
) -> str | None:
    if group_by is None:
        return None
    if group_by in TIME_BUCKETS:
        seconds = TIME_BUCKETS[group_by]
        return f"({dialect.floor(f'{at} / {seconds}')} * {seconds})"
    if group_by == "category":
        return "c.category"
    if group_by == "score":
        # The bucket's index, 0 to 9: tenths of the scale, a score at the top in the last.
        # `scale` is a float from the config, written as a literal, never user input.
        ratio = f"s.score * {SCORE_BUCKETS} / {float(scale)!r}"
        raw = dialect.floor(ratio)
        return f"(CASE WHEN {raw} >= {SCORE_BUCKETS} THEN {SCORE_BUCKETS - 1} ELSE {raw} END)"
    return _GROUP_COLUMNS[group_by]


def stats_window(query: StatsQuery, param: Params) -> tuple[str, list[str], str | None]:
    """The FROM, the WHERE terms and the group expression of a stats query (or of
    `gateway.store.whatif`'s, which counts the same windows)."""
    filters = query.filters
    by_category = query.group_by == "category" or filters.category is not None
    at = "c.created_at" if by_category else "s.created_at"
    source = (
        "score_categories c JOIN scores s ON s.run_id = c.run_id" if by_category else "scores s"
    )
    terms = [f"c.category = {param(filters.category)}"] if filters.category is not None else []
    terms += _conditions(filters, param, at=at)
    if query.group_by == "score":
        terms.append("s.score IS NOT NULL")  # an unscored record is in no bucket
    return source, terms, _group_expression(query.group_by, at, param.dialect, query.scale)


def stats_sql(query: StatsQuery, dialect: Dialect) -> tuple[str, list[object]]:
    """Per group: the key, then `STATS_COLUMNS`, in one pass over the window."""
    param = Params(dialect)
    source, terms, group = stats_window(query, param)
    where = f" WHERE {' AND '.join(terms)}" if terms else ""
    sums = [
        *(f"SUM(CASE WHEN s.status = '{status}' THEN 1 ELSE 0 END)" for status in sorted(STATUSES)),
        *(f"SUM(CASE WHEN s.verdict = '{verdict}' THEN 1 ELSE 0 END)" for verdict in VERDICTS),
    ]
    sql = (
        f"SELECT {group or 'NULL'} AS g, COUNT(*), {', '.join(sums)}, COUNT(s.score),"
        " AVG(s.score), COALESCE(SUM(s.judge_calls), 0), COALESCE(SUM(s.judge_tokens), 0),"
        " SUM(CASE WHEN s.status_reason = 'overload_sampled' THEN 1 ELSE 0 END),"
        " COUNT(s.sample_rate)"
        f" FROM {source}{where}{' GROUP BY ' + group if group else ''} ORDER BY COUNT(*) DESC"
    )
    return sql, param.values


def p90_sql(query: StatsQuery, dialect: Dialect) -> tuple[str, list[object]]:
    """Per group, its nearest-rank p90 score (the ceil(0.9 n)-th smallest), with
    window functions, which both engines have: one sort of the window's scores."""
    param = Params(dialect)
    source, terms, group = stats_window(query, param)
    terms.append("s.score IS NOT NULL")
    partition = f"PARTITION BY {group} " if group else ""
    # (9n + 9) / 10 in integers is ceil(0.9 n), with no ceil() needed in SQLite.
    return (
        f"SELECT g, score FROM (SELECT {group or 'NULL'} AS g, s.score AS score,"
        f" ROW_NUMBER() OVER ({partition}ORDER BY s.score) AS rn,"
        f" COUNT(*) OVER ({partition.strip()}) AS n"
        f" FROM {source} WHERE {' AND '.join(terms)}) ranked WHERE rn = (9 * n + 9) / 10"
    ), param.values


def stats_rows(
    rows: Sequence[Sequence[Any]],
    p90: Callable[[object], float | None],
    *,
    group_by: GroupBy | None,
) -> list[StatsGroup]:
    """`stats_sql`'s rows as groups; `p90(key)` gives each group's p90 score."""
    groups = []
    statuses = sorted(STATUSES)
    for row in rows:
        key, records, *rest = row
        status_counts = rest[: len(statuses)]
        verdict_counts = rest[len(statuses) : len(statuses) + len(VERDICTS)]
        _, mean, calls, tokens, shed, reduced = rest[len(statuses) + len(VERDICTS) :]
        if group_by in TIME_BUCKETS and key is not None:
            key = float(key)
        elif group_by == "score" and key is not None:
            key = int(key)
        groups.append(
            StatsGroup(
                key=key,
                records=int(records),
                statuses=_counts(statuses, status_counts),
                verdicts=_counts(VERDICTS, verdict_counts),
                mean_score=None if mean is None else round(float(mean), 4),
                p90_score=p90(key),
                judge_calls=int(calls or 0),
                judge_tokens=int(tokens or 0),
                overload_sampled=int(shed or 0),
                at_reduced_rate=int(reduced or 0),
            )
        )
    if group_by in TIME_BUCKETS or group_by == "score":
        groups.sort(key=lambda group: float(group.key or 0))
    return groups


def _counts(names: Sequence[str], counts: Sequence[Any]) -> dict[str, int]:
    return {name: int(count or 0) for name, count in zip(names, counts, strict=True)}
