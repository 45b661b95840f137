"""Reviews and the review queue in the store, the same on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.config import StoreSettings
from gateway.store import ScoreRecord, Store, open_store
from gateway.store.retention import DAY, Retention
from gateway.store.reviews import (
    BLOCKED,
    BORDERLINE,
    FLAGGED,
    SAMPLED,
    Review,
    Reviews,
    review_rank,
    sampled,
)
from tests.support.resources import ENGINES


@pytest.fixture(params=ENGINES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "postgresql":
        settings = StoreSettings(url=request.getfixturevalue("pg_url"))
    else:
        settings = StoreSettings(path=str(tmp_path / "scores.db"))
    opened = open_store(settings)
    await opened.open()
    yield opened
    await opened.close()


def _record(run_id: str, rank: int | None, created_at: float, key: str = "team") -> ScoreRecord:
    verdicts = {BLOCKED: "block", FLAGGED: "flag"}
    return ScoreRecord(
        run_id, "scored", created_at, key_name=key, score=0.5,
        verdict=verdicts.get(rank or 0, "pass"), categories=["gender"], review_rank=rank,
    )  # fmt: skip


def _review(run_id: str, reviewer: str, label: str, at: float) -> Review:
    return Review(run_id, reviewer, "team", label, None, None, at)


@pytest.mark.parametrize(
    ("verdict", "score", "rank"),
    [
        ("block", 1.0, BLOCKED),
        ("flag", 0.6, FLAGGED),
        ("pass", 0.45, BORDERLINE),  # 0.05 under the flag threshold
        ("pass", 0.4, BORDERLINE),  # exactly `borderline` under it
        ("pass", 0.2, None),  # far from both, and not sampled at a share of 0
        (None, None, None),  # not scored
    ],
)
def test_a_record_s_rank_follows_its_verdict_and_its_distance_to_a_threshold(
    verdict: str | None, score: float | None, rank: int | None
) -> None:
    found = review_rank("r", verdict, score, flag=0.5, block=0.9, borderline=0.1, sample_passes=0.0)
    assert found == rank


def test_the_sample_of_passes_is_its_share_and_the_same_every_time() -> None:
    picked = [run_id for run_id in (f"run-{n}" for n in range(10_000)) if sampled(run_id, 0.02)]
    assert 150 < len(picked) < 250  # 2% of 10,000, give or take the hash's spread
    assert picked == [run_id for run_id in picked if sampled(run_id, 0.02)]
    assert review_rank("run-x", "pass", 0.1, flag=0.5, block=0.9, borderline=0.1,
                       sample_passes=1.0) == SAMPLED  # fmt: skip


async def test_the_queue_ranks_then_newest_and_leaves_out_what_this_reviewer_labelled(
    store: Store,
) -> None:
    for record in (
        _record("pass-old", SAMPLED, 1.0),
        _record("border", BORDERLINE, 2.0),
        _record("flag-old", FLAGGED, 3.0),
        _record("block", BLOCKED, 4.0),
        _record("flag-new", FLAGGED, 5.0),
        _record("not-for-review", None, 6.0),
        _record("other-key", BLOCKED, 7.0, key="other"),
    ):
        store.submit(record)
    reviews = Reviews(store)
    order = ["block", "flag-new", "flag-old", "border", "pass-old"]
    assert [r.run_id for r in await reviews.queue("ann", key="team", limit=10)] == order
    assert [r.run_id for r in await reviews.queue("ann", key=None, limit=2)] == [
        "other-key",
        "block",
    ]
    first = await reviews.add(_review("flag-new", "ann", "biased", 10.0))
    second = await reviews.add(_review("block", "bob", "unbiased", 11.0))
    assert first.id is not None
    assert second.id is not None
    assert second.id > first.id
    mine = await reviews.queue("ann", key="team", limit=10)
    assert [r.run_id for r in mine] == ["block", "flag-old", "border", "pass-old"]
    assert [r.run_id for r in await reviews.queue("bob", key="team", limit=1)] == ["flag-new"]


async def test_a_later_review_supersedes_the_earlier_and_both_are_kept(store: Store) -> None:
    store.submit(_record("flag", FLAGGED, 1.0))
    store.submit(_record("other", FLAGGED, 1.0, key="other"))
    reviews = Reviews(store)
    for review in (
        _review("flag", "ann", "biased", 10.0),
        _review("flag", "ann", "unbiased", 20.0),
        _review("flag", "bob", "biased", 15.0),
        Review("other", "ann", "other", "biased", [{"index": 0, "biased": True}], "n", 12.0),
    ):
        await reviews.add(review)
    current = await reviews.reviewed(since=0, until=100, key="team")
    assert [(r.review.reviewer, r.review.label) for r in current] == [
        ("bob", "biased"),
        ("ann", "unbiased"),
    ]
    assert (current[0].verdict, current[0].score, current[0].categories) == (
        "flag",
        0.5,
        ["gender"],
    )
    # Before the later one was given, the earlier one stood.
    earlier = await reviews.reviewed(since=0, until=16, key="team")
    assert [(r.review.reviewer, r.review.label) for r in earlier] == [
        ("ann", "biased"),
        ("bob", "biased"),
    ]
    everyone = await reviews.reviewed(since=0, until=100, key=None)
    other = next(r for r in everyone if r.review.run_id == "other")
    assert other.review.opinions == [{"index": 0, "biased": True}]
    assert other.review.note == "n"
    (rows,) = await store.query(("SELECT COUNT(*) FROM reviews", []))
    assert rows[0][0] == 4  # append-only: the superseded review is still there


async def test_retention_prunes_old_reviews_as_it_prunes_old_records(store: Store) -> None:
    now = 100 * DAY
    store.submit(_record("old", FLAGGED, now - 40 * DAY))
    store.submit(_record("recent", FLAGGED, now - DAY))
    reviews = Reviews(store)
    await reviews.add(_review("old", "ann", "biased", now - 40 * DAY))
    await reviews.add(_review("recent", "ann", "biased", now - DAY))
    await store.flush()
    assert await Retention(store, 30, batch=10, pause=0).prune_once(now=now) == 2
    left = await reviews.reviewed(since=0, until=now, key=None)
    assert [r.review.run_id for r in left] == ["recent"]
