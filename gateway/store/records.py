"""What the score store keeps: `ScoreRecord`s and score cache entries. Pure data."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gateway.domain import FINAL_STATUSES, STATUSES, Status
from guard.outputs import valid_text

__all__ = [
    "COLUMNS",
    "FINAL_STATUSES",
    "STATUSES",
    "CacheEntry",
    "ScoreRecord",
    "Status",
    "StoreError",
    "check_record",
    "json_text",
    "record_from_row",
    "record_row",
    "rows_of",
]


logger = logging.getLogger("gateway.store")


class StoreError(Exception):
    """The score store's database could not be opened (or migrated)."""


@dataclass(slots=True)
class ScoreRecord:
    """One scored (or not scored) response, keyed by the scorer's run id."""

    run_id: str
    status: Status
    created_at: float
    model: str | None = None
    api: str | None = None  # the surface: chat.completions, completions, responses, messages
    key_name: str | None = None
    mode: str | None = None
    stream: bool = False
    partial: bool = False
    truncated: bool = False
    score: float | None = None
    verdict: str | None = None
    reason: str | None = None
    reason_status: str | None = None  # a ReasonStatus: pending, done, off, not_needed, ...
    status_reason: str | None = None
    judge_calls: int | None = None
    judge_tokens: int | None = None
    result: dict[str, Any] | None = None
    response_id: str | None = None
    request_id: str | None = None
    prompt: str | None = None
    completion: str | None = None
    updated_at: float | None = None
    # Durable monitor work (`gateway.work.payload`): what a scorer needs, held while `pending`.
    work: dict[str, Any] | None = None
    attempts: int = 0  # claims of the work so far; never lowered by a write
    lease_until: float | None = None  # epoch seconds; the claim lapses after
    leased_by: str | None = None  # the worker id holding the claim
    # The categories of bias found (`BiasResult.categories`), most frequent first.
    categories: list[str] | None = None
    trace_id: str | None = None  # the request's trace (32 hex digits), for finding it
    # The share of its key's monitored responses being scored when this one came, while
    # overload shed the rest (`gateway.scoring.shedding`); None when all were.
    sample_rate: float | None = None
    # How many of the deciding text's opinions were biased (`BiasResult.biased_count`),
    # which a policy's count rules read beside the score; None before it was kept.
    biased_opinions: int | None = None
    # What in the answer addressed the judge, [{kind, excerpt}] (`guard.integrity.tamper`);
    # None when nothing did, so the search's `tamper` filter reads one partial index.
    tamper: list[dict[str, str]] | None = None
    # The steps that changed the text the judge read (`guard.integrity.normalise`).
    normalised: list[str] | None = None
    # Its place in the review queue (`gateway.store.reviews.RANKS`); None: not for review.
    review_rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as plain JSON-ready values (`result` is deep-copied)."""
        return dataclasses.asdict(self)

    def public(self) -> dict[str, Any]:
        """The record for an API answer, without the held work (it carries the judged
        text). Shallow: `result` is this record's own dict, not a copy (a deep copy was a
        large share of a list page's time: `python -m bench.store_queries`)."""
        return {name: getattr(self, name) for name in PUBLIC_COLUMNS}


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """A score cache entry: the content hash and the result as JSON text."""

    key: str
    result: str


COLUMNS = tuple(field.name for field in dataclasses.fields(ScoreRecord))
PUBLIC_COLUMNS = tuple(name for name in COLUMNS if name != "work")
BOOL_COLUMNS = frozenset({"stream", "partial", "truncated"})
REAL_COLUMNS = frozenset({"created_at", "updated_at", "score", "lease_until", "sample_rate"})
INT_COLUMNS = frozenset(
    {"judge_calls", "judge_tokens", "attempts", "biased_opinions", "review_rank"}
)
JSON_COLUMNS = frozenset({"result", "work", "categories", "tamper", "normalised"})


def rows_of(
    records: list[ScoreRecord], to_row: Callable[[ScoreRecord], tuple[object, ...]]
) -> list[tuple[object, ...]]:
    """Records as an engine's rows, converted where the engine commits (SQLite: on its
    writer thread). A record that cannot become a row (a result that does not encode) is
    logged and left out."""
    rows: list[tuple[object, ...]] = []
    for record in records:
        try:
            rows.append(to_row(record))
        except Exception as exc:  # a bad result dict (cycles, objects) loses one record only
            logger.error("score record %s not stored: %s", record.run_id, exc)
    return rows


def record_row(
    record: ScoreRecord, *, boolean: Callable[[bool], object], text: Callable[[str], str]
) -> tuple[object, ...]:
    """`record` as a row of `COLUMNS` values: each engine says how it holds a boolean
    and which text it cannot take (`text` repairs it). Raises on a value of a wrong type."""
    row: list[object] = []
    for name in COLUMNS:
        value = getattr(record, name)
        if value is None:
            row.append(None)
        elif name in BOOL_COLUMNS:
            row.append(boolean(bool(value)))
        elif name in REAL_COLUMNS:
            row.append(float(value))
        elif name in INT_COLUMNS:
            row.append(int(value))
        elif name in JSON_COLUMNS:
            row.append(json_text(value))
        elif isinstance(value, str):
            row.append(text(value))
        else:
            raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return tuple(row)


def record_from_row(row: Iterable[Any]) -> ScoreRecord:
    """The `ScoreRecord` a row of `COLUMNS` values holds, on either engine."""
    values = dict(zip(COLUMNS, tuple(row), strict=True))
    for name in BOOL_COLUMNS:
        values[name] = bool(values[name])
    for name in JSON_COLUMNS:
        if values[name] is not None:
            values[name] = json.loads(values[name])
    return ScoreRecord(**values)


def check_record(record: ScoreRecord) -> ScoreRecord:
    """A copy of `record` to store, once its status and run id are checked."""
    if record.status not in STATUSES:
        raise ValueError(f"unknown score status {record.status!r}")
    if not isinstance(record.run_id, str):
        raise TypeError(f"run_id must be a str, not {type(record.run_id).__name__}")
    return dataclasses.replace(record)


def json_text(value: Any) -> str:
    """`result` as compact JSON text, valid UTF-8 (an unpaired surrogate becomes U+FFFD)."""
    return valid_text(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
