"""Shared fixtures. No test may reach the network: only loopback connects are allowed."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
# Should anything fall back to a default provider, it must not find real keys or hosts.
os.environ["OPENAI_API_KEY"] = "sk-test-not-a-real-key"
os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
for name in ("ANTHROPIC_API_KEY", "BIAS_JUDGE_API_KEY", "BIAS_JUDGE_BASE_URL"):
    os.environ.pop(name, None)

from testkit.fake_openai import FakeOpenAI  # noqa: E402  (after the env is set)
from testkit.servers import ServerThread  # noqa: E402
from tests.support.network import allow_the_network, refuse_the_network  # noqa: E402
from tests.support.telemetry import Captured  # noqa: E402

# pg_cluster, make_pg_url, pg_url: a throwaway PostgreSQL cluster and fresh databases.
# --require and the resource markers: tests.support.resources.
pytest_plugins = [
    "tests.support.resources",
    "tests.support.postgres",
    "tests.support.browser",
    "tests.support.promtool",
    "tests.support.fleet",
]

# The property tests: a moderate count in the gate; HYPOTHESIS_PROFILE=long for a soak.
settings.register_profile("gate", max_examples=60, print_blob=True)
settings.register_profile("long", max_examples=3000, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "gate"))


@pytest.fixture(autouse=True, scope="session")
def _no_network() -> Iterator[None]:
    refuse_the_network()
    yield
    allow_the_network()


@pytest.fixture(scope="session")
def _fake_server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    server = ServerThread(fake.app).start()
    fake.base_url = f"{server.url}/v1"
    yield fake
    server.stop()


@pytest.fixture
def fake_openai(_fake_server: FakeOpenAI) -> FakeOpenAI:
    """The fake upstream/judge on 127.0.0.1, reset to its defaults for this test."""
    _fake_server.reset()
    return _fake_server


@pytest.fixture(scope="session", autouse=True)
def otel_capture() -> Captured:
    """The process-wide tracer provider, set before any app can claim it, read by tests."""
    captured = Captured()
    captured.install_global()
    return captured
