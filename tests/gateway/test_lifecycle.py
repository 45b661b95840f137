"""Queue overflow, SIGTERM drain, restarts and startup, with real processes and files."""

from __future__ import annotations

import asyncio
import gc
import json
import signal
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import yaml

from gateway.app import create_app
from gateway.store import ScoreRecord, ScoreStore
from tests.gateway.conftest import RunningGateway, settings_for
from tests.support.fake_openai import JUDGE_MODEL, FakeOpenAI, Fault
from tests.support.servers import ServerThread
from tests.support.subprocess_gateway import gateway_command, start_gateway

MakeGateway = Callable[..., RunningGateway]
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def write_config(path: Path, fake: FakeOpenAI, store: Path, **overrides: Any) -> Path:
    config: dict[str, Any] = {
        "upstream": {"base_url": fake.base_url, "api_key": "sk-upstream-secret"},
        "judge": {"model": JUDGE_MODEL, "max_retries": 0, "timeout": 10, "cache_size": 0},
        "store": {"path": str(store)},
        "queue": {"size": 100, "drain_deadline": 1},
        **overrides,
    }
    path.write_text(yaml.safe_dump(config))
    return path


def statuses(store: Path) -> list[tuple[str, str | None]]:
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT status, status_reason FROM scores ORDER BY created_at").fetchall()
    return [(row[0], row[1]) for row in rows]


