"""The one gateway launcher: a scenario's settings are the gateway's own, checked before
a process starts, and the process it starts serves them."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from bench.fakes.paced import Pace, PacedFake
from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.procs import Processes
from gateway.config import ConfigError, load_settings
from testkit.servers import ServerThread


def test_the_base_settings_load_as_the_gateway_reads_them(tmp_path: Path) -> None:
    config = gateway_config("http://up", "http://judge", store=tmp_path / "s.db", mode="enforce")
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(config))
    settings = load_settings(path)
    assert settings.policies["default"].mode == "enforce"
    assert str(settings.upstream.base_url).startswith("http://up/v1")


def test_a_wrong_key_fails_before_any_process_starts(tmp_path: Path) -> None:
    config = gateway_config("http://up", "http://judge")
    config["policies"]["default"]["mood"] = "calm"
    with Processes() as procs, pytest.raises(ConfigError, match="mood"):
        start_gateway(procs, "gateway", config, log_dir=tmp_path)
    assert not (tmp_path / "gateway.log").exists()


@pytest.mark.slow
def test_the_gateway_it_starts_answers_through_the_fake(tmp_path: Path) -> None:
    fake = PacedFake(Pace(chunks=2, ttft=0.0, chunk_interval=0.0, judge_latency=0.0, jitter=0.0))
    server = ServerThread(fake.app).start()
    try:
        config = gateway_config(server.url, server.url, store=tmp_path / "scores.db")
        with Processes() as procs:
            gateway = start_gateway(procs, "gateway", config, log_dir=tmp_path)
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            answer = httpx.post(f"{gateway.url}/v1/chat/completions", json=body, timeout=30)
    finally:
        server.stop()
    assert answer.status_code == 200
    assert answer.headers["x-bias-run-id"]
