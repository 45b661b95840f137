"""What a pair of thresholds would have done to a window's records, as SQL for either
engine. Pure.

`WhatIfQuery` names the window (a `ScoreQuery`'s filters), the thresholds, and how
many examples to give. `whatif_sql` makes two statements of it, and `whatif_result`
turns their rows into a `WhatIf`:

- the counts: one UNION ALL of four aggregates over the window, the whole of it and
  grouped by key, model and category (the `groups` largest of each), each a GROUP BY
  with CASE on the rules: block at `score >= block` or, when the block count is set,
  at `biased_opinions >=` it, else flag likewise, else pass, as a policy decides
  (`gateway.scoring.policy.verdict_for`; a record from before the count was kept
  meets no count rule). Only
  `scored` records meet the thresholds; the others are counted apart, by status. A
  record counts once in the total and once in each of its categories; one without a
  category is in no category's group.
- the examples: the newest scored records the thresholds would flag, and the newest
  they would block.

Both read the windows the stats queries read, through the same indexes
(`gateway.store.queries`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.domain import STATUSES, VERDICTS
from gateway.store.dialect import Dialect
from gateway.store.queries import GroupBy, Params, ScoreQuery, StatsQuery, stats_window

__all__ = [
    "DIMENSIONS",
    "WhatIf",
    "WhatIfCounts",
    "WhatIfExample",
    "WhatIfQuery",
    "whatif_result",
    "whatif_sql",
]

DIMENSIONS: tuple[GroupBy, ...] = ("key", "model", "category")
MAX_GROUPS = 50  # per dimension, the largest first
_STATUSES = sorted(STATUSES)
_SCORED = "s.status = 'scored'"


@dataclass(frozen=True, slots=True)
class WhatIfQuery:
    """The records of `filters` (its `limit` and `cursor` aside) against `flag` and
    `block`, on the judge's scale; `examples` of each of flag and block."""

    filters: ScoreQuery
    flag: float
    block: float
    examples: int = 10
    groups: int = MAX_GROUPS
    # The count rules (a policy's `flag_biased_opinions`, `block_biased_opinions`);
    # None: that rule is off.
    flag_biased_opinions: int | None = None
    block_biased_opinions: int | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.flag <= self.block:
            raise ValueError(
                f"thresholds must be 0 <= flag <= block, not {self.flag}, {self.block}"
            )
        flag_n, block_n = self.flag_biased_opinions, self.block_biased_opinions
        if any(n is not None and n < 1 for n in (flag_n, block_n)) or (
            flag_n is not None and block_n is not None and flag_n > block_n
        ):
            raise ValueError(
                f"biased opinion counts must be >= 1 with flag <= block, not {flag_n}, {block_n}"
            )


@dataclass(slots=True)
class WhatIfCounts:
    """One group's counts (or the whole window's, with `key` None)."""

    key: str | None  # the key's name, the model or the category
    records: int
    statuses: dict[str, int]  # every status, `scored` included
    actual: dict[str, int]  # the verdicts the scored records were given
    would: dict[str, int]  # the verdicts the thresholds would give them

    @property
    def scored(self) -> int:
        return self.statuses["scored"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "records": self.records,
            "scored": self.scored,
            "unscored": self.records - self.scored,
            "status": self.statuses,
            "actual": self.actual,
            "would": self.would,
        }


@dataclass(frozen=True, slots=True)
class WhatIfExample:
    """A scored record the thresholds would flag or block; its text only if content
    capture stored it."""

    run_id: str
    created_at: float
    score: float
    verdict: str | None  # the verdict it was given
    key_name: str | None
    model: str | None
    mode: str | None
    categories: list[str] | None
    prompt: str | None
    completion: str | None


_EXAMPLE_COLUMNS = tuple(field.name for field in dataclasses.fields(WhatIfExample))


