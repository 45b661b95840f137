"""The search and stats queries on both engines, against a reference computed in Python."""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from gateway.config import StoreSettings
from gateway.store import PostgresStore, ScoreRecord, Store, open_store
from gateway.store.queries import (
    CursorError,
    ScoreQuery,
    StatsQuery,
    decode_cursor,
    encode_cursor,
)
from tests.support.resources import ENGINES

OpenStore = Callable[..., Awaitable[Store]]
T0 = 1_764_547_200.0  # 2025-12-01T00:00:00Z
CATEGORIES = ["gender", "political", "racial_ethnic", "geographical", "other"]


@pytest.fixture(params=ENGINES)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSettings:
    if request.param == "postgresql":
        return StoreSettings(url=SecretStr(request.getfixturevalue("pg_url")))
    return StoreSettings(path=str(tmp_path / "scores.db"))


@pytest.fixture
async def store(location: StoreSettings) -> AsyncIterator[Store]:
    opened = open_store(location)
    await opened.open()
    yield opened
    await opened.close()


def corpus(count: int = 300, seed: int = 7) -> list[ScoreRecord]:
    """Records over three days, of every status and verdict, some with categories."""
    rng = random.Random(seed)
    records = []
    for n in range(count):
        status = rng.choice(["scored"] * 6 + ["pending", "error", "skipped", "dropped"])
        score = round(rng.random(), 2) if status == "scored" else None
        verdict = None
        categories = None
        if score is not None:
            verdict = "block" if score >= 0.8 else "flag" if score >= 0.5 else "pass"
            categories = rng.sample(CATEGORIES, rng.randint(0, 2)) if score > 0 else []
        records.append(
            ScoreRecord(
                run_id=f"run-{n:04d}",
                status=status,  # type: ignore[arg-type]
                created_at=T0 + rng.uniform(0, 3 * 86400),
                model=rng.choice(["gpt-a", "gpt-b", "claude"]),
                key_name=rng.choice(["team-a", "team-b", None]),
                score=score,
                verdict=verdict,
                judge_calls=3 if score is not None else None,
                judge_tokens=rng.randint(100, 900) if score is not None else None,
                categories=categories,
            )
        )
    # Two records at the very same moment: the cursor must still page them apart.
    records[1].created_at = records[0].created_at
    # Some made while overload shed their key's responses: the skipped ones were shed.
    for record in records[::7]:
        record.sample_rate = 0.5
        if record.status == "skipped":
            record.status_reason = "overload_sampled"
    return records


def matches(record: ScoreRecord, query: ScoreQuery) -> bool:
    return (
        (query.verdict is None or record.verdict in query.verdict)
        and (query.status is None or record.status == query.status)
        and (query.model is None or record.model == query.model)
        and (query.key is None or record.key_name == query.key)
        and (query.category is None or query.category in (record.categories or []))
        and (query.min_score is None or (record.score or -1) >= query.min_score)
        and (query.since is None or record.created_at >= query.since)
        and (query.until is None or record.created_at < query.until)
    )


async def fill(store: Store, records: list[ScoreRecord]) -> None:
    for record in records:
        store.submit(record)
    await store.flush()


async def every_page(store: Store, query: ScoreQuery) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        page = await store.search(ScoreQuery(**{**_fields(query), "cursor": cursor}))
        more = len(page) > query.limit
        seen += [record.run_id for record in page[: query.limit]]
        if not more:
            return seen
        last = page[query.limit - 1]
        cursor = decode_cursor(encode_cursor(last.created_at, last.run_id))


def _fields(query: ScoreQuery) -> dict[str, Any]:
    return {name: getattr(query, name) for name in ScoreQuery.__slots__}


QUERIES = [
    ScoreQuery(limit=50),
    ScoreQuery(verdict=("block",), limit=7),
    ScoreQuery(status="pending", limit=10),
    ScoreQuery(model="claude", key="team-a", limit=5),
    ScoreQuery(category="gender", limit=6),
    ScoreQuery(category="other", verdict=("flag",), limit=3),
    ScoreQuery(min_score=0.5, since=T0 + 86400, until=T0 + 2 * 86400, limit=9),
    ScoreQuery(category="political", since=T0 + 3600, limit=4),
    ScoreQuery(verdict=("pass",), model="nobody", limit=5),
    ScoreQuery(verdict=("flag", "block"), limit=11),
]


@pytest.mark.parametrize(
    "query",
    QUERIES,
    ids=lambda q: (
        ",".join(f"{k}={v}" for k, v in _fields(q).items() if v is not None and k != "limit")
        or "all"
    ),
)
async def test_paging_through_a_search_gives_exactly_the_matching_records_newest_first(
    store: Store, query: ScoreQuery
) -> None:
    records = corpus()
    await fill(store, records)
    expected = [
        record.run_id
        for record in sorted(records, key=lambda r: (r.created_at, r.run_id), reverse=True)
        if matches(record, query)
    ]
    assert await every_page(store, query) == expected


async def test_a_page_holds_whole_records_and_one_more_says_there_are_more(store: Store) -> None:
    records = corpus(20)
    await fill(store, records)
    page = await store.search(ScoreQuery(limit=5))
    assert len(page) == 6
    newest = max(records, key=lambda r: (r.created_at, r.run_id))
    assert page[0] == newest


