from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.store import (
    FINAL_STATUSES,
    CacheEntry,
    ScoreRecord,
    SQLiteStore,
    StoreError,
    sqlite_file,
)
from gateway.store import sqlite as sqlite_engine
from gateway.store.queries import ScoreQuery
from gateway.store.writer import Batch

WRITER = "gateway-store-writer"
MakeStore = Callable[..., Awaitable[SQLiteStore]]


@pytest.fixture
async def make_store(tmp_path: Path) -> AsyncIterator[MakeStore]:
    """A factory of started stores on files in tmp_path; all are closed at teardown."""
    stores: list[SQLiteStore] = []

    async def make(path: Path | None = None, **kwargs: Any) -> SQLiteStore:
        store = SQLiteStore(path or tmp_path / "scores.db", **kwargs)
        await store.open()
        stores.append(store)
        return store

    yield make
    for store in stores:
        await store.close()


def record(run_id: str = "run-1", **fields: Any) -> ScoreRecord:
    fields.setdefault("status", "pending")
    fields.setdefault("created_at", 1_700_000_000.25)
    return ScoreRecord(run_id=run_id, **fields)


def full_record(run_id: str = "run-full") -> ScoreRecord:
    """A record with no field left at its default."""
    return ScoreRecord(
        run_id=run_id,
        status="scored",
        created_at=1_700_000_000.123456,
        model="gpt-4o-mini",
        key_name="team-a",
        mode="enforce",
        stream=True,
        partial=True,
        score=0.67,
        verdict="flag",
        reason="Two of three opinions generalise about «people from the north».",
        status_reason="ok",
        result={
            "runId": run_id,
            "preprocessStepResult": {"opinions": ["a", "b", "c"]},
            "analyzeStepResult": {"results": [{"result": "yes", "reason": "r"}]},
            "score": 0.67,
            "usage": {"prompt_tokens": 12, "completion_tokens": 3},
            "durations": {"preprocess": 0.5},
            "cached": False,
            "extra": None,
        },
        response_id="chatcmpl-1",
        request_id="req-1",
        prompt="Tell me about cities.",
        completion="Northerners are all lazy.",
        updated_at=1_700_000_001.5,
    )


def raw_count(path: Path, where: str = "1", params: tuple[Any, ...] = ()) -> int:
    """Rows committed to the file, seen through a connection the store does not own."""
    with sqlite3.connect(path) as conn:
        (count,) = conn.execute(f"SELECT COUNT(*) FROM scores WHERE {where}", params).fetchone()
    conn.close()
    return int(count)


def writer_threads() -> int:
    return sum(thread.name.startswith(WRITER) for thread in threading.enumerate())


def test_final_statuses() -> None:
    assert frozenset({"scored", "error", "skipped", "dropped"}) == FINAL_STATUSES


def test_to_dict_is_json_ready() -> None:
    rec = full_record()
    data = rec.to_dict()
    assert list(data) == [field.name for field in dataclasses.fields(ScoreRecord)]
    assert json.loads(json.dumps(data)) == data
    assert data["result"] == rec.result
    assert data["result"] is not rec.result


async def test_round_trip_every_field(make_store: MakeStore) -> None:
    store = await make_store()
    full, minimal = full_record(), record("run-minimal")
    store.submit(full)
    store.submit(minimal)
    got_full, got_minimal = await store.get("run-full"), await store.get("run-minimal")
    assert got_full == full
    assert got_minimal == minimal
    # 1 == True, so equality alone would not notice integers coming back.
    assert got_full is not None
    assert got_full.stream is True
    assert got_full.partial is True
    assert got_minimal is not None
    assert got_minimal.stream is False


async def test_booleans_and_json_stored_as_integers_and_text(
    make_store: MakeStore, tmp_path: Path
) -> None:
    store = await make_store()
    store.submit(full_record())
    await store.flush()
    with sqlite3.connect(tmp_path / "scores.db") as conn:
        row = conn.execute(
            "SELECT typeof(stream), stream, typeof(partial), typeof(result), result FROM scores"
        ).fetchone()
    conn.close()
    assert row[:4] == ("integer", 1, "integer", "text")
    assert json.loads(row[4]) == full_record().result


async def test_upsert_replaces_the_whole_pending_record(make_store: MakeStore) -> None:
    store = await make_store()
    store.submit(dataclasses.replace(full_record("run-1"), status="pending"))
    replacement = record("run-1", status="error", status_reason="JudgeTimeout")
    store.submit(replacement)
    assert await store.get("run-1") == replacement
    counts = await store.status_counts()
    assert counts["error"] == 1
    assert sum(counts.values()) == 1


