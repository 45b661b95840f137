"""The writer's buffer while its store is away, on a commit function that fails as a
database does when it is down (OSError, an outage) or refuses a record (ValueError).
The engines' own failures are tried for real in test_store_outage.py."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

import pytest

from gateway.store import CacheEntry, ScoreRecord, Status
from gateway.store.writer import Batch, Writer
from testkit.waiting import eventually


class Database:
    """What a commit reaches: rows by run id, in commit order, and a switch."""

    def __init__(self) -> None:
        self.rows: dict[str, ScoreRecord] = {}
        self.order: list[str] = []
        self.writes: Counter[str] = Counter()
        self.entries: list[str] = []
        self.down = False
        self.failures = 0
        self.failed = asyncio.Event()

    async def commit(self, batch: Batch) -> None:
        if self.down:
            self.failures += 1
            self.failed.set()
            raise ConnectionRefusedError("connection refused")
        if any(record.run_id.startswith("bad") for record in batch.records):
            raise ValueError("a value the database cannot hold")
        for record in batch.records:
            self.rows[record.run_id] = record
            self.order.append(record.run_id)
            self.writes[record.run_id] += 1
        self.entries.extend(key for key, _, _ in batch.entries)


def record(run_id: str, status: Status = "pending") -> ScoreRecord:
    return ScoreRecord(run_id=run_id, status=status, created_at=1_700_000_000.0)


async def started(db: Database, **options: object) -> tuple[Writer, Counter[str]]:
    dropped: Counter[str] = Counter()

    def count(reason: str, n: int) -> None:
        dropped[reason] += n

    writer = Writer(
        db.commit,
        batch_max=8,
        linger=0,
        is_outage=lambda exc: isinstance(exc, OSError),
        on_dropped=count,
        retry_first=0.01,
        retry_max=0.05,
        **options,  # type: ignore[arg-type]
    )
    writer.start()
    return writer, dropped


async def go_down(db: Database, writer: Writer) -> None:
    """Take the database away and wait until the writer has seen it fail."""
    db.down = True
    db.failed.clear()
    writer.put(record("canary"))
    await asyncio.wait_for(db.failed.wait(), 5)


async def test_records_wait_out_an_outage_and_are_written_once_in_order() -> None:
    db = Database()
    writer, dropped = await started(db)
    await go_down(db, writer)
    for index in range(30):
        writer.put(record(f"r{index}"))
        writer.put(record(f"r{index}", "scored"))
    backlog = writer.backlog()
    assert backlog.down_for is not None
    assert backlog.held == 61
    assert "ConnectionRefusedError" in (backlog.error or "")
    db.down = False
    await eventually(lambda: writer.backlog().held == 0, timeout=10)
    await writer.flush()
    assert db.failures >= 1
    assert writer.backlog().down_for is None
    assert set(db.rows) == {"canary", *(f"r{index}" for index in range(30))}
    assert all(db.rows[f"r{index}"].status == "scored" for index in range(30))
    # Each submission committed once, pending before final, nothing out of order.
    assert db.writes == Counter({"canary": 1, **{f"r{index}": 2 for index in range(30)}})
    assert db.order == ["canary", *(f"r{index}" for index in range(30) for _ in (0, 1))]
    assert dropped == Counter()
    await writer.stop()


async def test_a_flush_does_not_wait_for_the_database_to_come_back() -> None:
    db = Database()
    writer, _ = await started(db)
    await go_down(db, writer)
    writer.put(record("r1", "scored"))
    await asyncio.wait_for(writer.flush(), 2)
    # The newest record of a run is found where it waits.
    held = writer.held("r1")
    assert held is not None
    assert held.status == "scored"
    assert writer.held("canary") is not None
    assert writer.held("nobody") is None
    db.down = False
    await eventually(lambda: "r1" in db.rows, timeout=10)
    assert writer.held("r1") is None
    await writer.stop()


async def test_a_record_on_its_way_to_a_live_database_is_not_answered_from_the_buffer() -> None:
    """The stored row is merged with what comes (`attempts` only grows), so a lookup
    must not answer the bare submitted record while the database is there to ask."""
    db = Database()
    gate = asyncio.Event()
    commit = db.commit

    async def slow_commit(batch: Batch) -> None:
        await gate.wait()
        await commit(batch)

    db.commit = slow_commit  # type: ignore[method-assign]
    writer, _ = await started(db)
    writer.put(record("r1", "scored"))
    assert writer.held("r1") is None
    gate.set()
    await writer.flush()
    assert db.rows["r1"].status == "scored"
    await writer.stop()


async def test_a_flush_queued_before_the_outage_is_released_by_it() -> None:
    db = Database()
    writer, _ = await started(db)
    db.down = True
    writer.put(record("first"))
    await asyncio.wait_for(writer.flush(), 2)  # would wait for the database otherwise
    assert writer.backlog().down_for is not None
    db.down = False
    await eventually(lambda: "first" in db.rows, timeout=10)
    await writer.stop()


async def test_a_full_buffer_drops_new_records_and_counts_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    db = Database()
    writer, dropped = await started(db, buffer_records=20)
    await go_down(db, writer)
    caplog.set_level(logging.WARNING, logger="gateway.store")
    for index in range(50):
        writer.put(record(f"r{index}"))
    # The canary and 19 more fill it: the other 31 are counted, none in silence.
    assert writer.backlog().held == 20
    assert dropped == Counter({"buffer_full": 31})
    assert writer.backlog().dropped == {"buffer_full": 31}
    messages = [entry.getMessage() for entry in caplog.records]
    assert any("50% full" in message for message in messages)
    assert any("90% full" in message for message in messages)
    assert sum("buffer is full" in message for message in messages) == 1
    assert any("run_id r19" in message for message in messages)
    db.down = False
    await eventually(lambda: writer.backlog().held == 0, timeout=10)
    assert set(db.rows) == {"canary", *(f"r{index}" for index in range(19))}
    assert any("dropped with the buffer full" in entry.getMessage() for entry in caplog.records)
    await writer.stop()


async def test_cache_entries_are_let_go_while_the_database_is_away() -> None:
    db = Database()
    writer, dropped = await started(db)
    await go_down(db, writer)
    writer.put(CacheEntry("k1", "{}"))
    assert writer.backlog().entries_skipped == 1
    assert writer.backlog().held == 1  # the canary only
    db.down = False
    await eventually(lambda: writer.backlog().held == 0, timeout=10)
    writer.put(CacheEntry("k2", "{}"))
    await writer.flush()
    assert db.entries == ["k2"]
    assert dropped == Counter()
    await writer.stop()


async def test_a_record_the_database_refuses_is_counted_and_the_rest_are_stored() -> None:
    db = Database()
    writer, dropped = await started(db)
    for run_id in ("a", "bad-1", "b"):
        writer.put(record(run_id))
    await writer.flush()
    assert set(db.rows) == {"a", "b"}
    assert dropped == Counter({"rejected": 1})
    assert writer.backlog().down_for is None  # refused, not away
    await writer.stop()


async def test_closing_with_the_database_away_counts_what_it_held() -> None:
    db = Database()
    writer, dropped = await started(db)
    await go_down(db, writer)
    for index in range(12):
        writer.put(record(f"r{index}"))
    await asyncio.wait_for(writer.stop(), 5)
    assert dropped == Counter({"shutdown": 13})
    assert db.rows == {}


async def test_closing_after_the_database_is_back_writes_everything() -> None:
    db = Database()
    writer, dropped = await started(db)
    await go_down(db, writer)
    writer.put(record("r1"))
    db.down = False
    await asyncio.wait_for(writer.stop(), 5)
    assert set(db.rows) == {"canary", "r1"}
    assert dropped == Counter()


def test_the_buffer_bound_must_be_positive() -> None:
    async def commit(batch: Batch) -> None:
        return None

    with pytest.raises(ValueError, match="buffer_records"):
        Writer(commit, batch_max=1, linger=0, buffer_records=0)