@dataclass(slots=True)
class WhatIf:
    query: WhatIfQuery
    total: WhatIfCounts
    groups: dict[str, list[WhatIfCounts]]  # by dimension: key, model, category
    truncated: list[str]  # the dimensions that had more than `query.groups` groups
    examples: dict[str, list[WhatIfExample]]  # "flag" and "block", newest first

    def to_dict(self) -> dict[str, Any]:
        filters = self.query.filters
        return {
            "object": "bias.whatif",
            "since": filters.since,
            "until": filters.until,
            "thresholds": {"flag": self.query.flag, "block": self.query.block},
            "biased_opinions": {
                "flag": self.query.flag_biased_opinions,
                "block": self.query.block_biased_opinions,
            },
            "total": self.total.to_dict(),
            "groups": {name: [g.to_dict() for g in found] for name, found in self.groups.items()},
            "groups_truncated": self.truncated,
            "examples": {
                verdict: [dataclasses.asdict(example) for example in found]
                for verdict, found in self.examples.items()
            },
        }


def _met(threshold: str, count: str | None) -> str:
    """A rule as SQL: the score at `threshold`, or the biased opinions at `count`."""
    if count is None:
        return f"s.score >= {threshold}"
    return f"(s.score >= {threshold} OR COALESCE(s.biased_opinions, 0) >= {count})"


def _would(flag: str, block: str, flag_n: str | None, block_n: str | None) -> tuple[str, str, str]:
    """When a scored record would pass, flag and block, as SQL conditions (the
    placeholders in `block`, `block_n`, `flag`, `flag_n` appear in that order)."""
    blocks = _met(block, block_n)
    flags = _met(flag, flag_n)
    return f"NOT {blocks} AND NOT {flags}", f"NOT {blocks} AND {flags}", blocks


def _sums(query: WhatIfQuery) -> str:
    """Per status, per verdict given, per verdict the thresholds would give."""
    statuses = (f"SUM(CASE WHEN s.status = '{status}' THEN 1 ELSE 0 END)" for status in _STATUSES)
    actual = (
        f"SUM(CASE WHEN {_SCORED} AND s.verdict = '{verdict}' THEN 1 ELSE 0 END)"
        for verdict in VERDICTS
    )
    flag_n = None if query.flag_biased_opinions is None else "t.flag_n"
    block_n = None if query.block_biased_opinions is None else "t.block_n"
    would = (
        f"SUM(CASE WHEN {_SCORED} AND {condition} THEN 1 ELSE 0 END)"
        for condition in _would("t.flag", "t.block", flag_n, block_n)
    )
    return ", ".join(["COUNT(*)", *statuses, *actual, *would])


def _counts_sql(query: WhatIfQuery, dialect: Dialect) -> tuple[str, list[object]]:
    param = Params(dialect)
    # The thresholds first, once, ahead of the filters' values: `?` placeholders are
    # bound in the order they appear.
    thresholds = (
        f"WITH t AS (SELECT CAST({param(query.flag)} AS {dialect.real}) AS flag,"
        f" CAST({param(query.block)} AS {dialect.real}) AS block,"
        f" CAST({param(query.flag_biased_opinions)} AS INTEGER) AS flag_n,"
        f" CAST({param(query.block_biased_opinions)} AS INTEGER) AS block_n)"
    )
    sums = _sums(query)
    branches = []
    for dimension in (None, *DIMENSIONS):
        source, terms, group = stats_window(StatsQuery(query.filters, dimension), param)
        where = f" WHERE {' AND '.join(terms)}" if terms else ""
        select = (
            f"SELECT '{dimension or 'total'}' AS dimension, {group or 'NULL'} AS g, {sums}"
            f" FROM {source} CROSS JOIN t{where}"
        )
        if group is not None:
            order = f"COUNT(*) DESC, {group} IS NULL, {group}"
            select = (
                f"SELECT * FROM ({select} GROUP BY {group} ORDER BY {order}"
                f" LIMIT {param(query.groups + 1)}) AS by_{dimension}"
            )
        branches.append(select)
    return f"{thresholds} {' UNION ALL '.join(branches)}", param.values


