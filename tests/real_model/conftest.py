"""The real-model tier: the gateway in front of llama.cpp's server with SmolLM2-135M.

Its tests are marked `real_model`, which the gate leaves out (pyproject's `-m "not
real_model"`); `scripts/test --real-model` runs them (`-m real_model`). The server is
prepared (`scripts/real-model prepare`: cached after the first run) and started once per
session; the same server is the upstream and, through a relay that keeps what it
answered, the judge.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from gateway.config import Settings
from gateway.server.app import create_app
from testkit.servers import ServerThread, free_port
from testkit.waiting import answering, wait_for
from tests.support.gateways import RunningGateway
from tests.support.real_model import MODEL, SLOW, JudgeRelay, RealServer
from tests.support.telemetry import Captured

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "real-model"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.timeout(SLOW))


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    """scripts/real-model's server on a free loopback port, for the whole session."""
    prepared = subprocess.run([str(SCRIPT), "prepare"], capture_output=True, text=True)
    if prepared.returncode != 0:
        pytest.fail(f"scripts/real-model prepare failed:\n{prepared.stderr}", pytrace=False)
    port = free_port()
    log = tmp_path_factory.mktemp("real-model") / "server.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(SCRIPT), "serve", "--foreground", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    url = f"http://127.0.0.1:{port}/v1"

    ready = answering(process, f"{url}/models", "the server", log.read_text)
    try:
        wait_for(ready, "the real model's server to answer", timeout=300, interval=0.2)
        server = os.environ.get("BIAS_REAL_MODEL_SERVER", "xllamacpp")
        yield RealServer(url, server)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def _relay(real_server: RealServer) -> Iterator[JudgeRelay]:
    relay = JudgeRelay(real_server.url)
    app = Starlette(routes=[Route("/v1/chat/completions", relay.relay, methods=["POST"])])
    thread = ServerThread(app).start()
    relay.url = f"{thread.url}/v1"
    yield relay
    thread.stop()


@pytest.fixture
def judge_relay(_relay: JudgeRelay) -> JudgeRelay:
    _relay.calls.clear()
    return _relay


@pytest.fixture
def captured(otel_capture: Captured) -> Captured:
    otel_capture.spans.clear()
    otel_capture.logs.clear()
    return otel_capture


@pytest.fixture
def real_gateway(
    real_server: RealServer, judge_relay: JudgeRelay, captured: Captured, tmp_path: Path
) -> Iterator[Callable[..., RunningGateway]]:
    """Start the gateway under real uvicorn in front of the real model; `mode` and other
    policy fields go to the default policy."""
    running: list[ServerThread] = []

    def make(**policy: Any) -> RunningGateway:
        settings = Settings.model_validate(
            {
                "upstream": {"base_url": real_server.url, "api_key": "sk-none", "timeout": SLOW},
                "judge": {
                    "model": MODEL,
                    "base_url": judge_relay.url,
                    "api_key": "sk-none",
                    "timeout": SLOW,
                    "max_retries": 0,
                    # SmolLM2 held to a schema can otherwise repeat itself to the context's end.
                    "max_tokens": 512,
                    "enforce_deadline": SLOW,
                    "cache_size": 0,  # every response judged, even a repeated one
                    # The explanation before the record is final, so that the record's
                    # judge calls and tokens are all of them when a test reads it.
                    "reason": "inline",
                },
                "store": {"path": str(tmp_path / "scores.db")},
                "policies": {"default": policy},
            }
        )
        app = create_app(settings, telemetry=captured.telemetry)
        server = ServerThread(app, lifespan="on").start()
        running.append(server)
        return RealGatewayClient(server, app, settings)

    yield make
    for server in running:
        server.stop()


class RealGatewayClient(RunningGateway):
    """A gateway whose clients and score lookups wait as long as a small model needs."""

    def client(self, api_key: str = "sk-client", **options: Any) -> openai.OpenAI:
        return super().client(api_key, timeout=SLOW, **options)

    def wait_for_score(self, run_id: str, **options: Any) -> dict[str, Any]:
        """The run's record once final, polled twice a second (each poll is logged)."""
        path = f"/v1/bias/scores/{run_id}"
        with self.http() as http:

            def final() -> dict[str, Any] | None:
                response = http.get(path)
                body = response.json() if response.status_code == 200 else {}
                return dict(body) if body.get("status", "pending") != "pending" else None

            return wait_for(final, f"score {run_id} to be final", timeout=SLOW, interval=0.5)
