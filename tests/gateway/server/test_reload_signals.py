"""SIGHUP reloads a real `bias-gateway serve` (one process, or `--workers 2`) and a
`bias-gateway scorer`: new keys take effect, a stream already open finishes whole, an
invalid config is refused with the error in the log, and no process restarts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import yaml

from gateway.config.keyhash import hash_key
from testkit.fake_openai import JUDGE_MODEL, FakeOpenAI
from testkit.waiting import wait_for
from tests.support.subprocess_gateway import start_gateway, start_scorer

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
A, B, C, OPS = "sk-key-a-0001", "sk-key-b-0002", "sk-key-c-0003", "sk-admin-0004"
KEY_A = {"key": A, "name": "a"}
KEY_B = {"key": hash_key(B), "name": "b"}
KEY_C = {"key": C, "name": "c"}
ADMIN = {"key": OPS, "name": "ops", "admin": True}

pytestmark = pytest.mark.slow


def write_config(path: Path, fake: FakeOpenAI, keys: list[dict[str, Any]], **extra: Any) -> Path:
    config: dict[str, Any] = {
        "upstream": {"base_url": fake.base_url, "api_key": "sk-upstream-secret"},
        "judge": {"model": JUDGE_MODEL, "max_retries": 0, "timeout": 10},
        "store": {"path": str(path.parent / "scores.db")},
        "queue": {"size": 100, "drain_deadline": 1},
        "keys": keys,
        **extra,
    }
    path.write_text(yaml.safe_dump(config))
    return path


class Output:
    """The JSON log lines of a process, read as they come."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._reader = threading.Thread(
            target=lambda: self.lines.extend(process.stdout or ()), daemon=True
        )
        self._reader.start()

    def events(self, event: str) -> list[dict[str, Any]]:
        logged = [json.loads(line) for line in list(self.lines) if line.startswith("{")]
        return [line for line in logged if line.get("event") == event]

    def join(self) -> None:
        self._reader.join(timeout=10)


def status(url: str, key: str) -> int:
    """A request on a new connection, so that with workers the kernel picks any of them."""
    headers = {"authorization": f"Bearer {key}"}
    return httpx.post(f"{url}/v1/chat/completions", json=REQUEST, headers=headers,
                      timeout=10).status_code  # fmt: skip


@pytest.fixture
def stop() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def test_sighup_swaps_the_keys_while_a_stream_opened_before_it_ends_whole(
    fake_openai: FakeOpenAI, tmp_path: Path, stop: list[subprocess.Popen[str]]
) -> None:
    config = write_config(tmp_path / "gateway.yaml", fake_openai, [KEY_A, ADMIN])
    process, url = start_gateway(config)
    stop.append(process)
    output = Output(process)
    fake_openai.reply = "One piece after another, slowly, until the stream is done. " * 2
    fake_openai.chunks, fake_openai.chunk_delay = 24, 0.25  # about 6 s of stream
    headers = {"authorization": f"Bearer {A}"}
    with (
        httpx.Client(base_url=url, timeout=30) as http,
        http.stream(
            "POST", "/v1/chat/completions", json={**REQUEST, "stream": True}, headers=headers
        ) as stream,
    ):
        pieces = stream.iter_raw()
        received = [next(pieces)]
        write_config(config, fake_openai, [KEY_B, ADMIN], server={"port": 1})
        process.send_signal(signal.SIGHUP)
        wait_for(lambda: status(url, B) == 200 and status(url, A) == 401, "the new keys")
        assert fake_openai.stream_endings == []  # still streaming when the reload was seen
        received.extend(pieces)

    body = b"".join(received)
    assert stream.status_code == 200
    assert body == b"".join(fake_openai.sent)  # byte for byte, as monitor relays it
    assert body.endswith(b"data: [DONE]\n\n")
    assert fake_openai.stream_endings == ["completed"]
    assert process.poll() is None  # SIGHUP no longer ends the process
    (reloaded,) = output.events("bias-gateway config reloaded")
    assert reloaded["changed"] == {"keys": "2 -> 2 (added: b; removed: a)"}
    assert reloaded["needs_restart"] == ["server.port"]
    assert reloaded["listen"] == url  # the port it listens on, not the file's new one
    assert reloaded["keys"]["gateway"] == 2  # the startup line's fields, again
    (warned,) = output.events("config change needs a restart; the running value is kept")
    assert warned["setting"] == "server.port"
    assert A not in "".join(output.lines)


def test_sighup_refuses_an_invalid_config_and_keeps_serving(
    fake_openai: FakeOpenAI, tmp_path: Path, stop: list[subprocess.Popen[str]]
) -> None:
    config = write_config(tmp_path / "gateway.yaml", fake_openai, [KEY_A, ADMIN])
    process, url = start_gateway(config)
    stop.append(process)
    output = Output(process)
    write_config(config, fake_openai, [KEY_C, ADMIN], queue={"size": 0})

    process.send_signal(signal.SIGHUP)
    (refused,) = wait_for(
        lambda: output.events("config reload refused; the running config is kept"),
        "the refusal in the log",
    )
    assert str(config) in refused["config"]
    assert "queue.size: Input should be greater than or equal to 1" in refused["error"]
    assert refused["level"] == "error"
    assert (status(url, A), status(url, C)) == (200, 401)
    write_config(config, fake_openai, [KEY_A, KEY_C, ADMIN])
    process.send_signal(signal.SIGHUP)
    wait_for(lambda: status(url, C) == 200, "the valid config, after the invalid one")
    metrics = httpx.get(f"{url}/metrics", headers={"authorization": f"Bearer {OPS}"}).text
    assert 'gateway_config_reloads_total{outcome="refused"} 1.0' in metrics
    assert 'gateway_config_reloads_total{outcome="ok"} 1.0' in metrics
    assert process.poll() is None


