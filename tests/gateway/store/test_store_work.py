"""Durable scoring work in the store, the same on both engines: claims, leases, the
written-once final status, expiry and the restart sweep (`gateway.work.payload`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from gateway.config import StoreSettings
from gateway.store import ScoreRecord, Store, open_store
from tests.support.clock import ManualClock
from tests.support.resources import ENGINES

OpenStore = Callable[..., Awaitable[Store]]
WORK = {"v": 1, "texts": ["Engineers from the north are lazy."], "policy": "default"}


@pytest.fixture(params=ENGINES)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSettings:
    if request.param == "postgresql":
        return StoreSettings(url=request.getfixturevalue("pg_url"))
    return StoreSettings(path=str(tmp_path / "scores.db"))


@pytest.fixture
async def open_store_at(location: StoreSettings) -> AsyncIterator[OpenStore]:
    opened: list[Store] = []

    async def make(clock: ManualClock | None = None, **options: Any) -> Store:
        store = open_store(location) if clock is None else open_store(location, clock=clock)
        await store.open(**options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()


def work(run_id: str, *, created_at: float | None = None, **fields: Any) -> ScoreRecord:
    """A pending record with work, unleased unless `fields` say otherwise."""
    return ScoreRecord(
        run_id=run_id,
        status="pending",
        created_at=time.time() if created_at is None else created_at,
        work=fields.pop("work", WORK),
        **fields,
    )


async def claim(store: Store, worker: str, limit: int = 10, **options: Any) -> list[str]:
    claimed = await store.claim(
        worker,
        limit=limit,
        lease_seconds=options.get("lease_seconds", 30.0),
        max_attempts=options.get("max_attempts", 3),
    )
    return [record.run_id for record in claimed]


async def test_work_is_claimed_oldest_first_once_and_comes_back_whole(
    open_store_at: OpenStore,
) -> None:
    store = await open_store_at()
    for n in range(5):
        store.submit(work(f"r{n}", created_at=1000.0 + n, model="m", api="responses"))
    store.submit(ScoreRecord(run_id="streaming", status="pending", created_at=999.0))  # no work
    store.submit(ScoreRecord(run_id="final", status="scored", created_at=998.0, work=None))
    await store.flush()
    first = await store.claim("a", limit=3, lease_seconds=30, max_attempts=3)
    assert [r.run_id for r in first] == ["r0", "r1", "r2"]
    assert all(r.work == WORK and r.model == "m" and r.api == "responses" for r in first)
    assert all(r.leased_by == "a" and r.attempts == 1 for r in first)
    assert all(r.lease_until is not None and r.lease_until > time.time() + 25 for r in first)
    # Leased work is nobody else's: b gets the rest, then nothing.
    assert await claim(store, "b") == ["r3", "r4"]
    assert await claim(store, "b") == []
    assert await store.pending_work() == 5


async def test_claims_at_once_never_share_a_record(open_store_at: OpenStore) -> None:
    store = await open_store_at()
    for n in range(40):
        store.submit(work(f"r{n}", created_at=1000.0 + n))
    await store.flush()
    # Four processes' stores (each its own connections) claiming at the same moment.
    stores = [store, *[await open_store_at(sweep_pending=False) for _ in range(3)]]
    results = await asyncio.gather(
        *(claim(each, f"w{n}", limit=7) for n, each in enumerate(stores))
    )
    taken = [run_id for result in results for run_id in result]
    assert len(taken) == len(set(taken)) == 28


async def test_a_lapsed_lease_is_claimed_again_and_counts_an_attempt(
    open_store_at: OpenStore,
) -> None:
    clock = ManualClock()
    store = await open_store_at(clock)
    store.submit(work("r1"))
    await store.flush()
    assert await claim(store, "dead", lease_seconds=30) == ["r1"]
    clock.advance(29)
    assert await claim(store, "live") == []  # still leased
    clock.advance(2)
    again = await store.claim("live", limit=5, lease_seconds=30, max_attempts=3)
    assert [(r.run_id, r.leased_by, r.attempts) for r in again] == [("r1", "live", 2)]


async def test_the_heartbeat_keeps_a_lease_and_only_the_holders(open_store_at: OpenStore) -> None:
    clock = ManualClock()
    store = await open_store_at(clock)
    store.submit(work("mine"))
    store.submit(work("theirs"))
    await store.flush()
    assert await claim(store, "me", limit=1, lease_seconds=20) == ["mine"]
    assert await claim(store, "them", limit=1, lease_seconds=20) == ["theirs"]
    for _ in range(3):
        clock.advance(10)
        assert await store.renew("me", lease_seconds=20) == 1
    # Theirs lapsed 10 s ago, mine did not.
    assert await claim(store, "other") == ["theirs"]


async def test_a_final_status_is_written_once(open_store_at: OpenStore) -> None:
    clock = ManualClock()
    store = await open_store_at(clock)
    store.submit(work("r1"))
    await store.flush()
    await claim(store, "a", lease_seconds=30)
    clock.advance(31)
    assert await claim(store, "b") == ["r1"]  # a's lease lapsed: b judges too
    first = ScoreRecord(run_id="r1", status="scored", created_at=1.0, score=0.5, verdict="flag")
    late = ScoreRecord(run_id="r1", status="scored", created_at=1.0, score=1.0, verdict="block")
    store.submit(first)
    store.submit(late)  # a's late, different answer
    store.submit(ScoreRecord(run_id="r1", status="pending", created_at=1.0, work=WORK))
    stored = await store.get("r1")
    assert stored is not None
    assert (stored.status, stored.score, stored.verdict) == ("scored", 0.5, "flag")
    assert (stored.work, stored.leased_by, stored.lease_until) == (None, None, None)
    assert stored.attempts == 2  # a final write never lowers the count
    assert await claim(store, "c") == []


async def test_a_score_still_takes_its_deferred_explanation(open_store_at: OpenStore) -> None:
    store = await open_store_at()

    def scored(**fields: Any) -> ScoreRecord:
        return ScoreRecord(run_id="r1", status="scored", created_at=1.0, score=0.5, **fields)

    store.submit(scored(reason_status="pending"))
    store.submit(scored(reason_status="done", reason="Because."))
    store.submit(scored(reason_status="dropped"))  # a duplicate's late word
    stored = await store.get("r1")
    assert stored is not None
    assert (stored.reason_status, stored.reason) == ("done", "Because.")


async def test_release_gives_work_back_unspent(open_store_at: OpenStore) -> None:
    store = await open_store_at()
    store.submit(work("r1"))
    store.submit(work("r2"))
    store.submit(ScoreRecord(run_id="stream", status="pending", created_at=1.0, leased_by="me"))
    await store.flush()
    assert await claim(store, "me", limit=1) == ["r1"]
    assert await claim(store, "you", limit=1) == ["r2"]
    assert await store.release("me") == 1  # only work; the stream's lease stays
    again = await store.claim("you", limit=5, lease_seconds=30, max_attempts=3)
    assert [(r.run_id, r.attempts) for r in again] == [("r1", 1)]


async def test_expiry_ends_exhausted_work_and_lost_streams(open_store_at: OpenStore) -> None:
    store = await open_store_at()
    past = time.time() - 1
    store.submit(work("tired", attempts=2, leased_by="dead", lease_until=past))
    store.submit(work("fresh", attempts=1, leased_by="dead", lease_until=past))
    store.submit(work("held", attempts=2, leased_by="live", lease_until=time.time() + 30))
    store.submit(
        ScoreRecord(
            run_id="cut", status="pending", created_at=1.0, leased_by="dead", lease_until=past
        )
    )
    store.submit(
        ScoreRecord(
            run_id="live-stream",
            status="pending",
            created_at=1.0,
            leased_by="live",
            lease_until=time.time() + 30,
        )
    )
    await store.flush()
    ended = await store.expire(max_attempts=2)
    assert sorted(ended) == [("cut", "gateway_lost"), ("tired", "attempts_exhausted")]
    tired, cut = await store.get("tired"), await store.get("cut")
    assert tired is not None
    assert cut is not None
    assert (tired.status, tired.status_reason, tired.work) == ("error", "attempts_exhausted", None)
    assert (cut.status, cut.status_reason) == ("dropped", "gateway_lost")
    # An exhausted record is never claimed, even past max_attempts in the claim itself.
    assert await claim(store, "x", max_attempts=2) == ["fresh"]
    assert await store.expire(max_attempts=2) == []


async def test_sqlite_restart_resumes_work_and_drops_what_has_none(tmp_path: Path) -> None:
    location = StoreSettings(path=str(tmp_path / "scores.db"))
    before = open_store(location)
    await before.open()
    before.submit(work("queued", attempts=1, leased_by="crashed", lease_until=time.time() + 30))
    before.submit(ScoreRecord(run_id="cut", status="pending", created_at=1.0, leased_by="crashed"))
    await before.close()
    after = open_store(location)
    await after.open()  # the one process on the file: sweeps
    try:
        assert await claim(after, "restarted") == ["queued"]
        cut = await after.get("cut")
        assert cut is not None
        assert (cut.status, cut.status_reason) == ("dropped", "gateway_restarted")
    finally:
        await after.close()


async def test_postgres_never_sweeps_and_notifies_new_work(pg_url: str) -> None:
    location = StoreSettings(url=SecretStr(pg_url))
    gateway, scorer, again = (open_store(location) for _ in range(3))
    await gateway.open()
    await scorer.open()
    try:
        await scorer.listen()
        gateway.submit(work("leased", leased_by="gw", lease_until=time.time() + 30))
        await gateway.flush()
        started = time.monotonic()
        await scorer.wait_for_work(2.0)  # in-process work does not wake scorers
        assert time.monotonic() - started >= 1.9
        # A notice that comes before the waiter waits is kept for it, so no pause is needed.
        waiter = asyncio.create_task(scorer.wait_for_work(60.0))
        started = time.monotonic()
        gateway.submit(work("external"))
        await waiter
        assert time.monotonic() - started < 30  # woken by the notice, long before its timeout
        await again.open()  # a replica starting never touches live work
        assert await claim(again, "s") == ["external"]
        leased = await again.get("leased")
        assert leased is not None
        assert (leased.status, leased.leased_by) == ("pending", "gw")
    finally:
        for store in (gateway, scorer, again):
            await store.close()


async def test_release_of_named_runs_leaves_the_others_leased(open_store_at: OpenStore) -> None:
    store = await open_store_at()
    for run_id in ("a", "b", "c"):
        store.submit(work(run_id, created_at=1000.0 + ord(run_id)))
    await store.flush()
    assert await claim(store, "me") == ["a", "b", "c"]
    assert await store.release("me", ["a", "c", "unknown"]) == 2
    assert await store.release("me", []) == 0
    assert await claim(store, "you") == ["a", "c"]
    b = await store.get("b")
    assert b is not None
    assert b.leased_by == "me"