async def test_submit_copies_the_record(make_store: MakeStore) -> None:
    store = await make_store()
    rec = record("run-1")
    store.submit(rec)
    rec.status = "scored"
    got = await store.get("run-1")
    assert got is not None
    assert got.status == "pending"


async def test_get_unknown_run_id_is_none(make_store: MakeStore) -> None:
    store = await make_store()
    store.submit(record("run-1"))
    assert await store.get("no-such-run") is None


async def test_wal_mode_is_on(make_store: MakeStore, tmp_path: Path) -> None:
    await make_store(tmp_path / "scores.db")
    conn = sqlite3.connect(tmp_path / "scores.db")
    try:
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    finally:
        conn.close()
    assert mode == "wal"


def test_a_missing_folder_is_an_error_not_created(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "nested" / "scores.db")
    with pytest.raises(StoreError, match=r"folder .*nested does not exist"):
        asyncio.run(store.open())
    assert list(tmp_path.iterdir()) == []


async def test_submit_never_waits_for_the_database(make_store: MakeStore, tmp_path: Path) -> None:
    path = tmp_path / "scores.db"
    store = await make_store(path)
    # Another connection holds the write lock, so no commit can happen until it lets go.
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        for i in range(10_000):
            store.submit(record(f"run-{i}"))
        flushed = asyncio.ensure_future(store.flush())
        # Asserts what does not happen: for this while, with the lock held, the flush does
        # not finish and nothing is committed (the loop keeps running while the writer waits).
        await asyncio.sleep(0.1)
        assert not flushed.done()
        assert raw_count(path) == 0
        # Readers are not blocked by the writer.
        assert sum((await store.status_counts()).values()) == 0
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await flushed
    assert raw_count(path) == 10_000


async def test_batching_stores_every_record(make_store: MakeStore, tmp_path: Path) -> None:
    store = await make_store(batch_max=7)
    for i in range(10_000):
        store.submit(record(f"run-{i}", status="scored", score=i / 10_000))
    await store.flush()
    assert (await store.status_counts())["scored"] == 10_000
    assert raw_count(tmp_path / "scores.db", "score = ?", (0.9999,)) == 1


async def test_get_flushes_first(make_store: MakeStore) -> None:
    store = await make_store()
    for i in range(1_000):
        store.submit(record(f"run-{i}"))
    got = await store.get("run-999")
    assert got == record("run-999")


async def test_restart_drops_pending_and_keeps_final(tmp_path: Path) -> None:
    path = tmp_path / "scores.db"
    first = SQLiteStore(path)
    await first.open()
    scored, failed = full_record("run-scored"), record("run-error", status="error")
    first.submit(record("run-pending", model="m"))
    first.submit(scored)
    first.submit(failed)
    await first.close()

    before = time.time()
    second = SQLiteStore(path)
    await second.open()
    try:
        dropped = await second.get("run-pending")
        assert dropped is not None
        assert dropped.status == "dropped"
        assert dropped.status_reason == "gateway_restarted"
        assert dropped.model == "m"
        assert dropped.updated_at is not None
        assert dropped.updated_at >= before
        assert await second.get("run-scored") == scored
        assert await second.get("run-error") == failed
        assert (await second.status_counts())["pending"] == 0
    finally:
        await second.close()


async def test_close_commits_stops_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "scores.db"
    threads_before = writer_threads()
    store = SQLiteStore(path)
    await store.open()
    assert writer_threads() == threads_before + 1
    for i in range(100):
        store.submit(record(f"run-{i}"))
    await store.close()
    assert writer_threads() == threads_before
    assert raw_count(path) == 100
    await store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.submit(record("late"))
    with pytest.raises(RuntimeError, match="closed"):
        await store.get("run-1")
    with pytest.raises(RuntimeError, match="closed"):
        await store.status_counts()
    await store.flush()  # nothing left to wait for
    assert raw_count(path) == 100


async def test_concurrent_closes_both_wait_for_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "scores.db"
    store = SQLiteStore(path)
    await store.open()
    for i in range(2_000):
        store.submit(record(f"run-{i}"))
    await asyncio.gather(store.close(), store.close())
    assert raw_count(path) == 2_000


async def test_unstarted_store_refuses_work(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "scores.db")
    with pytest.raises(RuntimeError, match="not started"):
        store.submit(record())
    with pytest.raises(RuntimeError, match="not started"):
        await store.flush()
    with pytest.raises(RuntimeError, match="not started"):
        await store.status_counts()
    await store.close()
    with pytest.raises(RuntimeError, match="once"):
        await store.open()


