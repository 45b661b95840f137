"""The score store's behaviour, the same on both engines: SQLite and a real PostgreSQL."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from gateway.config import Settings, StoreSettings
from gateway.observability.metrics import Metrics
from gateway.server.app import create_app
from gateway.store import (
    CacheEntry,
    PostgresStore,
    ScoreRecord,
    SQLiteStore,
    Store,
    StoreError,
    open_store,
    redacted_url,
)
from gateway.store.migrations import MIGRATIONS, latest_version
from gateway.store.retention import DAY, Retention
from testkit.fake_openai import FakeOpenAI
from testkit.servers import ServerThread
from testkit.waiting import eventually_async, wait_for
from tests.support.gateways import settings_for
from tests.support.resources import ENGINES

OpenStore = Callable[..., Awaitable[Store]]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def location(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> StoreSettings:
    """Where a store of the engine under test lives (one fresh database per test)."""
    if engine == "postgresql":
        return StoreSettings(url=request.getfixturevalue("pg_url"))
    return StoreSettings(path=str(tmp_path / "scores.db"))


@pytest.fixture
async def open_store_at(location: StoreSettings) -> AsyncIterator[OpenStore]:
    opened: list[Store] = []

    async def make(**options: Any) -> Store:
        store = open_store(location)
        await store.open(**options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()


def record(run_id: str = "r1", **fields: Any) -> ScoreRecord:
    return ScoreRecord(
        run_id=run_id, status=fields.pop("status", "pending"), created_at=1.5, **fields
    )


async def test_the_engine_is_the_one_configured(engine: str, open_store_at: OpenStore) -> None:
    store = await open_store_at()
    assert store.engine == engine
    assert isinstance(store, PostgresStore if engine == "postgresql" else SQLiteStore)
    # What sets the engines apart for their callers: a database every host shares,
    # that announces new work.
    capabilities = {"sqlite": (False, False), "postgresql": (True, True)}[engine]
    assert (store.shared, store.notifies) == capabilities


async def test_a_record_comes_back_as_it_went_in(open_store_at: OpenStore) -> None:
    store = await open_store_at()
    full = record(
        status="scored",
        model="gpt-é",
        api="responses",
        key_name="team",
        mode="enforce",
        stream=True,
        partial=True,
        truncated=True,
        score=0.6667,
        verdict="flag",
        reason="Because 北方 engineers…",
        reason_status="done",
        status_reason=None,
        judge_calls=3,
        judge_tokens=1234,
        result={"score": 0.6667, "opinions": ["a", "b"], "nested": {"x": [1, 2.5, None]}},
        response_id="resp_1",
        request_id="req-1",
        prompt="user: hi",
        completion="text",
        updated_at=2.25,
        biased_opinions=2,
    )
    store.submit(full)
    assert await store.get("r1") == full
    assert await store.get("missing") is None


async def test_text_the_database_cannot_hold_is_repaired(
    engine: str, open_store_at: OpenStore
) -> None:
    store = await open_store_at()
    store.submit(record(reason="lone \ud800 surrogate", completion="nul \x00 byte"))
    stored = await store.get("r1")
    assert stored is not None
    assert stored.reason == "lone \ufffd surrogate"
    # SQLite text holds a NUL; PostgreSQL's holds none.
    expected = {"sqlite": "nul \x00 byte", "postgresql": "nul \ufffd byte"}[engine]
    assert stored.completion == expected


@pytest.mark.parametrize("where", ["loop", "thread"])
async def test_a_record_is_committed_without_a_flush(open_store_at: OpenStore, where: str) -> None:
    """The writer wakes for a lone record: nothing but the submit asks it to commit."""
    store = await open_store_at()
    reader = await open_store_at(sweep_pending=False)  # its reads flush nothing of store's
    if where == "loop":
        store.submit(record())
    else:
        thread = threading.Thread(target=store.submit, args=(record(),))
        thread.start()
        thread.join()

    async def committed() -> int:
        return (await reader.status_counts())["pending"]

    await eventually_async(committed, "the record to be committed")


async def test_later_submissions_win_in_order(open_store_at: OpenStore) -> None:
    store = await open_store_at()
    store.submit(record(status="pending"))
    store.submit(record(status="scored", score=1.0, verdict="block"))
    store.submit(record("r2", status="pending"))
    stored = await store.get("r1")
    assert stored is not None
    assert (stored.status, stored.score, stored.verdict) == ("scored", 1.0, "block")
    assert await store.status_counts() == {
        "dropped": 0,
        "error": 0,
        "pending": 1,
        "scored": 1,
        "skipped": 0,
    }


async def test_a_bad_record_loses_only_itself(open_store_at: OpenStore) -> None:
    store = await open_store_at()
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    for index in range(5):
        store.submit(record(f"ok-{index}"))
    store.submit(record("bad", result=cyclic))
    store.submit(record("after"))
    await store.flush()
    assert await store.get("bad") is None
    assert all([await store.get(f"ok-{index}") for index in range(5)])
    assert await store.get("after") is not None


async def test_unknown_status_and_bad_run_id_are_refused_at_once(open_store_at: OpenStore) -> None:
    store = await open_store_at()
    with pytest.raises(ValueError, match="unknown score status"):
        store.submit(ScoreRecord(run_id="r", status="weird", created_at=1.0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="run_id must be a str"):
        store.submit(ScoreRecord(run_id=1, status="pending", created_at=1.0))  # type: ignore[arg-type]


async def test_the_cache_keeps_the_newest_entries(open_store_at: OpenStore) -> None:
    store = await open_store_at()
    store.keep_cache(3)
    for key in ("a", "b", "c", "d"):
        store.put_cache(CacheEntry(key, f"result-{key}"))
    store.put_cache(CacheEntry("b", "result-b2"))  # re-judged: now the newest
    await store.flush()
    assert await store.cached(10) == [
        CacheEntry("c", "result-c"),
        CacheEntry("d", "result-d"),
        CacheEntry("b", "result-b2"),
    ]
    assert await store.cached(2) == [CacheEntry("d", "result-d"), CacheEntry("b", "result-b2")]


async def test_the_cache_keeps_as_many_as_asked_when_the_newest_is_replaced(
    open_store_at: OpenStore,
) -> None:
    # A replaced entry leaves a gap in the insertion order, among the newest here; the
    # limit is a count of entries, not of places in that order.
    store = await open_store_at()
    store.keep_cache(2)
    for key, result in (("a", "a1"), ("b", "b1"), ("c", "c1"), ("c", "c2"), ("c", "c3")):
        store.put_cache(CacheEntry(key, result))
        await store.flush()
    assert await store.cached(10) == [CacheEntry("b", "b1"), CacheEntry("c", "c3")]


async def test_close_commits_and_then_refuses(location: StoreSettings) -> None:
    store = open_store(location)
    await store.open()
    store.submit(record())
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        store.submit(record("r2"))
    again = open_store(location)
    await again.open(sweep_pending=False)
    try:
        assert await again.get("r1") is not None
    finally:
        await again.close()


async def test_ping_answers_while_the_store_is_up(open_store_at: OpenStore) -> None:
    store = await open_store_at()
    await store.ping()


# -- migrations ---------------------------------------------------------------------


async def _applied(location: StoreSettings) -> list[int]:
    if location.url is not None:
        conn = await asyncpg.connect(location.url.get_secret_value())
        try:
            return [row[0] for row in await conn.fetch("SELECT version FROM schema_migrations")]
        finally:
            await conn.close()
    with sqlite3.connect(location.path) as conn:
        return [row[0] for row in conn.execute("SELECT version FROM schema_migrations")]


async def test_migrations_run_once_and_are_recorded(
    location: StoreSettings, open_store_at: OpenStore
) -> None:
    await open_store_at()
    await open_store_at(sweep_pending=False)  # a second start applies nothing
    assert await _applied(location) == [migration.version for migration in MIGRATIONS]


async def test_stores_starting_at_once_migrate_safely(location: StoreSettings) -> None:
    stores = [open_store(location) for _ in range(4)]
    await asyncio.gather(*(store.open(sweep_pending=False) for store in stores))
    try:
        assert await _applied(location) == [migration.version for migration in MIGRATIONS]
        stores[0].submit(record())
        await stores[0].flush()
        assert all([await store.get("r1") for store in stores])  # one shared schema
    finally:
        for store in stores:
            await store.close()


async def test_a_newer_schema_is_refused(location: StoreSettings, open_store_at: OpenStore) -> None:
    await open_store_at()
    future = latest_version() + 1
    if location.url is not None:
        conn = await asyncpg.connect(location.url.get_secret_value())
        try:
            await conn.execute(
                "INSERT INTO schema_migrations VALUES ($1, 'from the future', 0)", future
            )
        finally:
            await conn.close()
    else:
        with sqlite3.connect(location.path) as sqlite:
            sqlite.execute(
                "INSERT INTO schema_migrations VALUES (?, 'from the future', 0)", (future,)
            )
    store = open_store(location)
    with pytest.raises(StoreError, match=f"version {future}, newer than this gateway knows"):
        await store.open()


def test_a_pre_versioning_sqlite_file_is_brought_up_to_version_1(tmp_path: Path) -> None:
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

    async def check() -> None:
        store = SQLiteStore(path)
        await store.open()
        try:
            old = await store.get("old")
            assert old is not None
            assert (old.status, old.api, old.truncated, old.judge_calls) == (
                "scored",
                None,
                False,
                None,
            )
        finally:
            await store.close()

    asyncio.run(check())


# -- PostgreSQL only ------------------------------------------------------------------


def test_a_postgres_url_is_never_logged_with_its_password() -> None:
    url = "postgresql://gw:s3cret-pw@db.internal:5432/scores"
    assert redacted_url(url) == "postgresql://gw:****@db.internal:5432/scores"
    assert redacted_url("postgresql://gw@db/scores") == "postgresql://gw@db/scores"
    assert "s3cret-pw" not in PostgresStore(url).describe()


async def test_an_unreachable_postgres_is_a_store_error_without_the_password() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = PostgresStore(f"postgresql://gw:s3cret-pw@127.0.0.1:{port}/nothing")
    with pytest.raises(StoreError) as caught:
        await store.open()
    assert "s3cret-pw" not in str(caught.value)
    assert f"127.0.0.1:{port}" in str(caught.value)


def test_two_gateways_on_one_postgres_answer_each_others_lookups(
    fake_openai: FakeOpenAI, tmp_path: Path, pg_url: str
) -> None:
    """Lookups work on any replica: the score of a response one gateway served is
    answered by the other, and `/readyz` reports the database."""
    fake_openai.reply = "Engineers from the north are lazy."
    settings = settings_for(fake_openai, tmp_path, store={"url": pg_url})
    servers = [ServerThread(create_app(settings), lifespan="on").start() for _ in range(2)]
    try:
        with httpx.Client(base_url=servers[0].url, timeout=10) as first:
            response = first.post(
                "/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            )
        run_id = response.headers["x-bias-run-id"]
        with httpx.Client(base_url=servers[1].url, timeout=10) as second:

            def scored() -> dict[str, Any] | None:
                found = second.get(f"/v1/bias/scores/{run_id}")
                answered = found.status_code == 200 and found.json()["status"] == "scored"
                return found.json() if answered else None

            score = wait_for(scored, "the other gateway to answer the score")
            ready = second.get("/readyz").json()
        assert score["score"] == 1
        assert ready["store"]["engine"] == "postgresql"
        assert ready["status"] == "ready"
    finally:
        for server in servers:
            server.stop()


def test_readyz_is_503_when_postgres_stops_answering(
    fake_openai: FakeOpenAI, tmp_path: Path, make_pg_url: Callable[[], str]
) -> None:
    url = make_pg_url()
    settings: Settings = settings_for(fake_openai, tmp_path, store={"url": url})
    server = ServerThread(create_app(settings), lifespan="on").start()
    try:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            assert http.get("/readyz").status_code == 200

            async def cut() -> None:
                # Every connection of the database is ended, and new ones are refused.
                conn = await asyncpg.connect(url.rsplit("/", 1)[0] + "/postgres")
                try:
                    name = url.rsplit("/", 1)[1]
                    await conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
                    await conn.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
                        name,
                    )
                finally:
                    await conn.close()

            asyncio.run(cut())
            answer = http.get("/readyz")
            assert answer.status_code == 503
            assert answer.json()["status"] == "store unavailable"
            password = url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
            assert "****" in answer.json()["store"]["where"]
            assert password not in answer.text
    finally:
        server.stop()


def test_the_migrate_command_brings_a_database_up_to_date(
    location: StoreSettings, tmp_path: Path
) -> None:
    config = tmp_path / "gateway.yaml"
    if location.url is not None:
        config.write_text(f"store:\n  url: {location.url.get_secret_value()}\n")
    else:
        config.write_text(f"store:\n  path: {location.path}\n")
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "migrate", "--config", str(config)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"is at schema version {latest_version()}" in done.stdout
    if location.url is not None:  # a URL's password is never shown
        password = location.url.get_secret_value().split("@", 1)[0].rsplit(":", 1)[1]
        assert "****" in done.stdout
        assert password not in done.stdout + done.stderr
    assert asyncio.run(_applied(location)) == [migration.version for migration in MIGRATIONS]


# -- retention --------------------------------------------------------------------------


async def test_retention_prunes_old_final_records_in_bounded_batches(
    open_store_at: OpenStore,
) -> None:
    store = await open_store_at()
    now = 10 * DAY
    for index in range(7):  # old and final
        store.submit(ScoreRecord(f"old-{index}", "scored", created_at=now - 40 * DAY))
    store.submit(ScoreRecord("old-pending", "pending", created_at=now - 40 * DAY))
    store.submit(ScoreRecord("recent", "scored", created_at=now - 1 * DAY))
    store.keep_cache(100)
    store.put_cache(CacheEntry("k", "v"))  # stored_at is now (real time): far newer
    await store.flush()
    metrics = Metrics()
    retention = Retention(store, 30, metrics=metrics, batch=3, pause=0)
    batches: list[int] = []
    real_prune = store.prune

    async def counted(before: float, *, batch: int) -> int:
        deleted = await real_prune(before, batch=batch)
        batches.append(deleted)
        return deleted

    store.prune = counted  # type: ignore[method-assign]  # to see the batches
    assert await retention.prune_once(now=now) == 7
    assert batches == [3, 3, 1]  # never more than a batch at a time
    assert [r for r in ("old-0", "old-6") if await store.get(r)] == []
    assert await store.get("old-pending") is not None  # pending work is never pruned
    assert await store.get("recent") is not None
    assert await store.cached(10) == [CacheEntry("k", "v")]
    assert b"bias_store_pruned_total 7.0" in metrics.render()


async def test_old_cache_entries_are_pruned_too(open_store_at: OpenStore) -> None:
    store = await open_store_at()
    store.keep_cache(100)
    store.put_cache(CacheEntry("k", "v"))
    await store.flush()
    retention = Retention(store, 1, batch=10, pause=0)
    assert await retention.prune_once(now=time.time() + 2 * DAY) == 1
    assert await store.cached(10) == []


def test_retention_zero_keeps_everything() -> None:
    with pytest.raises(ValueError, match="keeps everything"):
        Retention(None, 0)  # type: ignore[arg-type]
    assert Settings().store.retention_days == 30


def test_a_text_one_gateway_judged_is_not_judged_again_by_another(
    fake_openai: FakeOpenAI, tmp_path: Path, pg_url: str
) -> None:
    """On PostgreSQL the content-hash cache is shared by the replicas."""
    fake_openai.reply = "Engineers from the north are lazy."
    settings = settings_for(
        fake_openai, tmp_path, store={"url": pg_url}, policies={"default": {"mode": "enforce"}}
    )
    servers = [ServerThread(create_app(settings), lifespan="on").start() for _ in range(2)]
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    try:
        with httpx.Client(timeout=10) as http:
            first = http.post(f"{servers[0].url}/v1/chat/completions", json=body)
            assert first.headers["x-bias-verdict"] == "block"
            judged = fake_openai.judge_calls()
            assert judged >= 2
            # The second replica's own LRU is empty: the verdict comes from the database.

            def unjudged() -> httpx.Response | None:
                before = fake_openai.judge_calls()
                answer = http.post(f"{servers[1].url}/v1/chat/completions", json=body)
                # Judged again while the first's verdict is not yet written: ask once more.
                return answer if fake_openai.judge_calls() == before else None

            second = wait_for(unjudged, "an answer the second replica did not judge again")
        assert second.headers["x-bias-verdict"] == "block"
    finally:
        for server in servers:
            server.stop()