def workers_of(parent: int) -> list[int]:
    children = psutil.Process(parent).children()
    return sorted(child.pid for child in children if "spawn_main" in " ".join(child.cmdline()))


def reloaded_with(output: Output, changed: dict[str, str]) -> set[int]:
    """The workers that logged a reload changing exactly `changed`."""
    events = output.events("bias-gateway config reloaded")
    return {line["pid"] for line in events if line["changed"] == changed}


def test_sighup_to_the_supervisor_reloads_every_worker_in_place(
    fake_openai: FakeOpenAI, tmp_path: Path, stop: list[subprocess.Popen[str]]
) -> None:
    config = write_config(tmp_path / "gateway.yaml", fake_openai, [KEY_A, ADMIN])
    process, url = start_gateway(config, extra=["--workers", "2"])
    stop.append(process)
    output = Output(process)
    wait_for(lambda: len(workers_of(process.pid)) == 2, "two workers")
    workers = workers_of(process.pid)

    write_config(config, fake_openai, [KEY_B, ADMIN])
    process.send_signal(signal.SIGHUP)
    # Each worker reloads the new keys once; a worker that was still starting may log a
    # second reload that changes nothing (the SIGHUP it kept), which says nothing here.
    swapped = {"keys": "2 -> 2 (added: b; removed: a)"}
    wait_for(
        lambda: reloaded_with(output, swapped) == set(workers),
        lambda: f"both workers to reload: {output.lines[-5:]}",
    )
    assert [status(url, B) for _ in range(20)] == [200] * 20
    assert [status(url, A) for _ in range(20)] == [401] * 20

    # Through one worker's endpoint: it answers for itself, the supervisor reaches the other.
    write_config(config, fake_openai, [KEY_B, KEY_C, ADMIN])
    answer = httpx.post(f"{url}/admin/reload", headers={"authorization": f"Bearer {OPS}"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["changed"] == {"keys": "2 -> 3 (added: c)"}
    assert "the other 1 reload asynchronously" in answer.json()["workers"]
    wait_for(
        lambda: reloaded_with(output, {"keys": "2 -> 3 (added: c)"}) == set(workers),
        "the endpoint's reload to reach the other worker",
    )
    assert [status(url, C) for _ in range(20)] == [200] * 20
    assert workers_of(process.pid) == workers  # reloaded in place, not restarted
    # A worker still starting when a SIGHUP comes (uvicorn adds one on SIGTTIN) keeps
    # it for when it can reload: it neither dies of it nor misses it.
    process.send_signal(signal.SIGTTIN)
    wait_for(lambda: len(workers_of(process.pid)) == 3, "a third worker")
    (third,) = set(workers_of(process.pid)) - set(workers)
    before = len(output.events("bias-gateway config reloaded"))
    write_config(config, fake_openai, [KEY_C, ADMIN])
    os.kill(third, signal.SIGHUP)  # as the supervisor passes it on, while it imports
    process.send_signal(signal.SIGHUP)

    def reloaded_pids() -> set[int]:
        return {line["pid"] for line in output.events("bias-gateway config reloaded")[before:]}

    everyone = {*workers, third}
    wait_for(lambda: reloaded_pids() >= everyone, "every worker's reload", timeout=30)
    assert workers_of(process.pid) == sorted([*workers, third])
    assert [status(url, B) for _ in range(30)] == [401] * 30
    assert [status(url, C) for _ in range(30)] == [200] * 30


def test_sighup_gives_a_scorer_its_new_judge_settings(
    fake_openai: FakeOpenAI, tmp_path: Path, stop: list[subprocess.Popen[str]]
) -> None:
    config = write_config(tmp_path / "gateway.yaml", fake_openai, [])
    process, health = start_scorer(config)
    stop.append(process)
    output = Output(process)
    data = yaml.safe_load(config.read_text())
    data["judge"]["model"] = "judge-2"
    data["judge"]["limits"] = {"max_concurrency": 3}
    config.write_text(yaml.safe_dump(data))

    process.send_signal(signal.SIGHUP)
    (reloaded,) = wait_for(lambda: output.events("bias scorer config reloaded"), "the reload")
    assert reloaded["judge_model"] == "judge-2"
    assert reloaded["changed"] == {"judge": "model"}
    assert reloaded["needs_restart"] == ["judge.limits.max_concurrency"]
    assert httpx.get(f"{health}/readyz", timeout=10).status_code == 200
    assert 'gateway_config_reloads_total{outcome="ok"} 1.0' in httpx.get(f"{health}/metrics").text
