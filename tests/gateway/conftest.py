from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.observability.traces import Telemetry
from gateway.server.app import create_app
from testkit.fake_openai import FakeOpenAI
from testkit.servers import ServerThread
from tests.support.gateways import RunningGateway, settings_for


@pytest.fixture
def make_gateway(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> Iterator[Callable[..., RunningGateway]]:
    """Start the gateway under real uvicorn on 127.0.0.1; keyword arguments override settings."""
    running: list[RunningGateway] = []

    def make(otel: Telemetry | None = None, **overrides: Any) -> RunningGateway:
        settings = settings_for(fake_openai, tmp_path, **overrides)
        app = create_app(settings, telemetry=otel)
        server = ServerThread(app, lifespan="on").start()
        gateway = RunningGateway(server, app, settings)
        running.append(gateway)
        return gateway

    yield make
    for gateway in running:
        gateway.server.stop()


@pytest.fixture
def judged(fake_openai: FakeOpenAI) -> FakeOpenAI:
    """The fake judge finds BIASED biased (geographical) and NEUTRAL not."""
    fake_openai.opinions = ["an opinion"]
    fake_openai.verdicts = [("no", "A fair remark.")]
    fake_openai.verdicts_for = {"north": [("yes", "A regional stereotype.", ["geographical"])]}
    return fake_openai
