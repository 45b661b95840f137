"""The store's workload as SQL, and the records the drivers write."""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from gateway.store import ScoreRecord

# The SQLite store's columns, in ScoreRecord order, with their PostgreSQL types.
COLUMNS = tuple(f.name for f in dataclasses.fields(ScoreRecord))
PG_TYPES = {
    "run_id": "text",
    "status": "text",
    "created_at": "float8",
    "model": "text",
    "api": "text",
    "key_name": "text",
    "mode": "text",
    "stream": "bool",
    "partial": "bool",
    "truncated": "bool",
    "score": "float8",
    "verdict": "text",
    "reason": "text",
    "reason_status": "text",
    "status_reason": "text",
    "judge_calls": "int4",
    "judge_tokens": "int4",
    "result": "jsonb",
    "response_id": "text",
    "request_id": "text",
    "prompt": "text",
    "completion": "text",
    "updated_at": "float8",
    "work": "jsonb",
    "attempts": "int4",
    "lease_until": "float8",
    "leased_by": "text",
    "categories": "jsonb",
    "trace_id": "text",
    "sample_rate": "float8",
    "biased_opinions": "int4",
    "tamper": "jsonb",
    "normalised": "jsonb",
}
if tuple(PG_TYPES) != COLUMNS:
    raise SystemExit("bench/store/drivers/sql.py: PG_TYPES no longer matches ScoreRecord's fields")


_NOT_NULL = {"run_id", "status", "created_at", "stream", "partial", "truncated"}
_DEFAULT_FALSE = {"stream", "partial", "truncated"}
SCHEMA = (
    "CREATE TABLE scores ("
    + ", ".join(
        f"{name} {PG_TYPES[name]}"
        + (" PRIMARY KEY" if name == "run_id" else "")
        + (" NOT NULL" if name in _NOT_NULL and name != "run_id" else "")
        + (" DEFAULT false" if name in _DEFAULT_FALSE else "")
        for name in COLUMNS
    )
    + ");"
    " CREATE INDEX scores_status ON scores (status);"
    " CREATE INDEX scores_created_at ON scores (created_at);"
    " CREATE TABLE score_cache (seq bigserial PRIMARY KEY, key text NOT NULL UNIQUE,"
    " result text NOT NULL, stored_at float8 NOT NULL);"
    " CREATE TABLE jobs (id bigserial PRIMARY KEY, run_id text NOT NULL,"
    " state text NOT NULL DEFAULT 'queued', claimed_by int, claimed_at float8);"
    " CREATE INDEX jobs_queued ON jobs (id) WHERE state = 'queued';"
)


CACHE_LIMIT = 10_000
LOOKUP_ROWS = 50_000
POOL_SIZE = 10
CLAIM_WORKERS = 4
CLAIM_JOBS = 60_000
CHANNEL = "bench_wake"


def _ph(index: int, style: str) -> str:
    # psycopg: %b, parameters in binary (%s sends str as text and arrays as text literals,
    # built in Python: unnest took 77 us CPU a record with %s, 22 with %b, here).
    return f"${index}" if style == "dollar" else "%b"


def _set_clause() -> str:
    return ", ".join(f"{name} = excluded.{name}" for name in COLUMNS if name != "run_id")


def upsert_sql(style: str) -> str:
    values = ", ".join(
        _ph(i + 1, style) + ("::jsonb" if name == "result" else "")
        for i, name in enumerate(COLUMNS)
    )
    return (
        f"INSERT INTO scores ({', '.join(COLUMNS)}) VALUES ({values})"
        f" ON CONFLICT (run_id) DO UPDATE SET {_set_clause()}"
    )


def unnest_sql(style: str) -> str:
    arrays = ", ".join(f"{_ph(i + 1, style)}::{PG_TYPES[name]}[]" for i, name in enumerate(COLUMNS))
    return (
        f"INSERT INTO scores ({', '.join(COLUMNS)}) SELECT * FROM unnest({arrays})"
        f" ON CONFLICT (run_id) DO UPDATE SET {_set_clause()}"
    )


TEMP_TABLE = "CREATE TEMP TABLE scores_in (LIKE scores) ON COMMIT DELETE ROWS"
MERGE = (
    f"INSERT INTO scores ({', '.join(COLUMNS)}) SELECT {', '.join(COLUMNS)} FROM scores_in"
    f" ON CONFLICT (run_id) DO UPDATE SET {_set_clause()}"
)


# As SQLite's INSERT OR REPLACE: a re-put key gets a new, highest seq.
_CACHE_SET = (
    " ON CONFLICT (key) DO UPDATE SET seq = nextval('score_cache_seq_seq'),"
    " result = excluded.result, stored_at = excluded.stored_at"
)


def cache_put_sql(style: str) -> str:
    return (
        "INSERT INTO score_cache (key, result, stored_at) VALUES"
        f" ({_ph(1, style)}, {_ph(2, style)}, {_ph(3, style)})" + _CACHE_SET
    )


def cache_unnest_sql(style: str) -> str:
    return (
        "INSERT INTO score_cache (key, result, stored_at) SELECT * FROM"
        f" unnest({_ph(1, style)}::text[], {_ph(2, style)}::text[], {_ph(3, style)}::float8[])"
        + _CACHE_SET
    )


