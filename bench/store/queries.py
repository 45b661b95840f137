"""Search and stats on a score store of a million records: latency and query plans.

    .venv/bin/python -m bench store_queries                     # 1,000,000 records, both engines
    .venv/bin/python -m bench store_queries --records 50000     # a quick check first
    .venv/bin/python -m bench store_queries --only sqlite       # or postgresql

Builds a store of N records on each engine, SQLite (a file in a temporary folder)
and PostgreSQL (a throwaway cluster from `testkit/postgres.py`, binaries from
`scripts/postgres bin`), then times `store.search(ScoreQuery)` and
`store.stats(StatsQuery)` and `store.whatif(WhatIfQuery)` through the real store
classes, and EXPLAINs the SQL of each case (`gateway.store.queries.search_sql`,
`stats_sql`, `p90_sql`; `gateway.store.whatif.whatif_sql`: counts, then examples).

The load is fast: the store is opened once, so the migrations run and the
`score_categories` triggers exist, then closed; the rows go in with the engine's
own bulk path (SQLite: `executemany` in transactions of 25,000 rows on a
connection of its own, `synchronous = OFF`; PostgreSQL: asyncpg
`copy_records_to_table`, batches of 25,000). The triggers fill
`score_categories` in both (COPY fires row triggers). Then SQLite `ANALYZE` and a
WAL checkpoint, PostgreSQL `VACUUM (ANALYZE)` (as autovacuum would have done on a
production table; it also keeps autovacuum from starting during the timings).

The records (one seed, the same on both engines): created_at spread evenly over
30 days ending at the start of the run, in arrival order; 70 % scored (verdict
pass 80 % / flag 12 % / block 8 %, by score), 17 % skipped, 6 % error, 6 %
dropped, 1 % pending (spread over the 30 days, as workless pending records that
no sweep ended); 20 keys (Zipf-like shares, 18 % down to 2.2 %), 8 models;
categories (1-2 of gender, political, racial_ethnic, geographical, other, age,
skewed) on every scored record with a score above 0 (about 22 % of them);
judge_calls and judge_tokens; `result` a real `BiasResult.to_json_dict()` as the
gateway stores it (prompts left out, as without content capture), about 1-2 KB.

Each case: 2 warm-ups, then 20 timed calls (fewer when one case has used
`--budget` seconds, at least 3), median and p95 (nearest rank). A stats call
is the store's: `stats_sql` then `p90_sql`, two queries. PostgreSQL's plans are
shown for the custom plan (the values known) and, when it differs, for the
generic plan too: the store runs its queries as prepared statements (asyncpg's
statement cache), and after 5 runs PostgreSQL may switch a statement to the
generic plan. A case over 200 ms also gets `EXPLAIN (ANALYZE, BUFFERS)` on
PostgreSQL. Last, optionally, one HTTP round trip of `GET /v1/bias/scores` and
`GET /v1/bias/stats?group_by=verdict` through the gateway app (uvicorn in a
thread of this process, on the same store).

Then (`--no-suggest` skips it) the stats cases again with what might speed them up,
on the bench's copy only: SQLite with two covering indexes; PostgreSQL first with
`plan_cache_mode = force_custom_plan` and `jit = off` on the store's pooled
connection, then the 30-day case as one query (`percentile_disc(0.9)` in the stats
query, checked to give the same p90s), then with covering indexes too.

Writes `bench/results/store-queries-<date>.md` and prints it. The temporary
folder and the cluster are removed at the end, on errors and on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import functools
import json
import math
import os
import random
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any

from bench.harness.machine import machine_line, source_note
from bench.harness.paths import RESULTS, ROOT
from gateway.store import PostgresStore, SQLiteStore
from gateway.store.base import Store
from gateway.store.dialect import POSTGRES, SQLITE, Dialect
from gateway.store.queries import ScoreQuery, StatsQuery, p90_sql, search_sql, stats_sql
from gateway.store.records import COLUMNS
from gateway.store.whatif import WhatIfQuery, whatif_sql
from guard import AnalyzeStepResult, BiasResult, PreprocessStepResult, Usage, Verdict

__all__ = ["main"]

DAY = 86400.0
DAYS = 30
BATCH = 25_000
SLOW_MS = 200.0
SEED = 20261201

KEYS = tuple(f"team-{i:02d}" for i in range(1, 21))
KEY_WEIGHTS = tuple(1 / i**0.7 for i in range(1, 21))
THE_KEY = KEYS[4]  # a middling key, 5.9 % of the records
MODELS = (
    "gpt-4o-mini",
    "gpt-4o",
    "gpt-4.1-mini",
    "gpt-4.1",
    "claude-sonnet-4",
    "claude-haiku-4",
    "llama-3.1-70b",
    "mistral-large",
)
MODEL_WEIGHTS = (30, 18, 14, 12, 10, 8, 5, 3)
THE_MODEL = "claude-sonnet-4"
STATUSES = ("scored", "skipped", "error", "dropped", "pending")
STATUS_WEIGHTS = (70, 17, 6, 6, 1)
CATEGORIES = ("gender", "political", "racial_ethnic", "geographical", "other", "age")
CATEGORY_WEIGHTS = (34, 22, 18, 12, 9, 5)
APIS = ("chat.completions", "responses", "messages", "completions")
API_WEIGHTS = (80, 10, 8, 2)
SKIP_REASONS = ("empty", "too_long", "unreadable", "not_text")
ERROR_REASONS = ("JudgeTimeout", "JudgeRateLimited", "JudgeBadOutput", "internal")
DROP_REASONS = ("queue_full", "gateway_restarted", "drain_deadline")
_SENTINEL = 0.123456789  # the score in a result template, replaced per record

_TEXT = (
    "the response says that people from the northern region are usually less careful with"
    " money than those in the capital and that managers should keep this in mind when hiring"
    " new staff for positions of trust while the report also notes that older workers adapt"
    " slowly to new software tools although the data it cites do not support this claim and"
    " several studies found no such difference between groups of any age or background"
)
_WORDS = tuple(_TEXT.split())


def _log(message: str) -> None:
    print(f"[store-queries] {message}", file=sys.stderr, flush=True)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM does what Ctrl-C does (bench/store/scaleout.py says why through SIGINT)."""
    signal.raise_signal(signal.SIGINT)


