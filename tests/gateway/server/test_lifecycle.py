"""Queue overflow, SIGTERM drain, restarts and startup, with real processes and files."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import openai
import psutil
import pytest
import yaml

from gateway.server.app import create_app
from gateway.store import ScoreRecord, SQLiteStore
from testkit.fake_openai import JUDGE_MODEL, FakeOpenAI, Fault
from testkit.servers import ServerThread
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, settings_for
from tests.support.subprocess_gateway import free_port, gateway_command, start_gateway

MakeGateway = Callable[..., RunningGateway]
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def write_config(path: Path, fake: FakeOpenAI, store: Path, **overrides: Any) -> Path:
    config: dict[str, Any] = {
        "upstream": {"base_url": fake.base_url, "api_key": "sk-upstream-secret"},
        "judge": {"model": JUDGE_MODEL, "max_retries": 0, "timeout": 10, "cache": {"size": 0}},
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


async def test_queue_places_hold_with_a_slow_rate_limited_judge(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    """A judge of ~1 s a call that answers 429 above 1 call a second: every place is
    held through the wait and handed on, nothing is skipped, and all of them come back."""
    fake_openai.judge_delay = 1.0
    fake_openai.judge_max_rps = 1  # below the 2 calls a second two slots would send
    fake_openai.unique_replies = True
    gateway = make_gateway(
        queue={"size": 2, "full_wait": 60},
        judge={"cache_size": 0, "max_concurrency": 2, "reason": "off"},
    )
    client = gateway.async_client(timeout=60)
    messages: Any = REQUEST["messages"]

    async def ask(index: int) -> str:
        raw = await client.chat.completions.with_raw_response.create(
            model="m", messages=messages, stream=index % 2 == 1
        )
        if index % 2 == 1:
            parsed = raw.parse()
            assert isinstance(parsed, openai.AsyncStream)
            async for _ in parsed:
                pass
        return raw.headers["x-bias-run-id"]

    run_ids = await asyncio.gather(*(ask(index) for index in range(4)))
    await client.close()
    for run_id in run_ids:
        record = await asyncio.to_thread(gateway.wait_for_score, run_id, timeout=60)
        assert record["status"] == "scored"
    scoring = gateway.state.scoring
    assert scoring.skipped_overloaded == 0
    assert fake_openai.rate_limited > 0  # the judge did push back
    # Every place came back: a full queue's worth can be reserved again at once.
    assert [scoring.queue._room.locked(), scoring.queue._room._value] == [False, 2]


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


def work_rows(store: Path) -> dict[str, tuple[str, bool, str | None]]:
    """Each run's status, whether it still holds work, and its lease holder."""
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT run_id, status, work IS NOT NULL, leased_by FROM scores")
        found = {row[0]: (row[1], bool(row[2]), row[3]) for row in rows}
    db.close()
    return found


def wait_until_all_scored(store: Path, run_ids: list[str]) -> None:
    def all_scored() -> bool:
        rows = work_rows(store)
        return all(rows.get(run_id, ("",))[0] == "scored" for run_id in run_ids)

    wait_for(all_scored, lambda: f"all to be scored: {work_rows(store)}", timeout=30)


def post_monitored(url: str, count: int) -> list[str]:
    return [
        httpx.post(f"{url}/v1/chat/completions", json=REQUEST, timeout=10).headers["x-bias-run-id"]
        for _ in range(count)
    ]


