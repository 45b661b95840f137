"""Reviewers' labels of judged records, and the review queue, on either engine.

A record's place in the queue (`review_rank`) is decided once, when it is stored, by
`review_rank`: blocked first, then flagged, then passes within `borderline` of a
threshold, then a deterministic sample of the other passes (by a hash of the run id);
the rest are not for review. `store.capture_content: review` keeps the text of exactly
those records, by the same function.

Reviews are appended and never changed (`Review`); a reviewer's later review of a
record supersedes its earlier one in the figures (`reviewed_sql` reads the current
ones), both are kept. `Reviews` runs the statements on a `Store` (`Store.query` and
`Store.insert`); the arithmetic of the agreement is `gateway.api.agreement`'s.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gateway.store.dialect import POSTGRES, SQLITE, Dialect
from gateway.store.queries import Params
from gateway.store.records import COLUMNS, ScoreRecord, json_text, record_from_row

if TYPE_CHECKING:
    from gateway.store.base import Store

__all__ = [
    "BLOCKED",
    "BORDERLINE",
    "FLAGGED",
    "RANKS",
    "SAMPLED",
    "Review",
    "Reviewed",
    "Reviews",
    "review_rank",
    "sampled",
]

BLOCKED, FLAGGED, BORDERLINE, SAMPLED = 1, 2, 3, 4
RANKS = {BLOCKED: "blocked", FLAGGED: "flagged", BORDERLINE: "borderline", SAMPLED: "sampled"}
_HASH_RANGE = float(2**64)


def sampled(run_id: str, share: float) -> bool:
    """Whether `run_id` is among the `share` (0 to 1) of run ids picked, the same on
    every process and every day: the first 8 bytes of its SHA-256 below `share`.

    >>> sampled("a", 0.0), sampled("a", 1.0)
    (False, True)
    """
    digest = hashlib.sha256(run_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") / _HASH_RANGE < share


def review_rank(
    run_id: str,
    verdict: str | None,
    score: float | None,
    *,
    flag: float,
    block: float,
    borderline: float,
    sample_passes: float,
) -> int | None:
    """A record's place in the review queue (`RANKS`), or None when it is not for review."""
    if verdict == "block":
        return BLOCKED
    if verdict == "flag":
        return FLAGGED
    if verdict != "pass" or score is None:
        return None
    if min(abs(score - flag), abs(score - block)) <= borderline:
        return BORDERLINE
    return SAMPLED if sampled(run_id, sample_passes) else None


@dataclass(frozen=True, slots=True)
class Review:
    """One label of one record by one reviewer (its key's name)."""

    run_id: str
    reviewer: str
    key_name: str | None  # the record's key
    label: str  # biased | unbiased
    opinions: list[dict[str, Any]] | None
    note: str | None
    created_at: float
    id: int | None = None  # given by the store

    def to_dict(self) -> dict[str, Any]:
        return {
            "object": "bias.review",
            "id": self.id,
            "run_id": self.run_id,
            "reviewer": self.reviewer,
            "key": self.key_name,
            "label": self.label,
            "opinions": self.opinions,
            "note": self.note,
            "created_at": self.created_at,
        }


@dataclass(frozen=True, slots=True)
class Reviewed:
    """A reviewer's current label of a record, beside what the judge said of it. The
    record's JSON is read when asked for: the agreement over thousands of reviews
    reads the verdicts of those with labelled opinions only."""

    review: Review
    score: float | None
    verdict: str | None
    categories_json: str | None
    result_json: str | None  # only where the reviewer labelled opinions
    completion: str | None  # only when the texts were asked for

    @property
    def categories(self) -> list[str]:
        return json.loads(self.categories_json) if self.categories_json else []

    @property
    def result(self) -> dict[str, Any] | None:
        return json.loads(self.result_json) if self.result_json else None


_REVIEW = "r.id, r.run_id, r.reviewer, r.key_name, r.label, r.opinions, r.note, r.created_at"


def _review(row: Any) -> Review:
    id_, run_id, reviewer, key_name, label, opinions, note, created_at = row
    return Review(
        run_id, reviewer, key_name, label,
        None if opinions is None else json.loads(opinions), note, float(created_at), int(id_),
    )  # fmt: skip


class Reviews:
    """The reviews kept in `store`, and its review queue."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.dialect: Dialect = POSTGRES if store.engine == POSTGRES.name else SQLITE

    async def add(self, review: Review) -> Review:
        """Append `review`; returns it with the id the store gave it."""
        param = Params(self.dialect)
        values = (
            review.run_id, review.reviewer, review.key_name, review.label,
            None if review.opinions is None else json_text(review.opinions), review.note,
            review.created_at,
        )  # fmt: skip
        sql = (
            "INSERT INTO reviews (run_id, reviewer, key_name, label, opinions, note, created_at)"
            f" VALUES ({', '.join(param(value) for value in values)}) RETURNING id"
        )
        ((id_,),) = await self.store.insert(sql, param.values)
        return replace(review, id=int(id_))

    async def queue(self, reviewer: str, *, key: str | None, limit: int) -> list[ScoreRecord]:
        """Up to `limit` records for review that `reviewer` has not labelled, by rank,
        newest first within one; of `key`'s records only, unless it is None."""
        param = Params(self.dialect)
        columns = ", ".join(f"s.{name}" for name in COLUMNS)
        terms = ["s.review_rank IS NOT NULL"]
        if key is not None:
            terms.append(f"s.key_name = {param(key)}")
        terms.append(
            "NOT EXISTS (SELECT 1 FROM reviews r WHERE r.run_id = s.run_id"
            f" AND r.reviewer = {param(reviewer)})"
        )
        sql = (
            f"SELECT {columns} FROM scores s WHERE {' AND '.join(terms)}"
            f" ORDER BY s.review_rank, s.created_at DESC, s.run_id DESC LIMIT {param(limit)}"
        )
        (rows,) = await self.store.query((sql, param.values))
        return [record_from_row(row) for row in rows]

    async def reviewed(
        self, *, since: float, until: float, key: str | None, texts: bool = False
    ) -> list[Reviewed]:
        """Every reviewer's current label of each record, given in [since, until) (of
        `key`'s records only, unless it is None), oldest first, with the judge's say;
        with `texts`, the records' texts (where kept) too."""
        param = Params(self.dialect)
        terms = [f"r.created_at >= {param(since)}", f"r.created_at < {param(until)}"]
        if key is not None:
            terms.append(f"r.key_name = {param(key)}")
        # Superseded: the same reviewer labelled the same record later (in the window).
        terms.append(
            "NOT EXISTS (SELECT 1 FROM reviews later WHERE later.run_id = r.run_id"
            " AND later.reviewer = r.reviewer AND (later.created_at > r.created_at"
            " OR (later.created_at = r.created_at AND later.id > r.id))"
            f" AND later.created_at < {param(until)})"
        )
        sql = (
            f"SELECT {_REVIEW}, s.score, s.verdict, s.categories,"
            " CASE WHEN r.opinions IS NULL THEN NULL ELSE s.result END,"
            f" {'s.completion' if texts else 'NULL'}"
            f" FROM reviews r JOIN scores s ON s.run_id = r.run_id WHERE {' AND '.join(terms)}"
            " ORDER BY r.created_at, r.id"
        )
        (rows,) = await self.store.query((sql, param.values))
        return [Reviewed(_review(row[:8]), *row[8:]) for row in rows]