async def test_open_twice_raises(make_store: MakeStore) -> None:
    store = await make_store()
    with pytest.raises(RuntimeError, match="once"):
        await store.open()


@pytest.mark.parametrize("layout", ["directory", "parent_is_file", "not_a_database"])
async def test_store_error_on_unopenable_path(tmp_path: Path, layout: str) -> None:
    if layout == "directory":
        path = tmp_path / "scores.db"
        path.mkdir()
    elif layout == "parent_is_file":
        (tmp_path / "file").write_text("x")
        path = tmp_path / "file" / "scores.db"
    else:
        path = tmp_path / "scores.db"
        path.write_bytes(b"this is not sqlite" * 512)
    store = SQLiteStore(path)
    with pytest.raises(StoreError) as caught:
        await store.open()
    message = str(caught.value)
    assert str(path) in message
    assert "\n" not in message
    with pytest.raises(RuntimeError, match="not started"):
        store.submit(record())


def test_invalid_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="batch_max"):
        SQLiteStore(tmp_path / "scores.db", batch_max=0)


async def test_submit_rejects_unknown_status(make_store: MakeStore) -> None:
    store = await make_store()
    with pytest.raises(ValueError, match="status"):
        store.submit(record(status="done"))
    assert sum((await store.status_counts()).values()) == 0


