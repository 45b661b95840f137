"""The SQLite engine on real small filesystems: a disk that fills up and one that turns
read-only. Records wait in the writer's buffer and are written once there is room."""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.store import ScoreRecord, SQLiteStore
from testkit.waiting import eventually
from tests.support.filesystems import Filler, ext4_image, make_read_only, small_tmpfs

BIG = "y" * 20_000  # a captured completion: a few of these outgrow what the WAL holds


def record(run_id: str, status: str = "scored", **fields: object) -> ScoreRecord:
    return ScoreRecord(run_id=run_id, status=status, created_at=1_700_000_000.0, **fields)  # type: ignore[arg-type]


def committed(path: Path) -> dict[str, str]:
    """run_id -> status of the rows in the file, read past the store."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT run_id, status FROM scores").fetchall())


@pytest.fixture
async def full_disk_store(
    tmp_path: Path,
) -> AsyncIterator[tuple[SQLiteStore, Filler, Counter[str]]]:
    dropped: Counter[str] = Counter()

    def count(reason: str, n: int) -> None:
        dropped[reason] += n

    with small_tmpfs(tmp_path / "disk", "2m") as disk:
        store = SQLiteStore(disk / "scores.db", buffer_records=50, on_dropped=count)
        await store.open()
        filler = Filler(disk)
        try:
            yield store, filler, dropped
        finally:
            filler.remove()
            await store.close()


async def test_a_full_disk_holds_records_until_there_is_room(
    full_disk_store: tuple[SQLiteStore, Filler, Counter[str]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    store, filler, dropped = full_disk_store
    caplog.set_level(logging.WARNING, logger="gateway.store")
    store.submit(record("before"))
    await store.flush()
    assert filler.fill() > 0
    for index in range(20):
        store.submit(record(f"r{index}", "pending"))
        store.submit(record(f"r{index}", completion=BIG))
    await eventually(lambda: store.backlog().down_for is not None, timeout=10)
    backlog = store.backlog()
    assert "full" in (backlog.error or "")
    assert backlog.held > 0
    assert any("score store unavailable" in entry.getMessage() for entry in caplog.records)
    # Lookups answer from what waits; reads of the file still work.
    held = await store.get("r19")
    assert held is not None
    assert held.status == "scored"
    assert (await store.get("before")) is not None
    filler.remove()
    await eventually(lambda: store.backlog().held == 0, timeout=20)
    await store.flush()
    rows = committed(store._path)
    assert {f"r{index}" for index in range(20)} <= set(rows)
    assert all(rows[f"r{index}"] == "scored" for index in range(20))
    assert dropped == Counter()
    assert store.backlog().down_for is None
    assert any("score store is back" in entry.getMessage() for entry in caplog.records)


async def test_past_the_buffer_the_dropped_records_are_counted_exactly(
    full_disk_store: tuple[SQLiteStore, Filler, Counter[str]],
) -> None:
    store, filler, dropped = full_disk_store
    filler.fill()
    store.submit(record("first", completion=BIG))
    await eventually(lambda: store.backlog().down_for is not None, timeout=10)
    for index in range(80):
        store.submit(record(f"r{index}", completion=BIG))
    # 50 fit (the first among them): 31 are over the bound.
    assert dropped == Counter({"buffer_full": 31})
    filler.remove()
    await eventually(lambda: store.backlog().held == 0, timeout=20)
    rows = committed(store._path)
    assert set(rows) == {"first", *(f"r{index}" for index in range(49))}
    assert store.backlog().dropped == {"buffer_full": 31}


@pytest.mark.mounts
async def test_a_filesystem_turned_read_only_holds_records_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.store")
    with ext4_image(tmp_path / "disk") as (disk, device):
        store = SQLiteStore(disk / "scores.db")
        await store.open()
        try:
            store.submit(record("before"))
            await store.flush()
            make_read_only(device)
            for index in range(5):
                store.submit(record(f"r{index}", completion=BIG))
            await eventually(lambda: store.backlog().down_for is not None, timeout=10)
            assert store.backlog().held == 5
            error = (store.backlog().error or "").lower()
            assert "readonly" in error or "read-only" in error or "i/o" in error
            unavailable = [e for e in caplog.records if "unavailable" in e.getMessage()]
            assert len(unavailable) == 1
            assert (await store.get("r4")) is not None
            assert (await store.get("before")) is not None
        finally:
            await store.close()
