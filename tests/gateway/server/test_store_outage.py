"""The store goes away under load and comes back. PostgreSQL: two gateways and a scorer,
real processes, the server stopped by the test; its connections killed; every byte late
and the network cut. SQLite: the
disk full. Nothing the clients see changes, and every announced run ends in exactly
one final record once the store is back."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import openai
import pytest
import yaml

from gateway.server.app import create_app
from gateway.store.records import FINAL_STATUSES
from testkit.fake_openai import JUDGE_MODEL, FakeOpenAI
from testkit.postgres import PgCluster
from testkit.servers import ServerThread
from testkit.waiting import wait_for
from tests.support.filesystems import Filler, small_tmpfs
from tests.support.fleet import Fleet
from tests.support.gateways import settings_for
from tests.support.subprocess_gateway import start_gateway, start_scorer
from tests.support.tcp_proxy import TcpProxy

# Processes, a cluster of its own, a 15 s outage and up to 60 s to settle after it.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

OUTAGE_SECONDS = 15.0
KEYS = {"monitor": "sk-monitor", "enforce": "sk-enforce"}
# What these tests lose or keep is the store's; a judge call that a loaded, slower machine
# answers late must not end its record `error`, so the judge gets time and a retry.
PATIENT_JUDGE = {"timeout": 60, "max_retries": 2}


def outage_config(path: Path, fake: FakeOpenAI, url: str) -> Path:
    config: dict[str, Any] = {
        "upstream": {"base_url": fake.base_url, "api_key": "sk-upstream-secret"},
        "judge": {"model": JUDGE_MODEL, "max_retries": 0, "timeout": 10, "max_concurrency": 8},
        "store": {"url": url},
        "queue": {"scorer": "external", "lease_seconds": 5, "drain_deadline": 2},
        "policies": {
            "default": {"mode": "monitor"},
            "strict": {"mode": "enforce", "block_threshold": 0.99},
        },
        "keys": [
            {"name": "monitor", "key": KEYS["monitor"]},
            {"name": "enforce", "key": KEYS["enforce"], "policy": "strict"},
        ],
    }
    path.write_text(yaml.safe_dump(config))
    return path


class Load:
    """Steady mixed traffic from a few threads: monitor and enforce, streams and whole
    answers, spread over the gateways. Keeps every run id announced and every failure."""

    def __init__(self, gateways: list[str], rate: float) -> None:
        self.gateways = gateways
        self.interval = 1.0 / rate
        self.run_ids: dict[str, str] = {}  # run id -> the mode it was asked for
        self.failures: list[str] = []
        self.answers: Counter[str] = Counter()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._sent = 0
        self._pool = ThreadPoolExecutor(max_workers=12)
        self._driver = threading.Thread(target=self._drive, daemon=True)
        self._began = time.monotonic()

    def start(self) -> Load:
        self._began = time.monotonic()
        self._driver.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._driver.join()
        self._pool.shutdown(wait=True)

    def _drive(self) -> None:
        began = self._began
        while not self._stop.is_set():
            self._pool.submit(self._one, self._sent)
            self._sent += 1
            pause = began + self._sent * self.interval - time.monotonic()
            if pause > 0:
                self._stop.wait(pause)

    def _one(self, index: int) -> None:
        mode = ("monitor", "enforce")[index % 2]
        stream = index % 4 >= 2
        url = self.gateways[index % len(self.gateways)]
        client = openai.OpenAI(base_url=f"{url}/v1", api_key=KEYS[mode], max_retries=0, timeout=30)
        messages: Any = [{"role": "user", "content": f"question {index}"}]
        try:
            if stream:
                with client.chat.completions.with_streaming_response.create(
                    model="m", messages=messages, stream=True
                ) as raw:
                    body = "".join(raw.iter_lines())
                    run_id = raw.headers["x-bias-run-id"]
                    assert "[DONE]" in body
            else:
                whole = client.chat.completions.with_raw_response.create(
                    model="m", messages=messages
                )
                assert whole.parse().choices[0].message.content
                run_id = whole.headers["x-bias-run-id"]
        except Exception as exc:  # every failure is kept and asserted on
            with self._lock:
                self.failures.append(
                    f"{time.monotonic() - self._began:.1f}s {mode} stream={stream}:"
                    f" {type(exc).__name__}: {exc}"
                )
            return
        with self._lock:
            self.run_ids[run_id] = mode
            self.answers[f"{mode} stream={stream}"] += 1


def final_rows(url: str) -> dict[str, tuple[str, int]]:
    """run_id -> (status, rows with that run id) in the database."""

    async def fetch() -> list[Any]:
        conn = await asyncpg.connect(url)
        try:
            return list(await conn.fetch("SELECT run_id, status FROM scores"))
        finally:
            await conn.close()

    rows = asyncio.run(fetch())
    counts = Counter(row["run_id"] for row in rows)
    return {row["run_id"]: (row["status"], counts[row["run_id"]]) for row in rows}


def readyz(url: str) -> int:
    return httpx.get(f"{url}/readyz", timeout=15).status_code


def test_a_postgres_outage_loses_no_record_and_no_answer(
    fake_openai: FakeOpenAI, tmp_path: Path, own_pg_cluster: PgCluster, fleet: Fleet
) -> None:
    cluster = own_pg_cluster
    fake_openai.verdicts = [("no", "A neutral greeting.", [])]
    fake_openai.unique_replies = True
    url = cluster.url(cluster.create_database("scores"))
    config = outage_config(tmp_path / "gateway.yaml", fake_openai, url)
    outputs_and_urls = [fleet.add(start_gateway(config)) for _ in range(2)]
    gateways = [gateway for _, gateway in outputs_and_urls]
    fleet.add(start_scorer(config))
    load = Load(gateways, rate=20).start()
    try:
        wait_for(lambda: len(load.run_ids) >= 20, "traffic before the outage", timeout=30)
        cluster.halt()
        halted = time.monotonic()
        wait_for(lambda: readyz(gateways[0]) == 503, "/readyz to see the store away", timeout=15)
        before = len(load.run_ids)
        wait_for(
            lambda: time.monotonic() - halted >= OUTAGE_SECONDS,
            "the outage to last",
            timeout=OUTAGE_SECONDS + 5,
            interval=0.5,
        )
        during = len(load.run_ids) - before
        cluster.resume()
        resumed = time.monotonic()
        wait_for(lambda: all(readyz(g) == 200 for g in gateways), "the pools back", timeout=30)
        wait_for(lambda: len(load.run_ids) >= before + during + 20, "traffic after", timeout=30)
    finally:
        load.stop()
    assert load.failures == []
    assert during >= 30  # answered while the database was away (20 a second are sent)

    def all_final() -> bool:
        rows = final_rows(url)
        return all(rows.get(run_id, ("", 0))[0] in FINAL_STATUSES for run_id in load.run_ids)

    wait_for(all_final, "every run id final", timeout=60, interval=0.5)
    final_within = time.monotonic() - resumed
    rows = final_rows(url)
    assert set(load.run_ids) <= set(rows)
    assert all(rows[run_id][1] == 1 for run_id in load.run_ids)  # one row, one final status
    statuses = Counter(rows[run_id][0] for run_id in load.run_ids)
    assert set(statuses) == {"scored"}, statuses
    for output, gateway in outputs_and_urls:
        metrics = httpx.get(f"{gateway}/metrics", timeout=5).text
        assert "bias_store_records_dropped_total{" not in metrics
        assert "score store unavailable" in output.text()
        assert "score store is back" in output.text()
    assert final_within < 60


def test_connections_killed_under_load_are_made_again_and_nothing_is_lost(
    fake_openai: FakeOpenAI, tmp_path: Path, make_pg_url: Callable[[], str]
) -> None:
    url = make_pg_url()
    fake_openai.unique_replies = True
    settings = settings_for(fake_openai, tmp_path, store={"url": url}, judge=PATIENT_JUDGE)
    server = ServerThread(create_app(settings), lifespan="on").start()
    name = url.rsplit("/", 1)[1]

    async def terminate() -> int:
        conn = await asyncpg.connect(url)
        try:
            killed = await conn.fetch(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = $1 AND pid <> pg_backend_pid()",
                name,
            )
            return len(killed)
        finally:
            await conn.close()

    load = Load([server.url], rate=20)
    try:
        load.start()
        for _ in range(3):
            wait_for(lambda: len(load.run_ids) >= 10, "traffic", timeout=30)
            # The pool may hold no connection at one instant (between a drop and its
            # reconnect): kill again until one was there to kill.
            wait_for(
                lambda: asyncio.run(terminate()) >= 1,
                "a connection to kill",
                timeout=30,
                interval=0.2,
            )
            after = len(load.run_ids) + 10
            wait_for(lambda: len(load.run_ids) >= after, "traffic after", timeout=30)  # noqa: B023
    finally:
        load.stop()
        try:
            assert load.failures == []

            def all_final() -> bool:
                rows = final_rows(url)
                return all(
                    rows.get(run_id, ("", 0))[0] in FINAL_STATUSES for run_id in load.run_ids
                )

            wait_for(all_final, "every run id final", timeout=60, interval=0.5)
            assert readyz(server.url) == 200
        finally:
            server.stop()


@pytest.mark.mounts
def test_a_full_disk_under_sqlite_keeps_the_proxy_answering(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.unique_replies = True
    with small_tmpfs(tmp_path / "disk", "2m") as disk:
        store = {"path": str(disk / "scores.db"), "capture_content": True}
        settings = settings_for(fake_openai, tmp_path, store=store)
        server = ServerThread(create_app(settings), lifespan="on").start()
        filler = Filler(disk)
        try:
            client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0)
            fake_openai.reply = "y" * 20_000  # captured: the records outgrow the WAL
            filler.fill()
            run_ids = []
            for index in range(12):
                raw = client.chat.completions.with_raw_response.create(
                    model="m", messages=[{"role": "user", "content": f"q{index}"}]
                )
                assert raw.http_response.status_code == 200
                run_ids.append(raw.headers["x-bias-run-id"])
            wait_for(lambda: readyz(server.url) == 503, "/readyz to see the full disk", timeout=15)
            ready = httpx.get(f"{server.url}/readyz", timeout=5).json()
            assert "full" in ready["store"]["error"]
            assert ready["store"]["buffered"] > 0
            # A lookup answers from what waits in the buffer.
            looked = httpx.get(f"{server.url}/v1/bias/scores/{run_ids[-1]}", timeout=5)
            assert looked.status_code == 200
            filler.remove()
            wait_for(lambda: readyz(server.url) == 200, "writing to resume", timeout=30)

            def final() -> bool:
                with sqlite3.connect(f"file:{disk / 'scores.db'}?mode=ro", uri=True) as conn:
                    rows = dict(conn.execute("SELECT run_id, status FROM scores").fetchall())
                return all(rows.get(run_id) in FINAL_STATUSES for run_id in run_ids)

            wait_for(final, "every record written", timeout=30)
        finally:
            filler.remove()
            server.stop()


def test_a_slow_database_cut_off_and_back_loses_nothing(
    fake_openai: FakeOpenAI, tmp_path: Path, pg_cluster: PgCluster, make_pg_url: Callable[[], str]
) -> None:
    """Every byte to and from the database 100 ms late, then a partition: the proxy
    drops every connection and refuses new ones for a few seconds."""
    fake_openai.unique_replies = True
    url = make_pg_url()
    proxy = TcpProxy(pg_cluster.host, pg_cluster.port).start()
    proxied = url.replace(f":{pg_cluster.port}/", f":{proxy.port}/")
    settings = settings_for(fake_openai, tmp_path, store={"url": proxied}, judge=PATIENT_JUDGE)
    server = ServerThread(create_app(settings), lifespan="on").start()
    proxy.delay = 0.1  # after the migrations, which are many round trips
    load = Load([server.url], rate=20)
    try:
        load.start()
        wait_for(lambda: len(load.run_ids) >= 20, "traffic through a slow database", timeout=30)
        proxy.cut()
        wait_for(lambda: readyz(server.url) == 503, "/readyz to see the partition", timeout=15)
        cut_at = len(load.run_ids)
        wait_for(lambda: len(load.run_ids) >= cut_at + 40, "traffic while cut off", timeout=30)
        proxy.restore()
        wait_for(lambda: readyz(server.url) == 200, "the pool back", timeout=30)
        after = len(load.run_ids) + 20
        wait_for(lambda: len(load.run_ids) >= after, "traffic after", timeout=30)
    finally:
        load.stop()
    try:
        assert load.failures == []

        def all_final() -> bool:
            rows = final_rows(url)
            return all(rows.get(run_id, ("", 0))[0] in FINAL_STATUSES for run_id in load.run_ids)

        wait_for(all_final, "every run id final", timeout=60, interval=0.5)
        rows = final_rows(url)
        assert {rows[run_id][0] for run_id in load.run_ids} == {"scored"}
        assert proxy.connections > 1  # the pool connected again after the cut
    finally:
        server.stop()
        proxy.stop()