def reference_stats(records: list[ScoreRecord]) -> dict[str, Any]:
    scores = sorted(r.score for r in records if r.score is not None)
    p90 = scores[max(1, math.ceil(0.9 * len(scores))) - 1] if scores else None
    return {
        "records": len(records),
        "status": {
            s: sum(r.status == s for r in records)
            for s in ["dropped", "error", "pending", "scored", "skipped"]
        },
        "verdict": {v: sum(r.verdict == v for r in records) for v in ["pass", "flag", "block"]},
        "mean": round(sum(scores) / len(scores), 4) if scores else None,
        "p90": p90,
        "calls": sum(r.judge_calls or 0 for r in records),
        "tokens": sum(r.judge_tokens or 0 for r in records),
        "shed": (shed := sum(r.status_reason == "overload_sampled" for r in records)),
        "sampled": any(r.sample_rate is not None for r in records),
        "share": (
            round(scored / (scored + shed), 4)
            if (scored := sum(r.status == "scored" for r in records)) + shed
            else None
        ),
    }


def as_reference(group: dict[str, Any]) -> dict[str, Any]:
    return {
        "records": group["records"],
        "status": group["status"],
        "verdict": group["verdict"],
        "mean": group["score"]["mean"],
        "p90": group["score"]["p90"],
        "calls": group["judge"]["calls"],
        "tokens": group["judge"]["tokens"],
        "shed": group["sampling"]["overload_sampled"],
        "sampled": group["score"]["sampled"],
        "share": group["sampling"]["scored_share"],
    }


async def test_stats_of_a_window_match_the_reference(store: Store) -> None:
    records = corpus()
    await fill(store, records)
    window = ScoreQuery(since=T0 + 12 * 3600, until=T0 + 60 * 3600)
    (total,) = await store.stats(StatsQuery(window))
    inside = [r for r in records if matches(r, window)]
    assert as_reference(total.to_dict()) == reference_stats(inside)


@pytest.mark.parametrize(
    "group_by", ["verdict", "status", "model", "key", "category", "hour", "day"]
)
async def test_stats_by_group_match_the_reference(store: Store, group_by: str) -> None:
    records = corpus()
    await fill(store, records)
    window = ScoreQuery(since=T0, until=T0 + 3 * 86400)
    groups = await store.stats(StatsQuery(window, group_by))  # type: ignore[arg-type]

    def keys_of(record: ScoreRecord) -> list[Any]:
        if group_by == "category":
            return list(record.categories or [])
        if group_by in ("hour", "day"):
            seconds = 3600 if group_by == "hour" else 86400
            return [float(int(record.created_at // seconds) * seconds)]
        if group_by == "score":
            return [] if record.score is None else [min(9, int(record.score * 10))]
        return [getattr(record, "key_name" if group_by == "key" else group_by)]

    expected: dict[Any, list[ScoreRecord]] = {}
    for record in records:
        for key in keys_of(record):
            expected.setdefault(key, []).append(record)
    assert {group.key for group in groups} == set(expected)
    for group in groups:
        assert as_reference(group.to_dict()) == reference_stats(expected[group.key]), group.key
    if group_by in ("hour", "day", "score"):
        assert [group.key for group in groups] == sorted(expected)
    else:
        counts = [group.records for group in groups]
        assert counts == sorted(counts, reverse=True)


async def test_categories_follow_the_record_and_a_refused_write_leaves_them(
    store: Store,
) -> None:
    store.submit(ScoreRecord(run_id="r", status="pending", created_at=T0))
    store.submit(
        ScoreRecord(
            run_id="r",
            status="scored",
            created_at=T0,
            score=1.0,
            verdict="block",
            categories=["gender", "political"],
        )
    )
    # A late duplicate with other categories is refused whole: the final record stands.
    store.submit(
        ScoreRecord(
            run_id="r",
            status="scored",
            created_at=T0,
            score=0.5,
            verdict="flag",
            categories=["geographical"],
        )
    )
    await store.flush()
    for category, found in (("gender", ["r"]), ("political", ["r"]), ("geographical", [])):
        page = await store.search(ScoreQuery(category=category))
        assert [record.run_id for record in page] == found, category
    assert await store.prune(T0 + 1, batch=10) == 1
    # The pruned record's categories went with it.
    assert await store.stats(StatsQuery(ScoreQuery(), "category")) == []


@pytest.mark.parametrize(
    "cursor", ["", "%%%", "bm90IGpzb24", encode_cursor(1.0, "x")[:-2] + "!!", "WzEsMiwzXQ"]
)
def test_a_cursor_not_handed_out_is_refused(cursor: str) -> None:
    with pytest.raises(CursorError):
        decode_cursor(cursor)


async def test_postgres_plans_searches_for_their_values(pg_url: str) -> None:
    """The read pool never uses a prepared statement's generic plan (see PostgresStore)."""
    store = PostgresStore(pg_url)
    await store.open()
    try:
        assert await store._reads.fetchval("SHOW plan_cache_mode") == "force_custom_plan"
        assert await store._pool.fetchval("SHOW plan_cache_mode") == "auto"  # writes: default
    finally:
        await store.close()