def test_full_queue_records_skipped_overloaded(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.judge_delay = 0.2
    gateway = make_gateway(queue={"size": 1}, judge={"max_concurrency": 1})

    with gateway.http() as http:
        responses = [http.post("/v1/chat/completions", json=REQUEST) for _ in range(6)]

    assert all(response.status_code == 200 for response in responses)
    skipped = [r for r in responses if r.headers["x-bias-status"] == "skipped"]
    assert len(skipped) >= 3
    assert {r.headers["x-bias-skip-reason"] for r in skipped} == {"overloaded"}
    assert gateway.state.scoring.skipped_overloaded == len(skipped)
    for response in responses:
        record = gateway.wait_for_score(response.headers["x-bias-run-id"])
        assert record["status"] in {"scored", "skipped"}
    record = gateway.wait_for_score(skipped[0].headers["x-bias-run-id"])
    assert record["status_reason"] == "overloaded"


async def test_full_wait_slows_responses_down_instead_of_skipping_them(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.judge_delay = 0.05  # about 0.15 s per scored response
    gateway = make_gateway(
        queue={"size": 1, "full_wait": 10}, judge={"cache_size": 0, "max_concurrency": 1}
    )
    client = gateway.async_client()
    messages: Any = REQUEST["messages"]

    async def ask(index: int) -> tuple[str, str]:
        raw = await client.chat.completions.with_raw_response.create(
            model="m", messages=messages, stream=index % 2 == 1
        )
        if index % 2 == 1:
            parsed = raw.parse()
            # `stream` is only known at run time here, so narrow to the stream to read it.
            assert isinstance(parsed, openai.AsyncStream)
            async for _ in parsed:  # a stream: read it whole
                pass
        return raw.headers["x-bias-status"], raw.headers["x-bias-run-id"]

    answers = await asyncio.gather(*(ask(index) for index in range(6)))
    await client.close()

    assert [status for status, _ in answers] == ["pending"] * 6
    assert gateway.state.scoring.skipped_overloaded == 0
    for _, run_id in answers:
        record = await asyncio.to_thread(gateway.wait_for_score, run_id)
        assert record["status"] == "scored"
    assert gateway.state.scoring.queue_depth == 0


def test_full_wait_gives_up_and_skips_then_frees_every_place(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.judge_delay = 0.2
    gateway = make_gateway(
        queue={"size": 1, "full_wait": 0.05}, judge={"cache_size": 0, "max_concurrency": 1}
    )
    with gateway.http() as http:
        responses = [http.post("/v1/chat/completions", json=REQUEST) for _ in range(4)]
        skipped = [r for r in responses if r.headers["x-bias-status"] == "skipped"]
        assert len(skipped) >= 2
        assert {r.headers["x-bias-skip-reason"] for r in skipped} == {"overloaded"}
        assert gateway.wait_for_score(skipped[0].headers["x-bias-run-id"])["status_reason"] == (
            "overloaded"
        )
        # An upstream failure and an unreachable upstream give their places back too.
        fake_openai.fail(Fault(step="chat", status=500))
        assert http.post("/v1/chat/completions", json=REQUEST).status_code == 500
        for response in responses:
            gateway.wait_for_score(response.headers["x-bias-run-id"])
        fake_openai.judge_delay = 0.0
        later = http.post("/v1/chat/completions", json=REQUEST)
    assert later.headers["x-bias-status"] == "pending"
    assert gateway.wait_for_score(later.headers["x-bias-run-id"])["status"] == "scored"


def test_an_unreachable_upstream_gives_back_its_place(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(
        queue={"size": 1, "full_wait": 0.05},
        judge={"max_concurrency": 1},
        models={"gone": {"base_url": "http://127.0.0.1:9/v1"}},
    )
    with gateway.http() as http:
        for _ in range(3):
            # Connection refused is UpstreamUnavailable: 502, not a crash (500) or a hang (504).
            failed = http.post("/v1/chat/completions", json={**REQUEST, "model": "gone"})
            assert failed.status_code == 502, failed.text
            assert failed.json()["error"]["code"] == "upstream_unavailable"
        response = http.post("/v1/chat/completions", json=REQUEST)
    assert response.headers["x-bias-status"] == "pending"
    assert gateway.wait_for_score(response.headers["x-bias-run-id"])["status"] == "scored"


def test_sigterm_drains_then_records_the_rest_as_dropped(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.judge_delay = 0.25  # about 0.75 s per scored response
    store = tmp_path / "scores.db"
    judge = {"model": JUDGE_MODEL, "max_retries": 0, "cache_size": 0, "max_concurrency": 1}
    config = write_config(tmp_path / "gateway.yaml", fake_openai, store, judge=judge)
    process, url = start_gateway(config)
    try:
        run_ids = [
            httpx.post(f"{url}/v1/chat/completions", json=REQUEST, timeout=10).headers[
                "x-bias-run-id"
            ]
            for _ in range(6)
        ]
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    finally:
        process.kill()
    # uvicorn re-raises the caught SIGTERM after a clean shutdown, so -15 is a clean exit too.
    assert process.returncode in (0, -signal.SIGTERM), output
    assert "Application shutdown complete." in output

    rows = statuses(store)
    assert len(rows) == 6
    final = [status for status, _ in rows]
    assert "pending" not in final
    assert final.count("dropped") >= 2
    assert final.count("scored") >= 1
    assert {reason for status, reason in rows if status == "dropped"} == {"shutdown"}
    with sqlite3.connect(store) as db:
        stored = {row[0] for row in db.execute("SELECT run_id FROM scores")}
    assert stored == set(run_ids)
    logged = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert any(line.get("event") == "scoring jobs dropped at shutdown" for line in logged)


def test_restart_marks_leftover_pending_as_dropped(tmp_path: Path) -> None:
    path = tmp_path / "scores.db"

    async def crash_with_pending() -> None:
        store = ScoreStore(path)
        store.start()
        store.submit(ScoreRecord(run_id="left-behind", status="pending", created_at=1.0))
        store.submit(ScoreRecord(run_id="done", status="scored", created_at=1.0, score=0.5))
        await store.close()

    asyncio.run(crash_with_pending())
    completed = subprocess.run(
        [*gateway_command(), "check-config", "/nonexistent.yaml"], capture_output=True, text=True
    )
    assert completed.returncode == 2

    async def reopen() -> tuple[ScoreRecord | None, ScoreRecord | None]:
        store = ScoreStore(path)
        store.start()
        try:
            return await store.get("left-behind"), await store.get("done")
        finally:
            await store.close()

    left, done = asyncio.run(reopen())
    assert left is not None
    assert left.status == "dropped"
    assert left.status_reason == "gateway_restarted"
    assert done is not None
    assert done.status == "scored"


def test_bad_config_fails_at_startup_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("policies:\n  default:\n    mode: loud\n")
    completed = subprocess.run(
        [*gateway_command(), "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 2
    assert completed.stdout == ""
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "policies.default.mode" in lines[0]
    assert "loud" in lines[0]


def test_check_config_masks_secrets(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    config = write_config(
        tmp_path / "c.yaml", fake_openai, tmp_path / "s.db", api_keys="gateway-secret-key-1"
    )
    completed = subprocess.run(
        [*gateway_command(), "check-config", str(config)], capture_output=True, text=True
    )
    assert completed.returncode == 0, completed.stderr
    shown = json.loads(completed.stdout)
    assert shown["upstream"]["base_url"] == fake_openai.base_url
    assert "sk-upstream-secret" not in completed.stdout
    assert "gateway-secret-key-1" not in completed.stdout
    assert shown["keys"][0]["name"] == "key-1"


def test_starts_without_an_upstream_key_and_relays_upstream_errors(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    config = Path(__file__).parents[2] / "config" / "gateway.yaml"
    env = {
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "",
        "BIAS_JUDGE_MODEL": JUDGE_MODEL,
        "BIAS_STORE_PATH": str(tmp_path / "s.db"),
    }
    process, url = start_gateway(config, env=env)
    try:
        ok = httpx.post(f"{url}/v1/chat/completions", json=REQUEST, timeout=10)
        assert ok.status_code == 200
        assert "authorization" not in fake_openai.requests[0].headers
        assert ok.headers["x-bias-status"] == "pending"
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)


def test_served_app_freezes_its_startup_objects(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    # `serve` builds the app with freeze_gc=True; tests build theirs without it.
    assert gc.get_freeze_count() == 0
    app = create_app(settings_for(fake_openai, tmp_path), freeze_gc=True)
    server = ServerThread(app, lifespan="on").start()
    try:
        frozen = gc.get_freeze_count()
    finally:
        server.stop()
        gc.unfreeze()
    # Every module, setting and pool alive at startup: tens of thousands of objects.
    assert frozen > 10_000
