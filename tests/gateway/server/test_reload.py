"""Reloading the config of a running gateway: the swap itself, in process, over real
uvicorn and the fake upstream and judge; `POST /admin/reload` and who may call it."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from structlog.testing import capture_logs

from gateway.config import load_settings
from gateway.config.keyhash import hash_key
from gateway.observability.metrics import Metrics
from gateway.runtime.resources import Gateway
from gateway.server.app import create_app
from gateway.server.reload import HangupLatch, Reloader, ServedFrom
from testkit.fake_openai import JUDGE_MODEL, FakeOpenAI
from testkit.servers import ServerThread
from testkit.waiting import eventually, wait_for

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
A, B, OPS = "sk-key-a-0001", "sk-key-b-0002", "sk-admin-0003"
KEY_A = {"key": A, "name": "a"}
KEY_B = {"key": hash_key(B), "name": "b"}  # a hashed key reloads alike
ADMIN = {"key": OPS, "name": "ops", "admin": True}


def config_data(fake: FakeOpenAI, tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "upstream": {"base_url": fake.base_url, "api_key": "sk-upstream-secret", "timeout": 10},
        "judge": {"model": JUDGE_MODEL, "timeout": 5, "max_retries": 0},
        "store": {"path": str(tmp_path / "scores.db")},
        "queue": {"size": 100, "drain_deadline": 5},
        "keys": [KEY_A, ADMIN],
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return data


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


class Served:
    """A gateway served in process from a config file, as `serve` would read it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.app = create_app(load_settings(path), served=ServedFrom(str(path), "127.0.0.1", 0))
        self.server = ServerThread(self.app, lifespan="on").start()
        self.http = httpx.Client(base_url=self.server.url, timeout=30)

    @property
    def state(self) -> Gateway:
        state: Gateway = self.app.state.gateway
        return state

    def post(self, key: str | None, path: str = "/v1/chat/completions",
             **options: Any) -> httpx.Response:  # fmt: skip
        headers = {"authorization": f"Bearer {key}"} if key else {}
        return self.http.post(path, headers=headers, **options)

    def reload(self) -> httpx.Response:
        return self.post(OPS, "/admin/reload")

    def metrics(self) -> str:
        return self.http.get("/metrics", headers={"authorization": f"Bearer {OPS}"}).text

    def stop(self) -> None:
        self.http.close()
        self.server.stop()


@pytest.fixture
def serve(fake_openai: FakeOpenAI, tmp_path: Path) -> Iterator[Any]:
    running: list[Served] = []

    def start(**overrides: Any) -> Served:
        path = write(tmp_path / "gateway.yaml", config_data(fake_openai, tmp_path, **overrides))
        served = Served(path)
        running.append(served)
        return served

    yield start
    for served in running:
        served.stop()