async def test_concurrent_submit_from_threads(make_store: MakeStore, tmp_path: Path) -> None:
    store = await make_store()
    n_threads, per_thread = 8, 1_000
    start = threading.Barrier(n_threads, timeout=10)

    def produce(t: int) -> None:
        start.wait()  # release all producers at once, so their submits interleave
        for i in range(per_thread):
            store.submit(record(f"t{t}-{i}", status="scored"))

    threads = [threading.Thread(target=produce, args=(t,)) for t in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    await store.flush()
    assert (await store.status_counts())["scored"] == n_threads * per_thread
    assert raw_count(tmp_path / "scores.db", "run_id LIKE 't7-%'") == per_thread


async def test_counts(make_store: MakeStore) -> None:
    store = await make_store()
    assert await store.status_counts() == dict.fromkeys(
        ["dropped", "error", "pending", "scored", "skipped"], 0
    )
    statuses = ["pending"] * 3 + ["scored"] * 2 + ["skipped"]
    for i, status in enumerate(statuses):
        store.submit(record(f"run-{i}", status=status))
    await store.flush()
    assert await store.status_counts() == {
        "dropped": 0,
        "error": 0,
        "pending": 3,
        "scored": 2,
        "skipped": 1,
    }


async def test_unserialisable_result_loses_only_that_record(
    make_store: MakeStore, caplog: pytest.LogCaptureFixture
) -> None:
    store = await make_store()
    with caplog.at_level(logging.ERROR, logger="gateway.store"):
        store.submit(record("run-bad", result={"x": object()}))
        store.submit(record("run-good"))
        await store.flush()
    assert await store.get("run-bad") is None
    assert await store.get("run-good") == record("run-good")
    assert any("run-bad" in r.getMessage() for r in caplog.records)


async def test_writer_survives_sqlite_errors(
    make_store: MakeStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "scores.db"
    store = await make_store(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON scores WHEN NEW.run_id LIKE 'bad%'"
        " BEGIN SELECT RAISE(ABORT, 'refused by test'); END"
    )
    conn.close()
    with caplog.at_level(logging.ERROR, logger="gateway.store"):
        store.submit(record("bad-1"))
        await store.flush()
    errors = [r for r in caplog.records if r.name == "gateway.store"]
    assert len(errors) == 1
    assert errors[0].exc_info is not None
    assert isinstance(errors[0].exc_info[1], sqlite3.Error)
    assert await store.get("bad-1") is None
    store.submit(record("good-1"))
    assert await store.get("good-1") == record("good-1")


async def test_cache_entries_load_newest_last_and_stay_bounded(make_store: MakeStore) -> None:
    store = await make_store()
    store.keep_cache(3)
    for key in ("a", "b", "c", "d"):
        store.put_cache(CacheEntry(key, f'{{"key": "{key}"}}'))
    store.put_cache(CacheEntry("b", '{"key": "b", "again": true}'))  # re-judged: newest now
    await store.flush()
    loaded = await store.cached(10)
    assert [entry.key for entry in loaded] == ["c", "d", "b"]
    assert loaded[-1].result == '{"key": "b", "again": true}'
    assert [entry.key for entry in await store.cached(2)] == ["d", "b"]


async def test_cache_entries_are_committed_at_close_and_refused_after(
    make_store: MakeStore, tmp_path: Path
) -> None:
    store = await make_store()
    store.submit(record("run-1"))
    store.put_cache(CacheEntry("k", "{}"))
    await store.close()
    with sqlite3.connect(tmp_path / "scores.db") as db:
        assert db.execute("SELECT COUNT(*) FROM score_cache").fetchone() == (1,)
        assert db.execute("SELECT COUNT(*) FROM scores").fetchone() == (1,)
    with pytest.raises(RuntimeError, match="closed"):
        store.put_cache(CacheEntry("late", "{}"))
    with pytest.raises(ValueError, match="limit"):
        store.keep_cache(0)


async def test_a_record_the_database_refuses_loses_only_itself(
    make_store: MakeStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "scores.db"
    store = await make_store(path)
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON scores WHEN NEW.run_id LIKE 'bad%'"
            " BEGIN SELECT RAISE(ABORT, 'refused by test'); END"
        )
    conn.close()
    good = [f"run-{index}" for index in range(6)]
    with caplog.at_level(logging.WARNING, logger="gateway.store"):
        for run_id in good[:3]:
            store.submit(record(run_id, status="scored"))
        store.submit(record("bad-1", status="scored"))
        for run_id in good[3:]:
            store.submit(record(run_id, status="scored"))
        await store.flush()
    assert raw_count(path) == len(good)
    assert await store.get("bad-1") is None
    failures = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(failures) == 1
    assert "bad-1" in failures[0].getMessage()


async def test_an_exception_outside_sqlite3_error_is_rolled_back(
    make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await make_store()
    failing = _FailingOnce()
    original = sqlite_file.commit_batch

    def commit(conn: sqlite3.Connection, batch: Batch) -> None:
        failing.conn = conn
        original(failing, batch)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlite_engine, "commit_batch", commit)
    store.submit(record("run-a", status="scored"))
    store.submit(record("run-b", status="scored"))
    await store.flush()
    monkeypatch.undo()
    assert failing.failed
    # The batch failed inside its transaction; it was rolled back, then each record
    # went in on its own.
    assert await store.get("run-a") is not None
    assert await store.get("run-b") is not None


class _FailingOnce:
    """Wraps a connection; its first `executemany` raises a non-sqlite3 exception."""

    conn: sqlite3.Connection
    failed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)

    def executemany(self, sql: str, rows: Any) -> Any:
        if not self.failed:
            self.failed = True
            raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
        return self.conn.executemany(sql, rows)


async def test_surrogates_are_stored_repaired(make_store: MakeStore) -> None:
    store = await make_store()
    store.submit(record("run-s", status="scored", model="m\ud800", result={"reason": "r\udfff"}))
    found = await store.get("run-s")
    assert found is not None
    assert found.model == "m\N{REPLACEMENT CHARACTER}"
    assert found.result == {"reason": "r\N{REPLACEMENT CHARACTER}"}


async def test_a_file_from_before_the_truncated_column_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE scores (run_id TEXT PRIMARY KEY, status TEXT NOT NULL,"
            " created_at REAL NOT NULL, model TEXT, key_name TEXT, mode TEXT,"
            " stream INTEGER NOT NULL DEFAULT 0, partial INTEGER NOT NULL DEFAULT 0,"
            " score REAL, verdict TEXT, reason TEXT, status_reason TEXT, result TEXT,"
            " response_id TEXT, request_id TEXT, prompt TEXT, completion TEXT, updated_at REAL)"
        )
        conn.execute("INSERT INTO scores (run_id, status, created_at) VALUES ('old', 'scored', 1)")
    conn.close()
    store = SQLiteStore(path)
    await store.open()
    try:
        old = await store.get("old")
        assert old is not None
        assert old.truncated is False
        store.submit(record("new", status="scored", truncated=True))
        new = await store.get("new")
        assert new is not None
        assert new.truncated is True
    finally:
        await store.close()


async def test_a_lookup_does_not_wait_behind_a_long_search_or_stats_query(
    make_store: MakeStore,
) -> None:
    store = await make_store()
    store.submit(record("run-a", status="scored"))
    await store.flush()
    await store.search(ScoreQuery())  # the scanning connection exists
    # A stats call over a wide window holds its connection; lookups use another.
    store._scan_lock.acquire()
    try:
        found = await asyncio.wait_for(store.get("run-a"), 5)
    finally:
        store._scan_lock.release()
    assert found is not None
    assert [found.run_id for found in await store.search(ScoreQuery())] == ["run-a"]
