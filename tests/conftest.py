"""Shared fixtures. No test may reach the network: only loopback connects are allowed."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    # The C base class that declares connect/connect_ex: the patched functions must
    # accept it as `self`, or they are not substitutes for the methods they replace.
    from _socket import socket as RawSocket

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
# Should anything fall back to a default provider, it must not find real keys or hosts.
os.environ["OPENAI_API_KEY"] = "sk-test-not-a-real-key"
os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
for name in ("ANTHROPIC_API_KEY", "BIAS_JUDGE_API_KEY", "BIAS_JUDGE_BASE_URL"):
    os.environ.pop(name, None)

from tests.support.fake_openai import FakeOpenAI  # noqa: E402  (after the env is set)
from tests.support.network import NetworkRefused  # noqa: E402
from tests.support.servers import ServerThread  # noqa: E402
from tests.support.telemetry import Captured  # noqa: E402

# pg_cluster, make_pg_url, pg_url: a throwaway PostgreSQL cluster and fresh databases.
# --require and the resource markers: tests.support.resources.
pytest_plugins = [
    "tests.support.resources",
    "tests.support.postgres",
    "tests.support.browser",
    "tests.support.fleet",
]

# The property tests: a moderate count in the gate; HYPOTHESIS_PROFILE=long for a soak.
settings.register_profile("gate", max_examples=60, print_blob=True)
settings.register_profile("long", max_examples=3000, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "gate"))

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _check(address: Any) -> None:
    if not isinstance(address, tuple):
        return  # AF_UNIX and friends
    host = address[0]
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        if host == "localhost":
            return
    raise NetworkRefused(f"tests may not reach the network: connect to {address!r} refused")


def _guarded_connect(self: RawSocket, address: Any) -> None:
    _check(address)
    _real_connect(self, address)


def _guarded_connect_ex(self: RawSocket, address: Any) -> int:
    _check(address)
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True, scope="session")
def _no_network() -> Iterator[None]:
    # Patching methods on the class is the point here, and mypy forbids it outright.
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    yield
    socket.socket.connect = _real_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]


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