def test_a_reload_swaps_keys_policies_and_routes_for_new_requests(
    serve: Any, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    gateway = serve()
    before = gateway.state
    assert gateway.post(A, json=REQUEST).status_code == 200
    assert gateway.post(B, json=REQUEST).status_code == 401

    changed = config_data(
        fake_openai,
        tmp_path,
        keys=[KEY_B, ADMIN],
        policies={"default": {"mode": "enforce", "flag_threshold": 0.2, "block_threshold": 0.4}},
        models={"alias": {"model": "m"}},
    )
    write(gateway.path, changed)
    answer = gateway.reload()

    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["outcome"] == "ok"
    assert body["error"] is None
    assert body["needs_restart"] == []
    assert body["changed"] == {
        "models": "0 -> 1 (added: alias)",
        "policies": "1 -> 1 (changed: default)",
        "keys": "2 -> 2 (added: b; removed: a)",
    }
    assert "sk-" not in answer.text  # no key, not even the admin's, in the answer
    assert gateway.state is not before
    assert before.settings.policies["default"].mode == "monitor"  # the old one is untouched
    assert gateway.post(A, json=REQUEST).status_code == 401
    blocked = gateway.post(B, json={**REQUEST, "model": "alias"})
    assert blocked.status_code == 422  # the fake judge's 1.0 is past the new 0.4
    assert blocked.json()["error"]["bias"]["threshold"] == 0.4
    # The same clients, store and scoring, reconfigured, under the new gateway.
    assert (gateway.state.upstream, gateway.state.store) == (before.upstream, before.store)
    assert gateway.state.scoring is before.scoring
    assert gateway.state.ready


def test_a_key_whose_limits_stay_keeps_its_quota_across_a_reload(serve: Any) -> None:
    gateway = serve(limits={"requests_per_minute": 2})
    assert [gateway.post(A, json=REQUEST).status_code for _ in range(2)] == [200, 200]
    write(gateway.path, {**yaml.safe_load(gateway.path.read_text()), "route_unknown_models": True})
    assert gateway.reload().json()["changed"] == {}  # true was already the default
    write(gateway.path, {**yaml.safe_load(gateway.path.read_text()), "models": {"x": {}}})
    assert gateway.reload().json()["changed"] == {"models": "0 -> 1 (added: x)"}
    # Its minute's budget is spent, reload or not.
    assert gateway.post(A, json=REQUEST).status_code == 429


def test_settings_that_need_a_restart_keep_their_running_values_and_are_named(
    serve: Any, tmp_path: Path
) -> None:
    gateway = serve()
    data = yaml.safe_load(gateway.path.read_text())
    data["store"]["path"] = str(tmp_path / "elsewhere.db")
    data["queue"]["size"] = 7
    data["judge"]["max_concurrency"] = 3  # its old key: named by its new one
    data["judge"]["timeout"] = 9
    data["server"] = {"port": 9999}
    write(gateway.path, data)

    with capture_logs() as logs:
        answer = gateway.reload()

    body = answer.json()
    assert body["outcome"] == "ok"
    assert body["needs_restart"] == [
        "server.port",
        "store.path",
        "queue.size",
        "judge.limits.max_concurrency",
    ]
    assert body["changed"] == {"judge": "timeout"}
    warned = [line["setting"] for line in logs if "needs a restart" in line["event"]]
    assert warned == body["needs_restart"]
    assert all(
        line["log_level"] == "warning" for line in logs if "needs a restart" in line["event"]
    )
    settings = gateway.state.settings
    assert settings.store.path == str(tmp_path / "scores.db")
    assert settings.queue.size == 100
    assert settings.judge.limits.max_concurrency == 512
    assert settings.judge.timeout == 9  # live
    assert gateway.state.scoring.queue.concurrency == 512
    reloaded = [line for line in logs if line["event"] == "bias-gateway config reloaded"]
    assert len(reloaded) == 1
    assert reloaded[0]["changed"] == {"judge": "timeout"}
    assert reloaded[0]["judge_model"] == JUDGE_MODEL  # the startup line's fields
    assert not (tmp_path / "elsewhere.db").exists()


def test_a_new_judge_takes_new_work_while_a_scoring_under_way_ends_on_the_old(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    gateway = serve(policies={"default": {"mode": "enforce"}}, judge={"reason": "inline"})
    old_judge = gateway.state.scoring.scorer.judge
    fake_openai.judge_delay = 0.5
    answers: list[httpx.Response] = []
    first = threading.Thread(target=lambda: answers.append(gateway.post(A, json=REQUEST)))
    first.start()
    wait_for(lambda: fake_openai.judge_in_flight >= 1, "the first scoring to reach the judge")
    data = yaml.safe_load(gateway.path.read_text())
    data["judge"] = {**data["judge"], "model": "judge-2", "scale": 10}
    write(gateway.path, data)
    reloaded = gateway.reload()
    first.join(timeout=30)

    assert reloaded.json()["changed"] == {"judge": "model, scale"}
    judged_before = [r.body["model"] for r in fake_openai.requests if r.step != "chat"]
    # Every step of the scoring under way, the ones after the reload too, asked the old
    # judge, and its score is on the old scale (the fake's verdict blocks at either).
    assert judged_before == [JUDGE_MODEL] * 3
    assert answers[0].json()["error"]["bias"]["score"] == 1.0
    fake_openai.judge_delay = 0
    second = gateway.post(A, json=REQUEST)
    assert second.json()["error"]["bias"]["score"] == 10.0  # not the old judge's cached verdict
    judged_after = [r.body["model"] for r in fake_openai.requests if r.step != "chat"][3:]
    assert judged_after == ["judge-2"] * 3
    new_judge = gateway.state.scoring.scorer.judge
    assert new_judge is not old_judge
    assert new_judge.limiter is old_judge.limiter


def test_an_invalid_config_is_refused_and_the_running_one_kept(
    serve: Any, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    gateway = serve()
    before = gateway.state
    data = yaml.safe_load(gateway.path.read_text())
    data["policies"] = {"default": {"flag_threshold": 0.9, "block_threshold": 0.1}}
    data["keys"] = [KEY_B, ADMIN]
    write(gateway.path, data)

    with capture_logs() as logs:
        refused = gateway.reload()

    assert refused.status_code == 422
    body = refused.json()
    assert body["outcome"] == "refused"
    assert "flag_threshold (0.9) must not exceed block_threshold (0.1)" in body["error"]
    assert body["changed"] == {}
    errors = [line for line in logs if line["log_level"] == "error"]
    assert [line["event"] for line in errors] == [
        "config reload refused; the running config is kept"
    ]
    assert "block_threshold" in errors[0]["error"]
    assert gateway.state is before
    assert gateway.post(A, json=REQUEST).status_code == 200
    assert gateway.post(B, json=REQUEST).status_code == 401

    gateway.path.write_text("keys: [unclosed\n")
    assert "yaml" in gateway.reload().json()["error"].lower()
    gateway.path.unlink()
    assert "no such file" in gateway.reload().json()["error"]
    assert 'gateway_config_reloads_total{outcome="refused"} 3.0' in gateway.metrics()
    assert "gateway_config_last_reload_successful 0.0" in gateway.metrics()
    write(gateway.path, config_data(fake_openai, tmp_path))
    assert gateway.reload().json()["outcome"] == "ok"
    assert "gateway_config_last_reload_successful 1.0" in gateway.metrics()


def test_a_reload_never_opens_a_gateway_that_had_keys(serve: Any) -> None:
    gateway = serve()
    data = yaml.safe_load(gateway.path.read_text())
    del data["keys"]
    write(gateway.path, data)
    body = gateway.reload().json()
    assert body["outcome"] == "refused"
    assert "no client keys" in body["error"]
    assert gateway.post(None, json=REQUEST).status_code == 401


def test_admin_reload_needs_an_admin_key(serve: Any) -> None:
    gateway = serve()
    missing = gateway.post(None, "/admin/reload")
    wrong = gateway.post("sk-not-a-key", "/admin/reload")
    client = gateway.post(A, "/admin/reload")
    admin = gateway.reload()

    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert missing.json()["error"]["type"] == "invalid_request_error"
    assert client.status_code == 403
    assert client.json()["error"]["code"] == "permission_denied"
    assert "admin key" in client.json()["error"]["message"]
    assert admin.status_code == 200
    assert admin.json()["outcome"] == "ok"
    assert "workers" not in admin.json()  # one process: nothing else to reach
    assert 'gateway_config_reloads_total{outcome="ok"} 1.0' in gateway.metrics()


def test_an_open_gateway_refuses_admin_reload_over_http(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    path = write(tmp_path / "g.yaml", config_data(fake_openai, tmp_path, keys=[]))
    gateway = Served(path)
    try:
        refused = gateway.post(None, "/admin/reload")
    finally:
        gateway.stop()
    assert refused.status_code == 403
    assert "SIGHUP" in refused.json()["error"]["message"]


def test_an_app_given_settings_in_code_has_nothing_to_reload(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    settings = load_settings(write(tmp_path / "g.yaml", config_data(fake_openai, tmp_path)))
    server = ServerThread(create_app(settings), lifespan="on").start()
    try:
        headers = {"authorization": f"Bearer {OPS}"}
        answer = httpx.post(f"{server.url}/admin/reload", headers=headers, timeout=10)
        metrics = httpx.get(f"{server.url}/metrics", headers=headers, timeout=10).text
    finally:
        server.stop()
    assert answer.status_code == 422
    assert "nothing to read again" in answer.json()["error"]
    # Nothing to read is no broken config: the reload alert stays quiet.
    assert "gateway_config_last_reload_successful 1.0" in metrics


async def test_a_sighup_while_starting_is_kept_and_later_ones_reload_in_the_loop(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    path = write(tmp_path / "g.yaml", config_data(fake_openai, tmp_path))
    running = [load_settings(path)]
    previous = signal.getsignal(signal.SIGHUP)
    latch = HangupLatch.install()
    try:
        os.kill(os.getpid(), signal.SIGHUP)  # before anything listens: caught, not fatal
        await eventually(lambda: latch.caught, "the latch to catch it")
        write(path, config_data(fake_openai, tmp_path, keys=[KEY_B, ADMIN]))
        reloader = Reloader(
            ServedFrom(str(path), "127.0.0.1", 0),
            running=lambda: running[-1],
            apply=running.append,
            announce=lambda settings, result: None,
            metrics=Metrics(),
        )
        loop = asyncio.get_running_loop()
        reloader.listen(loop, latch)
        assert [key.name for key in running[-1].keys] == ["b", "ops"]  # at once, for the latch

        write(path, config_data(fake_openai, tmp_path, keys=[KEY_A, KEY_B, ADMIN]))
        os.kill(os.getpid(), signal.SIGHUP)
        await eventually(lambda: len(running) == 3, "the reload on SIGHUP")
        assert [key.name for key in running[-1].keys] == ["a", "b", "ops"]
    finally:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
        signal.signal(signal.SIGHUP, previous)
