"""The searches and stats the scenario times, and the query plans each engine picks."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from bench.store.queries.records import DAY, DAYS, THE_KEY, THE_MODEL
from gateway.store.dialect import Dialect
from gateway.store.queries import ScoreQuery, StatsQuery, p90_sql, search_sql, stats_sql
from gateway.store.whatif import WhatIfQuery, whatif_sql

SLOW_MS = 200.0


@dataclass(frozen=True)
class Case:
    name: str
    search: ScoreQuery | None = None
    stats: StatsQuery | None = None
    whatif: WhatIfQuery | None = None
    pages_in: int = 0  # follow the cursor this many pages first, then time the next


def cases(end: float) -> list[Case]:
    day = end - DAY
    window = ScoreQuery(since=day, until=end)  # what GET /v1/bias/stats asks by default
    return [
        Case("list newest 50", search=ScoreQuery()),
        Case("verdict=block", search=ScoreQuery(verdict=("block",))),
        Case("verdict=flag,block", search=ScoreQuery(verdict=("flag", "block"))),
        Case(f"key={THE_KEY}", search=ScoreQuery(key=THE_KEY)),
        Case(f"key={THE_KEY} + verdict=block", search=ScoreQuery(key=THE_KEY, verdict=("block",))),
        Case(f"model={THE_MODEL}", search=ScoreQuery(model=THE_MODEL)),
        Case("category=gender", search=ScoreQuery(category="gender")),
        Case("category=age (rarer)", search=ScoreQuery(category="age")),
        Case("min_score=0.8 + last 24 h", search=ScoreQuery(min_score=0.8, since=day)),
        Case("status=pending", search=ScoreQuery(status="pending")),
        Case("status=error", search=ScoreQuery(status="error")),
        Case("page 21 (cursor, 20 pages in)", search=ScoreQuery(), pages_in=20),
        Case("stats 24 h", stats=StatsQuery(window)),
        Case("stats 24 h by verdict", stats=StatsQuery(window, "verdict")),
        Case("stats 24 h by model", stats=StatsQuery(window, "model")),
        Case("stats 24 h by key", stats=StatsQuery(window, "key")),
        Case("stats 24 h by category", stats=StatsQuery(window, "category")),
        Case("stats 24 h by hour", stats=StatsQuery(window, "hour")),
        Case("stats 24 h by score", stats=StatsQuery(window, "score")),
        Case(
            "stats 30 days by day",
            stats=StatsQuery(ScoreQuery(since=end - DAYS * DAY - 1, until=end + 1), "day"),
        ),
        Case(
            f"stats key={THE_KEY}, 7 days",
            stats=StatsQuery(ScoreQuery(key=THE_KEY, since=end - 7 * DAY, until=end)),
        ),
        # What GET /v1/bias/whatif asks by default, and over a week.
        Case("whatif 24 h", whatif=WhatIfQuery(window, flag=0.5, block=0.7)),
        Case(
            "whatif 7 days",
            whatif=WhatIfQuery(ScoreQuery(since=end - 7 * DAY, until=end), flag=0.5, block=0.7),
        ),
        Case(
            f"whatif key={THE_KEY}, 7 days",
            whatif=WhatIfQuery(
                ScoreQuery(key=THE_KEY, since=end - 7 * DAY, until=end), flag=0.5, block=0.7
            ),
        ),
    ]


def case_sql(
    case: Case, query: ScoreQuery | None, dialect: Dialect
) -> list[tuple[str, str, list[object]]]:
    """(label, sql, values) of what the case runs, in `dialect`."""
    if case.stats is not None:
        return [
            ("stats", *stats_sql(case.stats, dialect)),
            ("p90", *p90_sql(case.stats, dialect)),
        ]
    if case.whatif is not None:
        counts, examples = whatif_sql(case.whatif, dialect)
        return [("whatif counts", *counts), ("whatif examples", *examples)]
    assert query is not None
    return [("search", *search_sql(query, dialect))]


@dataclass
class Plan:
    label: str
    lines: list[str]
    summary: str
    full_scan: bool
    generic: list[str] | None = None  # PostgreSQL: the generic plan, when it differs
    generic_summary: str = ""
    generic_full_scan: bool = False
    analyzed: list[str] | None = None  # EXPLAIN (ANALYZE, BUFFERS) of the custom plan
    analyzed_generic: list[str] | None = None  # ... and of the generic one
    used: str = ""  # PostgreSQL: how often the store's prepared statement ran which plan


_SQLITE_TABLE_SCAN = re.compile(r"^SCAN (s|c)$")
_SQLITE_WALK = re.compile(r"^SCAN (s|c) USING (COVERING )?INDEX (\S+)$")


def sqlite_plan(conn: sqlite3.Connection, label: str, sql: str, values: list[object]) -> Plan:
    rows = conn.execute(f"EXPLAIN QUERY PLAN {sql}", values).fetchall()
    depth: dict[int, int] = {0: -1}
    lines, parts, full = [], [], False
    for node, parent, _, detail in rows:
        depth[node] = depth.get(parent, -1) + 1
        lines.append("  " * depth[node] + detail)
        if _SQLITE_TABLE_SCAN.match(detail):
            full = True
            parts.append(f"FULL SCAN {detail[5:]}")
        elif match := _SQLITE_WALK.match(detail):
            parts.append(f"walk {match.group(3)}")
        elif detail.startswith("SEARCH "):
            found = re.sub(r"^SEARCH (\S+) USING ", "", detail)
            parts.append(found.replace("COVERING INDEX ", "covering ").replace("INDEX ", ""))
        elif "TEMP B-TREE" in detail:
            parts.append(detail.replace("USE TEMP B-TREE FOR ", "sort ").lower())
    return Plan(label, lines, ", ".join(parts), full)


_PG_SCAN = re.compile(
    r"(Parallel )?(Seq Scan|Index Only Scan Backward|Index Only Scan|Index Scan Backward"
    r"|Index Scan|Bitmap Index Scan)(?: using (\S+))? on (\S+)"
)


def pg_summary(lines: list[str]) -> tuple[str, bool]:
    parts, full = [], False
    for line in lines:
        match = _PG_SCAN.search(line)
        if match is None:
            if re.search(r"\b(Sort|Incremental Sort|HashAggregate|WindowAgg)\b", line):
                word = line.strip().lstrip("-> ").split("  ")[0]
                if word.startswith(("Sort", "Incremental Sort")) and "Key" not in word:
                    parts.append(word.split(" (")[0].lower())
            continue
        parallel, kind, index, table = match.groups()
        if kind == "Seq Scan":
            full = True
            parts.append(f"{'Parallel ' if parallel else ''}SEQ SCAN {table}")
        elif kind == "Bitmap Index Scan":
            parts.append(f"bitmap {table}")
        else:
            short = kind.replace("Index Only Scan", "index-only").replace("Index Scan", "index")
            parts.append(f"{short.lower()} {index}")
    return ", ".join(parts), full


def execution_ms(lines: list[str] | None) -> float | None:
    for line in lines or ():
        if line.startswith("Execution Time:"):
            return float(line.split()[2])
    return None


async def plans_used(store: Any, sql: str) -> tuple[int, int]:
    """How often the store's prepared `sql` has run a custom and a generic plan so far
    (its pool reuses one connection for calls one after another: asyncpg's is LIFO)."""
    async with store._pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT custom_plans, generic_plans FROM pg_prepared_statements WHERE statement = $1",
            sql,
        )
    return sum(row[0] for row in rows), sum(row[1] for row in rows)