def cache_trim_sql(style: str) -> str:
    return (
        f"DELETE FROM score_cache WHERE seq <= (SELECT max(seq) FROM score_cache) - {_ph(1, style)}"
    )


def select_sql(style: str) -> str:
    return f"SELECT {', '.join(COLUMNS)} FROM scores WHERE run_id = {_ph(1, style)}"


def claim_select_sql(columns: str = "id, run_id") -> str:
    return (
        f"SELECT {columns} FROM jobs WHERE state = 'queued'"
        " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
    )


def claim_update_sql(style: str) -> str:
    return (
        f"UPDATE jobs SET state = 'claimed', claimed_by = {_ph(1, style)},"
        f" claimed_at = {_ph(2, style)} WHERE id = {_ph(3, style)}"
    )


def claim_one_sql(style: str) -> str:
    return (
        f"UPDATE jobs SET state = 'claimed', claimed_by = {_ph(1, style)},"
        f" claimed_at = {_ph(2, style)}"
        f" WHERE id = ({claim_select_sql('id')}) RETURNING id, run_id"
    )


def notify_sql(style: str) -> str:
    return f"SELECT pg_notify({_ph(1, style)}, {_ph(2, style)})"


# Records as the gateway writes them (content capture off: no prompt, no completion).
RESULT_JSON = json.dumps(
    {
        "runId": "r",
        "score": 0.5,
        "reason": "The score is 0.5 because one of the two opinions generalises about a group.",
        "preprocessStepResult": {
            "opinions": [
                "Remote work makes teams less productive.",
                "People from that region are bad at maths.",
            ]
        },
        "analyzeStepResult": {
            "results": [
                {"result": "no", "reason": "A claim about a way of working, not about people."},
                {
                    "result": "yes",
                    "reason": "It attributes an ability to people by where they come from,"
                    " which is a geographical generalisation.",
                },
            ]
        },
        "usage": {
            "preprocess": {"promptTokens": 612, "completionTokens": 41, "totalTokens": 653},
            "analyze": {"promptTokens": 904, "completionTokens": 88, "totalTokens": 992},
            "reason": {"promptTokens": 377, "completionTokens": 52, "totalTokens": 429},
        },
        "durationsMs": {"preprocess": 812.4, "analyze": 1204.9, "reason": 655.1},
        "judgeModel": "gpt-4o-mini",
        "scale": 1,
        "cached": False,
    },
    separators=(",", ":"),
)


REASON = (
    "The score is 0.5 because one of the two opinions attributes an ability to people by"
    " where they come from, a geographical generalisation, while the other one is about a"
    " way of working and judges no group of people."
)


CACHE_RESULT = RESULT_JSON[:700]


Row = tuple[Any, ...]


def _row(record: ScoreRecord) -> Row:
    values = []
    for name in COLUMNS:
        value = getattr(record, name)
        values.append(RESULT_JSON if name == "result" and value is not None else value)
    return tuple(values)


def _pending(run_id: str, now: float) -> Row:
    return _row(
        ScoreRecord(
            run_id=run_id,
            status="pending",
            created_at=now,
            model="gpt-4o-mini",
            api="chat.completions",
            key_name="team-a",
            mode="monitor",
            stream=True,
            reason_status="pending",
            response_id=f"chatcmpl-{run_id[:24]}",
            request_id=run_id[::-1],
            updated_at=now,
        )
    )


def _scored(run_id: str, now: float) -> Row:
    return _row(
        ScoreRecord(
            run_id=run_id,
            status="scored",
            created_at=now - 2.5,
            model="gpt-4o-mini",
            api="chat.completions",
            key_name="team-a",
            mode="monitor",
            stream=True,
            score=0.5,
            verdict="flag",
            reason=REASON,
            reason_status="done",
            judge_calls=3,
            judge_tokens=2074,
            result={"stored": True},  # replaced by RESULT_JSON, the store's json.dumps text
            response_id=f"chatcmpl-{run_id[:24]}",
            request_id=run_id[::-1],
            updated_at=now,
        )
    )


@dataclass
class Batch:
    rows: list[Row]
    columns: list[list[Any]]  # the same rows column by column, for the unnest path
    cache: list[tuple[str, str, float]]


def make_batches(size: int, records: int) -> list[Batch]:
    """`records` records in batches of `size`: new pending rows, and earlier rows turned scored.

    A run id appears once in a batch at most (PostgreSQL refuses an ON CONFLICT DO
    UPDATE that touches one row twice in one statement; a real store dedupes first).
    """
    now = time.time()
    pending: deque[str] = deque()
    batches: list[Batch] = []
    done = 0
    while done < records:
        if size == 1:
            updates = 1 if pending and len(batches) % 2 else 0
        else:
            updates = min(len(pending), size // 2)
        rows = [_scored(pending.popleft(), now) for _ in range(updates)]
        fresh = [uuid.uuid4().hex for _ in range(size - updates)]
        rows += [_pending(run_id, now) for run_id in fresh]
        pending.extend(fresh)
        cache = [(uuid.uuid4().hex, CACHE_RESULT, now) for _ in range(size // 8)]
        batches.append(Batch(rows, [list(column) for column in zip(*rows, strict=True)], cache))
        done += size
    return batches


# One upsert path: a connection, a batch.
Writer = Callable[[Any, Batch], Awaitable[None]]