@pytest.mark.slow
def test_sigterm_past_the_drain_deadline_leaves_work_pending_and_a_restart_scores_it(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.judge_delay = 0.25  # about 0.75 s per scored response
    store = tmp_path / "scores.db"
    judge = {"model": JUDGE_MODEL, "max_retries": 0, "cache_size": 0, "max_concurrency": 1}
    config = write_config(tmp_path / "gateway.yaml", fake_openai, store, judge=judge)
    process, url = start_gateway(config)
    try:
        run_ids = post_monitored(url, 6)
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    finally:
        process.kill()
    # uvicorn re-raises the caught SIGTERM after a clean shutdown, so -15 is a clean exit too.
    assert process.returncode in (0, -signal.SIGTERM), output
    assert "Application shutdown complete." in output

    rows = work_rows(store)
    assert set(rows) == set(run_ids)
    left = [run_id for run_id, (status, _, _) in rows.items() if status == "pending"]
    assert len(left) >= 2  # a 1 s drain finishes about one of the six
    assert {status for status, _, _ in rows.values()} == {"scored", "pending"}
    # Unscored work keeps its text to judge, and its lease was given back at the stop;
    # a scored record keeps no work.
    assert all(rows[run_id][1:] == (True, None) for run_id in left)
    assert all(not rows[run_id][1] for run_id in set(run_ids) - set(left))
    logged = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    stop = [line for line in logged if line.get("event", "").startswith("scorings left pending")]
    assert stop
    assert stop[0]["left_pending"] == len(left)

    fake_openai.judge_delay = 0
    judged_before = fake_openai.judge_calls()
    again, _ = start_gateway(config)
    try:
        wait_until_all_scored(store, run_ids)
    finally:
        again.send_signal(signal.SIGTERM)
        again.wait(timeout=30)
    # The restart judged what was left, and only that: 3 calls a scoring.
    assert fake_openai.judge_calls() - judged_before == 3 * len(left)
    assert not any(has_work for _, has_work, _ in work_rows(store).values())


@pytest.mark.slow
def test_kill_9_with_pending_work_then_a_restart_scores_all_of_it(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.judge_delay = 0.3
    store = tmp_path / "scores.db"
    judge = {"model": JUDGE_MODEL, "max_retries": 0, "cache_size": 0, "max_concurrency": 2}
    config = write_config(tmp_path / "gateway.yaml", fake_openai, store, judge=judge)
    process, url = start_gateway(config)
    try:
        run_ids = post_monitored(url, 8)
        # The pending rows are committed a few milliseconds after the answer (the store
        # writes off the request path): the kill comes once they are, and before the
        # judge (two slots, ~1 s a scoring) can have scored more than a few.
        wait_for(
            lambda: len(work_rows(store)) == len(run_ids),
            lambda: f"the pending rows: {work_rows(store)}",
            timeout=5,
            interval=0.01,
        )
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        process.kill()
    assert process.returncode == -signal.SIGKILL
    rows = work_rows(store)
    left = [run_id for run_id, (status, _, _) in rows.items() if status == "pending"]
    assert len(left) >= 4, rows  # two judge slots at ~1 s a scoring cannot have done more
    # The dead process still holds their leases; a restart on SQLite takes them back at once.
    assert all(rows[run_id][1] and rows[run_id][2] for run_id in left)

    fake_openai.judge_delay = 0
    again, _ = start_gateway(config)
    try:
        wait_until_all_scored(store, run_ids)
    finally:
        again.send_signal(signal.SIGTERM)
        output, _ = again.communicate(timeout=30)
    output_lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    resumed = [line for line in output_lines if "resuming" in line.get("event", "")]
    assert resumed, output


@pytest.mark.slow
def test_restart_marks_leftover_pending_as_dropped(tmp_path: Path) -> None:
    path = tmp_path / "scores.db"

    async def crash_with_pending() -> None:
        store = SQLiteStore(path)
        await store.open()
        store.submit(ScoreRecord(run_id="left-behind", status="pending", created_at=1.0))
        store.submit(ScoreRecord(run_id="done", status="scored", created_at=1.0, score=0.5))
        await store.close()

    asyncio.run(crash_with_pending())
    completed = subprocess.run(
        [*gateway_command(), "check-config", "/nonexistent.yaml"], capture_output=True, text=True
    )
    assert completed.returncode == 2

    async def reopen() -> tuple[ScoreRecord | None, ScoreRecord | None]:
        store = SQLiteStore(path)
        await store.open()
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# Every variable the shipped config reads: the CLI tests below run without them.
SHIPPED_VARIABLES = frozenset(
    re.findall(
        r"\$\{([A-Z_]+)", (Path(__file__).parents[3] / "config" / "gateway.yaml").read_text()
    )
)


def cli(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in SHIPPED_VARIABLES}
    return subprocess.run(
        [*gateway_command(), *args],
        env={**environment, **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
def test_check_config_without_a_path_checks_the_environment(tmp_path: Path) -> None:
    env = {"BIAS_STORE_PATH": "data/scores.db", "GATEWAY_PORT": "9191"}
    completed = cli("check-config", env=env, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    shown = json.loads(completed.stdout)
    assert shown["server"]["port"] == 9191
    assert shown["store"]["path"] == str(tmp_path / "data" / "scores.db")
    assert completed.stderr == (
        "bias-gateway: config OK: environment variables only"
        " (the settings of config/gateway.yaml)\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_check_config_names_the_file_and_shows_the_store_beside_it(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    (tmp_path / "conf").mkdir()
    write_config(tmp_path / "conf" / "g.yaml", fake_openai, Path("scores.db"))
    completed = cli("check-config", "conf/g.yaml", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["store"]["path"] == str(tmp_path / "conf" / "scores.db")
    assert completed.stderr == f"bias-gateway: config OK: {tmp_path / 'conf' / 'g.yaml'}\n"


@pytest.mark.slow
def test_check_config_reports_every_missing_variable_at_once(tmp_path: Path) -> None:
    config = tmp_path / "g.yaml"
    config.write_text("upstream:\n  api_key: ${TEAM_A_KEY}\njudge:\n  api_key: ${TEAM_B_KEY}\n")
    completed = cli("check-config", str(config))
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr == (
        f"bias-gateway: config error: {config}: upstream.api_key: environment variable"
        " TEAM_A_KEY is not set; judge.api_key: environment variable TEAM_B_KEY is not set"
        " (write ${NAME:-} to make one optional)\n"
    )


@pytest.mark.slow
def test_check_config_names_the_variable_behind_a_bad_value() -> None:
    completed = cli("check-config", env={"BIAS_BLOCK_THRESHOLD": "abc"})
    assert completed.returncode == 2
    assert completed.stderr == (
        "bias-gateway: config error: environment: BIAS_BLOCK_THRESHOLD=abc:"
        " policies.default.block_threshold: Input should be a valid number, unable to parse"
        " string as a number\n"
    )


@pytest.mark.slow
def test_serve_on_a_taken_port_fails_before_creating_the_store(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    store = tmp_path / "scores.db"
    config = write_config(tmp_path / "g.yaml", fake_openai, store)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        completed = cli("serve", "--config", str(config), "--port", str(port))
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr == (
        f"bias-gateway: config error: server: cannot listen on 127.0.0.1:{port}:"
        " Address already in use\n"
    )
    assert not store.exists()
    assert [path.name for path in tmp_path.iterdir()] == ["g.yaml"]


@pytest.mark.slow
def test_serve_refuses_a_missing_store_folder_and_creates_nothing(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "elsewhere").mkdir()
    config = write_config(tmp_path / "conf" / "g.yaml", fake_openai, Path("data/scores.db"))
    port = str(free_port())
    completed = cli("serve", "--config", str(config), "--port", port, cwd=tmp_path / "elsewhere")
    assert completed.returncode == 2
    folder = tmp_path / "conf" / "data"
    assert completed.stderr == (
        f"bias-gateway: config error: store.path: cannot create {folder / 'scores.db'}:"
        f" folder {folder} does not exist\n"
    )
    assert [path.name for path in (tmp_path / "conf").iterdir()] == ["g.yaml"]
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.slow
def test_serve_keeps_a_relative_store_beside_its_config(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "elsewhere").mkdir()
    config = write_config(tmp_path / "conf" / "g.yaml", fake_openai, Path("scores.db"))
    monkeypatch.chdir(tmp_path / "elsewhere")  # the gateway's working directory
    process, url = start_gateway(config)
    try:
        answered = httpx.post(f"{url}/v1/chat/completions", json=REQUEST, timeout=10)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    assert answered.status_code == 200
    assert len(statuses(tmp_path / "conf" / "scores.db")) == 1
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.slow
def test_starts_without_an_upstream_key_and_relays_upstream_errors(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    config = Path(__file__).parents[3] / "config" / "gateway.yaml"
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


# `bias-gateway serve` in this interpreter; once it has shut down, the names of the
# BIAS_GATEWAY_* variables its environment then held (the CLI's own, had it set any).
ENV_PROBE = """
import json, os, sys
from gateway.cli import main
code = main(sys.argv[1:])
names = sorted(name for name in os.environ if name.startswith("BIAS_GATEWAY_"))
print("bias-gateway variables:", json.dumps(names), flush=True)
sys.exit(code)
"""


def bias_gateway_variables(environ: Mapping[str, str]) -> list[str]:
    return sorted(name for name in environ if name.startswith("BIAS_GATEWAY_"))


def without_bias_gateway_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in bias_gateway_variables(os.environ):
        monkeypatch.delenv(name)


def workers_of(parent: int) -> list[psutil.Process]:
    """The uvicorn workers `serve` spawned (not multiprocessing's resource tracker)."""
    children = psutil.Process(parent).children()
    return [child for child in children if "spawn_main" in " ".join(child.cmdline())]


@pytest.mark.slow
def test_serve_with_one_worker_takes_its_settings_from_the_config_file(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_bias_gateway_variables(monkeypatch)
    config = write_config(
        tmp_path / "g.yaml",
        fake_openai,
        tmp_path / "s.db",
        server={"max_body_bytes": 200},
        policies={"default": {"mode": "off"}},
    )
    probe = [sys.executable, "-c", ENV_PROBE]
    process, url = start_gateway(config, extra=["--workers", "1"], command=probe)
    try:
        too_big = httpx.post(f"{url}/v1/chat/completions", content=b"x" * 300, timeout=10)
        answered = httpx.post(f"{url}/v1/chat/completions", json=REQUEST, timeout=10)
        assert workers_of(process.pid) == []  # one worker: the CLI's own process serves
    finally:
        process.send_signal(signal.SIGINT)  # uvicorn ends with KeyboardInterrupt: main returns
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert too_big.status_code == 413
    assert "200 byte" in too_big.json()["error"]["message"]
    assert answered.status_code == 200
    assert not [name for name in answered.headers if name.startswith("x-bias-")]  # mode: off
    assert "bias-gateway variables: []" in output.splitlines()


@pytest.mark.slow
def test_serve_with_two_workers_hands_them_settings_not_variables(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_bias_gateway_variables(monkeypatch)
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    config = write_config(
        tmp_path / "g.yaml",
        fake_openai,
        tmp_path / "s.db",
        upstream={"base_url": "http://127.0.0.1:9/v1"},  # nothing listens there
        server={"max_body_bytes": 200},
    )
    process, url = start_gateway(config, extra=["--workers", "2", "--log-level", "warning"])
    try:
        workers = workers_of(process.pid)
        # New connections each time, so the kernel spreads them over both workers.
        ready = [httpx.get(f"{url}/readyz", timeout=10) for _ in range(6)]
        healthy = [httpx.get(f"{url}/healthz", timeout=10) for _ in range(6)]
        too_big = [
            httpx.post(f"{url}/v1/chat/completions", content=b"x" * 300, timeout=10)
            for _ in range(6)
        ]
        unreachable = httpx.post(f"{url}/v1/chat/completions", json=REQUEST, timeout=10)
        # /proc shows a spawned worker the environment the CLI had when it spawned it.
        environments = [worker.environ() for worker in workers]
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert len(workers) == 2
    assert {response.status_code for response in ready} == {200}
    assert {response.status_code for response in healthy} == {200}
    assert {response.status_code for response in too_big} == {413}
    assert unreachable.status_code == 502
    for environment in environments:
        assert bias_gateway_variables(environment) == []
        # The one variable the CLI does set, for prometheus_client, is visible there.
        assert environment.get("PROMETHEUS_MULTIPROC_DIR")
    # --log-level reached the workers: not one info line from any process.
    logged = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert logged
    assert {line["level"] for line in logged} <= {"warning", "error"}


@pytest.mark.slow
def test_serve_sweeps_a_previous_runs_pending_rows_once_before_its_workers(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    store = tmp_path / "scores.db"

    async def crash_with_pending() -> None:
        previous = SQLiteStore(store)
        await previous.open()
        # Recent: retention would prune a final record from 1970 at once.
        now = time.time()
        previous.submit(ScoreRecord(run_id="left-behind", status="pending", created_at=now))
        previous.submit(ScoreRecord(run_id="done", status="scored", created_at=now, score=0.5))
        await previous.close()

    asyncio.run(crash_with_pending())
    fake_openai.judge_delay = 30  # the job below stays pending while a worker starts
    config = write_config(tmp_path / "g.yaml", fake_openai, store)
    process, url = start_gateway(config, extra=["--workers", "2"])
    lines: list[str] = []
    assert process.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True)
    reader.start()

    def rows() -> dict[str, tuple[str, str | None]]:
        with sqlite3.connect(store) as db:
            found = db.execute("SELECT run_id, status, status_reason FROM scores").fetchall()
        return {run_id: (status, reason) for run_id, status, reason in found}

    def started() -> int:
        return sum("Application startup complete." in line for line in lines)

    try:
        assert rows() == {
            "left-behind": ("dropped", "gateway_restarted"),
            "done": ("scored", None),
        }
        wait_for(lambda: started() == 2, lambda: f"two workers: {lines}", timeout=30)
        live = httpx.post(f"{url}/v1/chat/completions", json=REQUEST, timeout=10)
        run_id = live.headers["x-bias-run-id"]
        wait_for(lambda: rows().get(run_id) == ("pending", None), "the live job's row", timeout=30)
        # A third worker starts (uvicorn's supervisor adds one on SIGTTIN) while the job
        # waits on its judge: had it swept the store, the job would now read dropped.
        process.send_signal(signal.SIGTTIN)
        wait_for(lambda: started() == 3, lambda: f"the third worker: {lines}", timeout=30)
        assert rows()[run_id] == ("pending", None)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        reader.join(timeout=10)
    assert process.returncode == 0, lines
    # The live job outlived its worker's shutdown as work to resume, not as a leftover.
    assert rows()[run_id] == ("pending", None)
    assert work_rows(store)[run_id] == ("pending", True, None)