def _literal(value: object) -> str:
    if value is None:  # a parameter the query tests with `IS NULL`, as the store passes it
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    raise TypeError(f"no literal for {value!r}")


async def pg_plan(
    conn: Any,
    label: str,
    sql: str,
    values: list[object],
    *,
    analyze: bool = False,
    compare: bool = True,
) -> Plan:
    """The custom plan (and the generic one, when it differs) of a prepared `sql`."""
    await conn.execute(f"PREPARE bench_q AS {sql}")
    try:
        arguments = ", ".join(_literal(value) for value in values)
        execute = f"EXECUTE bench_q({arguments})" if values else "EXECUTE bench_q"
        plans = {}
        for mode in ("force_custom_plan", "force_generic_plan"):
            await conn.execute(f"SET plan_cache_mode = {mode}")
            plans[mode] = [row[0] for row in await conn.fetch(f"EXPLAIN {execute}")]
        custom, generic = plans["force_custom_plan"], plans["force_generic_plan"]
        summary, full = pg_summary(custom)
        plan = Plan(label, custom, summary, full)
        generic_summary, generic_full = pg_summary(generic)
        if generic_summary != summary:
            plan.generic, plan.generic_summary = generic, generic_summary
            plan.generic_full_scan = generic_full
        # Slow, or two plans: run them, to see which is faster on these data.
        if analyze or (compare and plan.generic is not None):
            await conn.execute("SET plan_cache_mode = force_custom_plan")
            rows = await conn.fetch(f"EXPLAIN (ANALYZE, BUFFERS) {execute}")
            plan.analyzed = [row[0] for row in rows]
        if compare and plan.generic is not None:
            await conn.execute("SET plan_cache_mode = force_generic_plan")
            rows = await conn.fetch(f"EXPLAIN (ANALYZE, BUFFERS) {execute}")
            plan.analyzed_generic = [row[0] for row in rows]
    finally:
        await conn.execute("RESET plan_cache_mode")
        await conn.execute("DEALLOCATE bench_q")
    return plan
