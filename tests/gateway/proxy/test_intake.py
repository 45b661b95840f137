"""One intake for every endpoint that works for a client key: which steps each kind takes,
and what the intake found (key, policy, mode, the key's place, sampling)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request

from gateway.config import Settings
from gateway.errors import AuthenticationFailed, BadRequest, RateLimited, UnscoredPathRefused
from gateway.proxy.direct import DirectCall
from gateway.proxy.intake import Intake, gateway_of
from gateway.proxy.passthrough import passthrough
from gateway.proxy.pipeline import ScoredEndpoint
from gateway.proxy.surfaces import ChatCompletions
from gateway.runtime.resources import Gateway
from gateway.server.app import create_app
from guard.testing import FunctionJudge

KEYS = [
    # One place at a time, so a second `admit` shows whether the first took it.
    {"key": "sk-strict", "name": "strict-key", "policy": "strict", "concurrent_requests": 1},
    {"key": "sk-plain", "name": "plain-key", "concurrent_requests": 1},
]
POLICIES = {
    "default": {"mode": "monitor", "allow_client_override": True},
    "strict": {"mode": "enforce", "allow_client_override": False, "sample_rate": 0.5},
}

MakeRequest = Callable[..., Request]


def _never_called(messages: object, schema: object) -> str:
    raise AssertionError("the intake never calls the judge")


def settings(tmp_path: Path, **extra: Any) -> Settings:
    return Settings.model_validate(
        {
            "upstream": {"base_url": "http://127.0.0.1:9/v1"},
            "store": {"path": str(tmp_path / "scores.db")},
            "policies": POLICIES,
            **extra,
        }
    )


@pytest.fixture
async def make_request(tmp_path: Path) -> AsyncIterator[MakeRequest]:
    """Requests to a started gateway with `KEYS`: `make_request(key, body, path=, mode=)`."""
    app = create_app(settings(tmp_path, keys=KEYS), judge=FunctionJudge(_never_called))
    async with app.router.lifespan_context(app):

        def make(
            key: str | None,
            body: bytes = b"{}",
            *,
            path: str = "/v1/chat/completions",
            mode: str | None = None,
        ) -> Request:
            headers = [(b"content-length", str(len(body)).encode())]
            if key is not None:
                headers.append((b"authorization", f"Bearer {key}".encode()))
            if mode is not None:
                headers.append((b"x-bias-mode", mode.encode()))
            scope: dict[str, Any] = {
                "type": "http",
                "method": "POST",
                "path": path,
                "raw_path": path.encode(),
                "headers": headers,
                "query_string": b"",
                "app": app,
            }
            sent = [{"type": "http.request", "body": body, "more_body": False}]

            async def receive() -> dict[str, Any]:
                return sent.pop(0) if sent else {"type": "http.disconnect"}

            return Request(scope, receive)

        yield make


def test_policy_for_is_the_keys_policy_else_the_default(tmp_path: Path) -> None:
    config = settings(tmp_path, keys=KEYS, default_policy="strict")
    strict, plain = config.keys
    assert config.policy_for(strict) == ("strict", config.policies["strict"])
    assert config.policy_for(plain) == ("default", config.policies["default"])
    assert config.policy_for(None) == ("strict", config.policies["strict"])  # open mode


def test_key_weight_is_the_keys_else_one(tmp_path: Path) -> None:
    keys = [{**KEYS[0], "weight": 3.0}, KEYS[1]]
    config = settings(tmp_path, keys=keys, api_keys=["sk-listed"])
    assert config.key_weight("strict-key") == 3.0
    assert [config.key_weight(name) for name in ("plain-key", "key-1", "nobody", None)] == [1.0] * 4


async def test_open_checks_the_key_and_finds_its_policy(make_request: MakeRequest) -> None:
    request = make_request("sk-strict")
    intake = Intake.open(gateway_of(request), request, api="chat.completions")
    assert (intake.key_name, intake.state.key_name) == ("strict-key", "strict-key")
    assert (intake.policy_name, intake.policy) == (
        "strict",
        intake.gateway.settings.policies["strict"],
    )
    assert intake.state.api == "chat.completions"
    # Nothing past the key yet: no mode, no place, not sampled.
    assert (intake.mode, intake.quota, intake.sampled) == (None, None, False)
    with pytest.raises(AuthenticationFailed):
        Intake.open(gateway_of(request), make_request(None))


async def test_each_step_keeps_what_it_found(make_request: MakeRequest) -> None:
    request = make_request("sk-plain", b'{"a": 1}', mode="off")
    intake = Intake.open(gateway_of(request), request)
    assert await intake.body() == b'{"a": 1}'
    assert intake.resolve_mode() == intake.mode == "off"  # the policy lets the client choose
    assert intake.admit() is intake.quota is not None
    assert intake.sample() is False  # mode off is never sampled
    other = make_request("sk-plain")
    with pytest.raises(RateLimited):  # the key's one place is held
        Intake.open(gateway_of(other), other).admit()
    intake.release()
    assert Intake.open(gateway_of(other), other).admit() is not None


async def test_a_mode_the_policy_does_not_allow_the_client_is_the_policys(
    make_request: MakeRequest,
) -> None:
    request = make_request("sk-strict", mode="off")
    assert Intake.open(gateway_of(request), request).resolve_mode() == "enforce"
    request = make_request("sk-plain", mode="sometimes")
    with pytest.raises(BadRequest, match="x-bias-mode"):
        Intake.open(gateway_of(request), request).resolve_mode()


async def test_the_scored_path_takes_every_step(make_request: MakeRequest) -> None:
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
    endpoint = ScoredEndpoint(ChatCompletions())
    gateway: Gateway = gateway_of(make_request(None))
    runs = []
    for _ in range(4):
        request = make_request("sk-strict", body)
        call = await endpoint._begin(gateway, request)
        assert (call.mode, call.job.policy_name, call.job.key_name) == (
            "enforce",
            "strict",
            "strict-key",
        )
        assert call.quota is not None  # taken; the endpoint gives it back once sent
        call.quota.release()
        runs.append(call.sampled)
    assert runs.count(True) == 2  # the policy's sample rate, a half


async def test_a_direct_call_reads_its_body_and_takes_a_place_but_no_mode(
    make_request: MakeRequest,
) -> None:
    call = await DirectCall.begin(make_request("sk-plain", b'{"input": "x"}'), "moderations")
    assert call.body == {"input": "x"}
    assert call.own_policy == "default"
    assert call.intake.quota is not None
    # A direct call is always judged, in the mode it asks for: the intake resolves none.
    assert (call.intake.mode, call.intake.sampled) == (None, False)
    call.release()
    assert call.intake.quota.in_flight == 0


async def test_the_pass_through_refuses_before_it_takes_a_place(
    make_request: MakeRequest,
) -> None:
    # An enforcing key's call to a path that may carry model text: refused (403) before
    # `admit`, so the key's one place is still free afterwards.
    refused = make_request("sk-strict", path="/v1/assistants/run")
    with pytest.raises(UnscoredPathRefused):
        await passthrough(refused)
    request = make_request("sk-strict")
    assert Intake.open(gateway_of(request), request).admit() is not None