def _examples_sql(query: WhatIfQuery, dialect: Dialect) -> tuple[str, list[object]]:
    param = Params(dialect)
    by_category = query.filters.category is not None
    at, order_id = ("c.created_at", "c.run_id") if by_category else ("s.created_at", "s.run_id")
    columns = ", ".join(f"s.{name}" for name in _EXAMPLE_COLUMNS)
    branches = []
    for verdict in ("flag", "block"):
        source, terms, _ = stats_window(StatsQuery(query.filters), param)
        terms.append(_SCORED)
        # Placeholders made in the order `_would` writes them, and only those used.
        block, block_n = param(query.block), _count_param(param, query.block_biased_opinions)
        if verdict == "flag":
            flag, flag_n = param(query.flag), _count_param(param, query.flag_biased_opinions)
            terms.append(_would(flag, block, flag_n, block_n)[1])
        else:
            terms.append(_met(block, block_n))
        branches.append(
            f"SELECT * FROM (SELECT '{verdict}' AS would, {columns} FROM {source}"
            f" WHERE {' AND '.join(terms)} ORDER BY {at} DESC, {order_id} DESC"
            f" LIMIT {param(query.examples)}) AS {verdict}_examples"
        )
    return " UNION ALL ".join(branches), param.values


def _count_param(param: Params, count: int | None) -> str | None:
    return None if count is None else param(count)


def whatif_sql(
    query: WhatIfQuery, dialect: Dialect
) -> tuple[tuple[str, list[object]], tuple[str, list[object]]]:
    """The counts statement and the examples statement, each with its values."""
    return _counts_sql(query, dialect), _examples_sql(query, dialect)


def _counts(key: Any, values: Sequence[Any]) -> WhatIfCounts:
    records, *rest = (int(value or 0) for value in values)
    statuses = rest[: len(_STATUSES)]
    actual = rest[len(_STATUSES) : len(_STATUSES) + len(VERDICTS)]
    would = rest[len(_STATUSES) + len(VERDICTS) :]
    return WhatIfCounts(
        key=None if key is None else str(key),
        records=records,
        statuses=dict(zip(_STATUSES, statuses, strict=True)),
        actual=dict(zip(VERDICTS, actual, strict=True)),
        would=dict(zip(VERDICTS, would, strict=True)),
    )


def whatif_result(
    query: WhatIfQuery, count_rows: Sequence[Sequence[Any]], example_rows: Sequence[Sequence[Any]]
) -> WhatIf:
    """`whatif_sql`'s rows as a `WhatIf`."""
    total = _counts(None, [0] * (1 + len(_STATUSES) + 2 * len(VERDICTS)))
    groups: dict[str, list[WhatIfCounts]] = {dimension: [] for dimension in DIMENSIONS}
    for dimension, key, *values in count_rows:
        if dimension == "total":
            total = _counts(None, values)
        else:
            groups[dimension].append(_counts(key, values))
    truncated = []
    for dimension, found in groups.items():
        # The engines order NULLs and text alike here, so both answer the same.
        found.sort(key=lambda group: (-group.records, group.key is None, group.key or ""))
        if len(found) > query.groups:
            del found[query.groups :]
            truncated.append(dimension)
    examples: dict[str, list[WhatIfExample]] = {"flag": [], "block": []}
    for would, *values in example_rows:
        fields = dict(zip(_EXAMPLE_COLUMNS, values, strict=True))
        if fields["categories"] is not None:
            fields["categories"] = json.loads(fields["categories"])
        examples[would].append(WhatIfExample(**fields))
    for found_examples in examples.values():  # a UNION ALL promises no order of its own
        found_examples.sort(key=lambda example: (example.created_at, example.run_id), reverse=True)
    return WhatIf(query, total, groups, truncated, examples)