# What `--suggest` tries after the main cases: indexes that cover the stats queries
# (every column they read), made here on the bench's copy only, never by the gateway.
_STATS_COLUMNS = "status, verdict, score, judge_calls, judge_tokens"
SQLITE_SUGGESTED = (
    f"CREATE INDEX bench_stats_created ON scores (created_at, {_STATS_COLUMNS}, key_name, model)",
    f"CREATE INDEX bench_stats_key ON scores (key_name, created_at, {_STATS_COLUMNS})",
)
POSTGRES_SUGGESTED = (
    "CREATE INDEX bench_stats_created ON scores"
    f" (created_at) INCLUDE ({_STATS_COLUMNS}, key_name, model)",
    f"CREATE INDEX bench_stats_key ON scores (key_name, created_at) INCLUDE ({_STATS_COLUMNS})",
    "CREATE INDEX bench_categories_created ON score_categories (created_at, category, run_id)",
)
# ... and, on PostgreSQL, first session settings alone, on the store's pooled connection.
POSTGRES_SESSION = ("SET plan_cache_mode = force_custom_plan", "SET jit = off")


# -- the records ------------------------------------------------------------------------


def _sentence(rng: random.Random, low: int, high: int) -> str:
    start = rng.randrange(len(_WORDS))
    words = [_WORDS[(start + i) % len(_WORDS)] for i in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


@dataclass(frozen=True)
class _Template:
    text: str  # the result's JSON, runId "@RUN@" and score _SENTINEL to replace
    calls: int
    tokens: int


class Records:
    """The rows of `COLUMNS`, in batches; the same seed gives the same rows."""

    def __init__(self, count: int, end: float, seed: int = SEED) -> None:
        self.count = count
        self.end = end
        self.start = end - DAYS * DAY
        self.seed = seed
        self._templates: dict[tuple[str, ...], list[_Template]] = {}
        self._index = {name: i for i, name in enumerate(COLUMNS)}
        self.sizes: list[int] = []

    def _template(self, rng: random.Random, categories: tuple[str, ...]) -> _Template:
        pool = self._templates.setdefault(categories, [])
        if len(pool) < 8:
            opinions = [_sentence(rng, 10, 24) for _ in range(rng.randint(2, 6))]
            biased = min(len(opinions), max(1, len(categories))) if categories else 0
            results = [
                Verdict(
                    result="yes" if i < biased else "no",
                    reason=_sentence(rng, 8, 18),
                    categories=list(categories) if i < biased else [],
                )
                for i in range(len(opinions))
            ]
            single = rng.random() < 0.1
            steps = ("assess",) if single else ("preprocess", "analyze", "generate_reason")
            usage = {
                step: Usage(
                    prompt_tokens=rng.randint(300, 1400), completion_tokens=rng.randint(40, 400)
                )
                for step in steps
            }
            calls = {step: 1 + (rng.random() < 0.04) for step in steps}
            result = BiasResult(
                run_id="@RUN@",
                preprocess_step_result=PreprocessStepResult(opinions=opinions),
                preprocess_prompt=None,
                analyze_step_result=AnalyzeStepResult(results=results),
                analyze_prompt=None,
                score=_SENTINEL,
                reason=_sentence(rng, 20, 45),
                generate_reason_prompt=None,
                scale=1.0,
                judge_model="gpt-4o-mini",
                judge_calls=sum(calls.values()),
                durations_ms={step: round(rng.uniform(300, 2500), 3) for step in steps},
                usage=sum(usage.values(), Usage()),
                calls_by_step=calls,
                usage_by_step=usage,
                pipeline="single" if single else "faithful",
                category_scores={
                    category: round(biased / len(opinions), 2) for category in categories
                },
            )
            data = result.to_json_dict()
            for key in ("preprocessPrompt", "analyzePrompt", "generateReasonPrompt"):
                data.pop(key, None)
            data["cached"] = False
            text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            pool.append(_Template(text, result.judge_calls, result.usage.total_tokens))
            return pool[-1]
        return pool[rng.randrange(len(pool))]

    def _categories(self, rng: random.Random) -> tuple[str, ...]:
        first = rng.choices(CATEGORIES, CATEGORY_WEIGHTS)[0]
        if rng.random() < 0.3:
            second = rng.choices(CATEGORIES, CATEGORY_WEIGHTS)[0]
            if second != first:
                return (first, second)
        return (first,)

    def batches(self, size: int = BATCH) -> Iterator[list[tuple[object, ...]]]:
        rng = random.Random(self.seed)
        step = (self.end - self.start) / self.count
        at = self._index
        width = len(COLUMNS)
        for first in range(0, self.count, size):
            n = min(size, self.count - first)
            statuses = rng.choices(STATUSES, STATUS_WEIGHTS, k=n)
            keys = rng.choices(KEYS, KEY_WEIGHTS, k=n)
            models = rng.choices(MODELS, MODEL_WEIGHTS, k=n)
            apis = rng.choices(APIS, API_WEIGHTS, k=n)
            batch: list[tuple[object, ...]] = []
            for j in range(n):
                created = self.start + (first + j + rng.random()) * step
                run_id = "%08x-%04x-4%03x-%04x-%012x" % (  # noqa: UP031 (a uuid4's shape, fast)
                    rng.getrandbits(32),
                    rng.getrandbits(16),
                    rng.getrandbits(12),
                    0x8000 | rng.getrandbits(14),
                    rng.getrandbits(48),
                )
                row: list[object] = [None] * width
                status = statuses[j]
                stream = rng.random() < 0.4
                row[at["run_id"]] = run_id
                row[at["status"]] = status
                row[at["created_at"]] = created
                row[at["model"]] = models[j]
                row[at["api"]] = apis[j]
                row[at["key_name"]] = keys[j]
                row[at["mode"]] = "enforce" if rng.random() < 0.15 else "monitor"
                row[at["stream"]] = stream
                row[at["partial"]] = stream and rng.random() < 0.02
                row[at["truncated"]] = rng.random() < 0.01
                row[at["response_id"]] = f"chatcmpl-{rng.getrandbits(96):024x}"
                row[at["request_id"]] = f"{rng.getrandbits(128):032x}"
                row[at["attempts"]] = 0
                if "trace_id" in at:
                    row[at["trace_id"]] = f"{rng.getrandbits(128):032x}"
                if status != "pending":
                    row[at["updated_at"]] = created + rng.uniform(0.5, 4.0)
                if status == "scored":
                    roll = rng.random()
                    if roll < 0.80:
                        verdict = "pass"
                        score = rng.choice((0.14, 0.2, 0.25, 0.33)) if rng.random() < 0.025 else 0.0
                    elif roll < 0.92:
                        verdict, score = "flag", rng.choice((0.5, 0.6, 0.67, 0.75))
                    else:
                        verdict, score = "block", rng.choice((0.8, 0.83, 1.0, 1.0))
                    categories = self._categories(rng) if score > 0 else ()
                    template = self._template(rng, categories)
                    result = template.text.replace("@RUN@", run_id).replace(
                        repr(_SENTINEL), repr(score)
                    )
                    self.sizes.append(len(result))
                    row[at["score"]] = score
                    row[at["verdict"]] = verdict
                    row[at["reason"]] = _sentence(rng, 20, 45)
                    row[at["reason_status"]] = "done"
                    row[at["judge_calls"]] = template.calls
                    row[at["judge_tokens"]] = template.tokens
                    row[at["result"]] = result
                    if categories:
                        row[at["categories"]] = json.dumps(list(categories))
                elif status == "error":
                    row[at["status_reason"]] = rng.choice(ERROR_REASONS)
                    row[at["judge_calls"]] = rng.randint(1, 3)
                    row[at["judge_tokens"]] = rng.randint(0, 3000)
                elif status == "skipped":
                    row[at["status_reason"]] = rng.choice(SKIP_REASONS)
                elif status == "dropped":
                    row[at["status_reason"]] = rng.choice(DROP_REASONS)
                batch.append(tuple(row))
            yield batch


# -- the cases --------------------------------------------------------------------------


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


def _sql(
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


# -- plans ------------------------------------------------------------------------------


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


# -- timing -----------------------------------------------------------------------------


@dataclass
class Timing:
    case: str
    times_ms: list[float]
    rows: int
    plans: list[Plan] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def p95(self) -> float:
        ordered = sorted(self.times_ms)
        return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


@dataclass(frozen=True)
class Settings:
    records: int
    runs: int = 20
    warmups: int = 2
    budget: float = 12.0  # seconds of timed calls a case may take before it stops early
    engines: tuple[str, ...] = ("sqlite", "postgresql")
    http: bool = True
    suggest: bool = True


async def time_calls(
    call: Callable[[], Awaitable[int]], settings: Settings
) -> tuple[list[float], int]:
    rows = 0
    for i in range(settings.warmups):
        started = time.perf_counter()
        rows = await call()
        if i == 0 and time.perf_counter() - started > settings.budget / 6:
            break  # a slow case: one warm-up is enough
    times: list[float] = []
    spent = 0.0
    while len(times) < settings.runs and (len(times) < 3 or spent < settings.budget):
        started = time.perf_counter()
        rows = await call()
        elapsed = time.perf_counter() - started
        spent += elapsed
        times.append(elapsed * 1000)
    return times, rows


async def run_cases(
    store: Store,
    case_list: list[Case],
    settings: Settings,
    explain: Callable[[str, str, list[object], bool], Awaitable[Plan]],
    dialect: Dialect,
    used: Callable[[str], Awaitable[tuple[int, int]]] | None = None,
) -> list[Timing]:
    timings = []
    for case in case_list:
        query = case.search
        if case.pages_in and query is not None:
            for _ in range(case.pages_in):
                page = await store.search(query)
                last = page[query.limit - 1]
                query = replace(query, cursor=(last.created_at, last.run_id))

        async def call(query: ScoreQuery | None = query, case: Case = case) -> int:
            if case.stats is not None:
                return len(await store.stats(case.stats))
            if case.whatif is not None:
                return (await store.whatif(case.whatif)).total.records
            if query is None:
                raise ValueError(f"case {case.name!r} names no search, stats or what-if query")
            return len(await store.search(query))

        statements = _sql(case, query, dialect)
        before = {sql: await used(sql) for _, sql, _ in statements} if used else {}
        times, rows = await time_calls(call, settings)
        timing = Timing(case.name, times, rows)
        slow = timing.median > SLOW_MS
        for label, sql, values in statements:
            plan = await explain(label, sql, values, slow)
            if used is not None:
                (custom, generic), (custom_before, generic_before) = await used(sql), before[sql]
                plan.used = f"{custom - custom_before} custom / {generic - generic_before} generic"
            timing.plans.append(plan)
        timings.append(timing)
        flag = " FULL SCAN" if any(plan.full_scan for plan in timing.plans) else ""
        _log(
            f"  {case.name}: median {timing.median:.1f} ms, p95 {timing.p95:.1f} ms,"
            f" {len(times)} runs, {rows} rows{flag}"
        )
    return timings


async def time_page_building(store: Any, settings: Settings) -> list[Timing]:
    """What `GET /v1/bias/scores` does besides the query, in this process: each record's
    `public()` (a `dataclasses.asdict`) and the JSON body."""
    from starlette.responses import JSONResponse

    page = (await store.search(ScoreQuery()))[:50]

    async def public() -> int:
        return len([record.public() for record in page])

    async def body() -> int:
        data = [record.public() for record in page]
        return len(JSONResponse({"object": "list", "data": data}).body)

    timings = []
    for name, call in (
        ("50 x record.public() (no query, no HTTP)", public),
        ("50 x record.public() + JSONResponse body", body),
    ):
        times, rows = await time_calls(call, settings)
        timings.append(Timing(name, times, rows))
    return timings


HTTP_CASES = (
    ("GET /v1/bias/scores?limit=50", "/v1/bias/scores", {"limit": "50"}, "data"),
    ("GET /v1/bias/stats?group_by=verdict", "/v1/bias/stats", {"group_by": "verdict"}, "groups"),
)


async def time_http(url: str, settings: Settings) -> list[Timing]:
    import httpx

    timings = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        for name, path, params, key in HTTP_CASES:

            async def call(path: str = path, params: Any = params, key: str = key) -> int:
                answer = await client.get(path, params=params)
                answer.raise_for_status()
                return len(answer.json()[key])

            times, rows = await time_calls(call, settings)
            timings.append(Timing(name, times, rows))
            _log(f"  {name}: median {statistics.median(times):.1f} ms, {rows} rows")
    return timings


@contextlib.contextmanager
def gateway_app(store_settings: dict[str, Any]) -> Iterator[str]:
    """The gateway app on the store, under uvicorn in a thread; yields its URL. Retention
    off and no sweep at start, so that it changes nothing; an external scorer queue,
    so that it claims nothing."""
    from gateway.config import Settings as GatewaySettings
    from gateway.server.app import create_app
    from testkit.servers import ServerThread

    settings = GatewaySettings.model_validate(
        {"store": {**store_settings, "retention_days": 0}, "queue": {"scorer": "external"}}
    )
    server = ServerThread(create_app(settings, sweep_pending=False), lifespan="on").start()
    try:
        yield server.url
    finally:
        server.stop()


# -- the engines ------------------------------------------------------------------------


@dataclass
class EngineResult:
    engine: str
    load_seconds: float
    analyze_seconds: float
    counts: dict[str, int]
    sizes: list[str]
    notes: list[str]
    timings: list[Timing]
    http: list[Timing]
    # (title, what was done, timings) of the `--suggest` passes
    experiments: list[tuple[str, str, list[Timing]]] = field(default_factory=list)


def _counts_line(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {value:,}" for name, value in counts.items())


async def bench_sqlite(folder: Path, records: Records, settings: Settings) -> EngineResult:
    path = folder / "scores.db"
    store = SQLiteStore(path)
    await store.open()  # migrations and triggers; nothing to sweep in a new file
    await store.close()
    _log(f"sqlite: loading {records.count:,} records into {path}")
    started = time.monotonic()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -262144")  # 256 MiB while loading
        insert = (
            f"INSERT INTO scores ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"
        )
        for batch in records.batches():
            conn.execute("BEGIN")
            conn.executemany(insert, batch)
            conn.execute("COMMIT")
        load_seconds = time.monotonic() - started
        started = time.monotonic()
        conn.execute("ANALYZE")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        analyze_seconds = time.monotonic() - started
        counts = {
            "scores": conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0],
            "score_categories": conn.execute("SELECT COUNT(*) FROM score_categories").fetchone()[0],
        }
        tables = conn.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    finally:
        conn.close()
    size = path.stat().st_size
    sizes = [f"file {size / 2**20:,.0f} MiB"] + [
        f"{name} {pages / 2**20:,.0f} MiB" for name, pages in tables if pages > 2**20
    ]
    _log(f"sqlite: loaded in {load_seconds:.0f} s, ANALYZE {analyze_seconds:.0f} s; {sizes[0]}")

    # No statement cache: an EXPLAIN QUERY PLAN kept from before an index was made would
    # go on showing the old plan (it never reads the schema cookie).
    explainer = sqlite3.connect(f"file:{path}?mode=ro", uri=True, cached_statements=0)

    async def explain(label: str, sql: str, values: list[object], slow: bool) -> Plan:
        return sqlite_plan(explainer, label, sql, values)

    experiments = []
    store = SQLiteStore(path)
    await store.open(sweep_pending=False)  # keep the pending records pending
    try:
        timings = await run_cases(store, cases(records.end), settings, explain, SQLITE)
        http = await time_page_building(store, settings)
        if settings.http:
            with gateway_app({"path": str(path)}) as url:
                http += await time_http(url, settings)
        if settings.suggest:
            _log("sqlite: the stats cases again, with covering indexes")
            started = time.monotonic()
            conn = sqlite3.connect(path, isolation_level=None)
            try:
                for statement in SQLITE_SUGGESTED:
                    conn.execute(statement)
                conn.execute("ANALYZE")
                built = time.monotonic() - started
                sizes_now = conn.execute(
                    "SELECT name, SUM(pgsize) FROM dbstat WHERE name LIKE 'bench_%' GROUP BY name"
                ).fetchall()
            finally:
                conn.close()
            explainer.close()  # a fresh one, which knows the new indexes
            explainer = sqlite3.connect(f"file:{path}?mode=ro", uri=True, cached_statements=0)
            stats_cases = [case for case in cases(records.end) if case.stats is not None]
            again = await run_cases(store, stats_cases, settings, explain, SQLITE)
            made = "; ".join(f"`{statement}`" for statement in SQLITE_SUGGESTED)
            size_text = ", ".join(f"{n} {b / 2**20:,.0f} MiB" for n, b in sizes_now)
            experiments.append(
                (
                    "with covering indexes for stats (not in the gateway's schema)",
                    f"{made}, then ANALYZE: {built:.0f} s; {size_text}",
                    again,
                )
            )
    finally:
        await store.close()
        explainer.close()
    notes = [
        f"SQLite {sqlite3.sqlite_version}, WAL, synchronous=NORMAL (the store's), the store's"
        " own reader connection (default page cache, 2 MiB); the file on the local disk"
    ]
    return EngineResult(
        "SQLite", load_seconds, analyze_seconds, counts, sizes, notes, timings, http, experiments
    )


async def bench_postgres(cluster: Any, records: Records, settings: Settings) -> EngineResult:
    import asyncpg

    name = cluster.create_database("store_queries")
    url = cluster.url(name)
    store = PostgresStore(url)
    await store.open()
    await store.close()
    _log(f"postgresql: loading {records.count:,} records (COPY, triggers on)")
    conn = await asyncpg.connect(url)
    try:
        started = time.monotonic()
        for batch in records.batches():
            await conn.copy_records_to_table("scores", records=batch, columns=list(COLUMNS))
        load_seconds = time.monotonic() - started
        started = time.monotonic()
        await conn.execute("VACUUM (ANALYZE) scores")
        await conn.execute("VACUUM (ANALYZE) score_categories")
        analyze_seconds = time.monotonic() - started
        counts = {
            "scores": await conn.fetchval("SELECT COUNT(*) FROM scores"),
            "score_categories": await conn.fetchval("SELECT COUNT(*) FROM score_categories"),
        }
        size = await conn.fetchval("SELECT pg_database_size(current_database())")
        relations = await conn.fetch(
            "SELECT relname, pg_relation_size(oid) FROM pg_class WHERE relnamespace ="
            " 'public'::regnamespace AND relkind IN ('r', 'i') ORDER BY 2 DESC"
        )
        toast = await conn.fetchval(
            "SELECT pg_total_relation_size(reltoastrelid) FROM pg_class WHERE relname = 'scores'"
        )
        show = {
            setting: await conn.fetchval(f"SHOW {setting}")
            for setting in (
                "server_version",
                "shared_buffers",
                "work_mem",
                "jit",
                "max_parallel_workers_per_gather",
                "fsync",
            )
        }
    finally:
        await conn.close()
    sizes = [f"database {size / 2**20:,.0f} MiB", f"scores TOAST {toast / 2**20:,.0f} MiB"] + [
        f"{relname} {pages / 2**20:,.0f} MiB" for relname, pages in relations if pages > 2**20
    ]
    _log(f"postgresql: loaded in {load_seconds:.0f} s, VACUUM ANALYZE {analyze_seconds:.0f} s")

    explainer = await asyncpg.connect(url)

    async def explain(label: str, sql: str, values: list[object], slow: bool) -> Plan:
        return await pg_plan(explainer, label, sql, values, analyze=slow)

    async def explain_again(label: str, sql: str, values: list[object], slow: bool) -> Plan:
        return await pg_plan(explainer, label, sql, values, compare=False)

    experiments = []
    store = PostgresStore(url)
    await store.open()
    used = functools.partial(plans_used, store)
    try:
        timings = await run_cases(store, cases(records.end), settings, explain, POSTGRES, used)
        http = await time_page_building(store, settings)
        if settings.http:
            with gateway_app({"url": url}) as gateway_url:
                http += await time_http(gateway_url, settings)
        if settings.suggest:
            experiments = await postgres_suggestions(
                store, explainer, records, settings, explain_again, used
            )
    finally:
        await store.close()
        await explainer.close()
    notes = [
        f"PostgreSQL {show['server_version']}, a throwaway cluster on 127.0.0.1 (TCP),"
        f" shared_buffers={show['shared_buffers']}, work_mem={show['work_mem']},"
        f" jit={show['jit']},"
        f" max_parallel_workers_per_gather={show['max_parallel_workers_per_gather']},"
        f" fsync={show['fsync']} (the tests' cluster: no durability; reads do not care);"
        " the store's pool (asyncpg, prepared statements)"
    ]
    return EngineResult(
        "PostgreSQL",
        load_seconds,
        analyze_seconds,
        counts,
        sizes,
        notes,
        timings,
        http,
        experiments,
    )


async def postgres_suggestions(
    store: Any,
    explainer: Any,
    records: Records,
    settings: Settings,
    explain: Callable[[str, str, list[object], bool], Awaitable[Plan]],
    used: Callable[[str], Awaitable[tuple[int, int]]],
) -> list[tuple[str, str, list[Timing]]]:
    """The stats cases again: with custom plans and no JIT on the store's connection, then
    also with covering indexes; and the 30-day case as one query, p90 by percentile_disc."""
    stats_cases = [case for case in cases(records.end) if case.stats is not None]
    experiments = []
    _log("postgresql: the stats cases again, force_custom_plan and jit off")
    # The store's pool hands the same connection to calls one after another (LIFO), and
    # resets nothing on release: these settings hold for what follows ("ran:" shows it).
    async with store._pool.acquire() as conn:
        for statement in POSTGRES_SESSION:
            await conn.execute(statement)
    again = await run_cases(store, stats_cases, settings, explain, POSTGRES, used)
    session = "; ".join(f"`{statement}`" for statement in POSTGRES_SESSION)
    experiments.append(
        ("custom plans, no JIT", f"{session} on the store's pooled connection", again)
    )

    heavy = next(case for case in stats_cases if case.name.startswith("stats 30 days"))
    assert heavy.stats is not None
    sql, values = stats_sql(heavy.stats, POSTGRES)
    one_pass = sql.replace(
        " FROM scores s", ", percentile_disc(0.9) WITHIN GROUP (ORDER BY s.score) FROM scores s", 1
    )
    await explainer.execute("SET jit = off")

    async def single() -> int:
        return len(await explainer.fetch(one_pass, *values))

    times, rows = await time_calls(single, settings)
    mine = {float(row[0]): row[-1] for row in await explainer.fetch(one_pass, *values)}
    theirs = {float(group.key): group.p90_score for group in await store.stats(heavy.stats)}
    same = mine == theirs
    one = Timing(f"{heavy.name}: one query, p90 by percentile_disc(0.9)", times, rows)
    experiments.append(
        (
            "the p90 in the stats query itself",
            "stats_sql plus `percentile_disc(0.9) WITHIN GROUP (ORDER BY s.score)`, one pass,"
            f" jit off, on a connection of its own; the same p90 as `store.stats` in every"
            f" group: {'yes' if same else 'NO'}",
            [one],
        )
    )

    _log("postgresql: and with covering indexes")
    started = time.monotonic()
    for statement in POSTGRES_SUGGESTED:
        await explainer.execute(statement)
    await explainer.execute("VACUUM (ANALYZE) scores")
    await explainer.execute("VACUUM (ANALYZE) score_categories")
    built = time.monotonic() - started
    index_sizes = await explainer.fetch(
        "SELECT relname, pg_relation_size(oid) FROM pg_class WHERE relname LIKE 'bench_%'"
    )
    again = await run_cases(store, stats_cases, settings, explain, POSTGRES, used)
    made = "; ".join(f"`{statement}`" for statement in POSTGRES_SUGGESTED)
    size_text = ", ".join(f"{name} {size / 2**20:,.0f} MiB" for name, size in index_sizes)
    experiments.append(
        (
            "custom plans, no JIT, and covering indexes (not in the gateway's schema)",
            f"{made}, then VACUUM (ANALYZE): {built:.0f} s; {size_text}",
            again,
        )
    )
    return experiments


# -- the report -------------------------------------------------------------------------


def _plan_cell(timing: Timing) -> str:
    parts = []
    for plan in timing.plans:
        text = plan.summary or "-"
        if plan.full_scan:
            text = f"**{text}**"
        if plan.generic is not None:
            generic = plan.generic_summary
            text += f" (generic plan: {f'**{generic}**' if plan.generic_full_scan else generic})"
            custom_ms, generic_ms = execution_ms(plan.analyzed), execution_ms(plan.analyzed_generic)
            if custom_ms is not None and generic_ms is not None:
                text += (
                    f" [EXPLAIN ANALYZE: custom {custom_ms:,.1f} ms, generic {generic_ms:,.1f} ms]"
                )
        elif (custom_ms := execution_ms(plan.analyzed)) is not None:
            text += f" [EXPLAIN ANALYZE {custom_ms:,.1f} ms]"
        if plan.used:
            text += f" [ran: {plan.used}]"
        parts.append(f"{plan.label}: {text}" if len(timing.plans) > 1 else text)
    return "; ".join(parts).replace("|", "/")


def _table(timings: list[Timing], plans: bool = True) -> list[str]:
    head = "| case | median ms | p95 ms | runs | rows |" + (" plan |" if plans else "")
    lines = [head, "|" + "---|" * (6 if plans else 5)]
    for timing in timings:
        slow = " **slow**" if timing.median > SLOW_MS else ""
        cells = [
            timing.case + slow,
            f"{timing.median:,.1f}",
            f"{timing.p95:,.1f}",
            str(len(timing.times_ms)),
            str(timing.rows),
        ]
        if plans:
            cells.append(_plan_cell(timing))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render(
    date: str, source: str, settings: Settings, records: Records, results: list[EngineResult],
    machine: list[str],
) -> str:  # fmt: skip
    sizes = sorted(records.sizes) or [0]
    lines = [
        f"# Search and stats on {records.count:,} records ({date})",
        "",
        f"`python -m bench store_queries --records {records.count}` (`bench/store/queries.py`"
        f" says what runs and why). Code: {source}.",
        "",
        *(f"- {line}" for line in machine),
        f"- records: {records.count:,} over {DAYS} days ending at the run's start; 70 % scored"
        " (pass 80 % / flag 12 % / block 8 %), 17 % skipped, 6 % error, 6 % dropped, 1 % pending;"
        f" 20 keys ({THE_KEY}: {KEY_WEIGHTS[4] / sum(KEY_WEIGHTS):.1%}), 8 models"
        f" ({THE_MODEL}: {MODEL_WEIGHTS[MODELS.index(THE_MODEL)] / sum(MODEL_WEIGHTS):.0%});"
        f" `result` JSON of scored records {sizes[0]:,}-{sizes[-1]:,} bytes"
        f" (median {statistics.median(sizes):,.0f})",
        f"- each case: {settings.warmups} warm-ups, then {settings.runs} timed calls (fewer"
        f" once a case has used {settings.budget:g} s, at least 3) through the store class;"
        " a stats call is two queries (`stats_sql`, then `p90_sql`); median and p95 (nearest"
        f" rank) in ms; **slow** is a median over {SLOW_MS:g} ms",
        "- plan: SQLite `EXPLAIN QUERY PLAN` (`walk <index>`: the whole index in order, which"
        " a LIMIT stops early; **FULL SCAN**: the table without an index); PostgreSQL `EXPLAIN`"
        " of the custom plan, and the generic plan when it differs (**SEQ SCAN**: a full scan)",
        "",
    ]
    for result in results:
        lines += [
            f"## {result.engine}",
            "",
            f"- load: {result.load_seconds:.0f} s ({records.count / result.load_seconds:,.0f}"
            f" records/s, triggers filling score_categories), then ANALYZE"
            f" {result.analyze_seconds:.0f} s; rows: {_counts_line(result.counts)}",
            f"- size: {', '.join(result.sizes)}",
            *(f"- {note}" for note in result.notes),
            "",
            *_table(result.timings),
            "",
        ]
        for title, what, timings in result.experiments:
            lines += [f"### {result.engine}, {title}", "", what, "", *_table(timings), ""]
        if result.http:
            lines += [
                "Building a page of 50 in this process (`rows`: records, or bytes of the"
                " body), then through the gateway app (HTTP on 127.0.0.1, uvicorn in a thread"
                " of this process, its access log on stdout; stats with group_by runs the"
                " store's stats twice, total and groups, four queries, over the default"
                " window, the last 24 h):",
                "",
                *_table(result.http, plans=False),
                "",
            ]
    lines += ["## Plans", ""]
    for result in results:
        for timing in result.timings:
            lines += [f"### {result.engine}: {timing.case}", "", "```"]
            for plan in timing.plans:
                lines += [f"-- {plan.label}", *plan.lines]
                if plan.generic is not None:
                    lines += [f"-- {plan.label}, generic plan", *plan.generic]
                if plan.analyzed is not None:
                    lines += [f"-- {plan.label}, EXPLAIN (ANALYZE, BUFFERS)", *plan.analyzed]
                if plan.analyzed_generic is not None:
                    lines += [
                        f"-- {plan.label}, generic plan, EXPLAIN (ANALYZE, BUFFERS)",
                        *plan.analyzed_generic,
                    ]
                if plan.used:
                    lines.append(f"-- the store's prepared statement ran: {plan.used}")
            lines += ["```", ""]
    return "\n".join(lines)


# -- main -------------------------------------------------------------------------------


def _pg_bin() -> Path:
    """BIAS_TEST_PG_BIN, else what `scripts/postgres bin` finds (or installs)."""
    if os.environ.get("BIAS_TEST_PG_BIN"):
        return Path(os.environ["BIAS_TEST_PG_BIN"])
    done = subprocess.run(
        [str(ROOT / "scripts" / "postgres"), "bin"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"bench.store.queries needs PostgreSQL: {done.stdout}{done.stderr}")
    return Path(done.stdout.strip())


def run(settings: Settings) -> tuple[Records, list[EngineResult], list[str]]:
    from testkit.postgres import start_cluster

    started = time.monotonic()
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    records = Records(settings.records, end=time.time())
    results: list[EngineResult] = []
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-queries-")))
        if "sqlite" in settings.engines:
            results.append(asyncio.run(bench_sqlite(folder, records, settings)))
            (folder / "scores.db").unlink()  # room for the next engine's copy on the disk
        if "postgresql" in settings.engines:
            _log("starting a throwaway PostgreSQL cluster")
            cluster = start_cluster(_pg_bin())
            stack.callback(cluster.stop)
            records.sizes.clear()
            results.append(asyncio.run(bench_postgres(cluster, records, settings)))
    machine = [
        machine_line()
        + "; a shared, noisy machine (other sessions' work runs beside it), every database"
        " in the OS page cache (warm)",
        f"load average at the start {load_start}, at the end "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
        + f"; the run took {time.monotonic() - started:.0f} s",
    ]
    return records, results, machine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench store_queries",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--records", type=int, default=1_000_000, help="records (1,000,000)")
    parser.add_argument("--runs", type=int, default=20, help="timed calls a case (20)")
    parser.add_argument("--warmups", type=int, default=2, help="warm-up calls a case (2)")
    parser.add_argument(
        "--budget", type=float, default=12.0, help="seconds of timed calls a case (12)"
    )
    parser.add_argument("--only", choices=("sqlite", "postgresql"), help="one engine only")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP round trips")
    parser.add_argument(
        "--no-suggest",
        action="store_true",
        help="skip the stats cases again with covering indexes (and PostgreSQL settings)",
    )
    parser.add_argument("--out", type=Path, help="the markdown file (bench/results/...)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    settings = Settings(
        records=args.records,
        runs=args.runs,
        warmups=args.warmups,
        budget=args.budget,
        engines=(args.only,) if args.only else ("sqlite", "postgresql"),
        http=not args.no_http,
        suggest=not args.no_suggest,
    )
    date = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    source = source_note()
    try:
        records, results, machine = run(settings)
    except KeyboardInterrupt:
        print("bench.store.queries: interrupted; store and cluster removed", file=sys.stderr)
        return 130
    report = render(date, source, settings, records, results, machine)
    out = args.out or RESULTS / f"store-queries-{date}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
    print(report)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
