"""Model aliases routed through litellm (imported lazily), against the fake server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest

from testkit.fake_openai import FakeOpenAI, Fault
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
MESSAGES: list[Any] = [{"role": "user", "content": "hi"}]


def lite_gateway(make_gateway: MakeGateway, fake: FakeOpenAI, **overrides: Any) -> RunningGateway:
    route = {"litellm": "openai/fake-model", "api_base": fake.base_url, "api_key": "sk-lite"}
    return make_gateway(models={"lite": route}, **overrides)


def test_litellm_route_non_streaming(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    fake_openai.verdicts = [("no", "fine")]
    gateway = lite_gateway(make_gateway, fake_openai, **policy(mode="enforce"))

    raw = gateway.client().chat.completions.with_raw_response.create(
        model="lite", messages=MESSAGES
    )

    assert raw.parse().choices[0].message.content == fake_openai.reply
    assert raw.headers["x-bias-verdict"] == "pass"
    upstream_call = fake_openai.requests[0]
    assert upstream_call.body["model"] == "fake-model"
    assert upstream_call.headers["authorization"] == "Bearer sk-lite"


def test_litellm_route_streaming(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    gateway = lite_gateway(make_gateway, fake_openai)
    chunks = list(
        gateway.client().chat.completions.create(model="lite", messages=MESSAGES, stream=True)
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == fake_openai.reply


@pytest.mark.parametrize("status", [400, 500])
def test_litellm_upstream_error_keeps_its_status(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, status: int
) -> None:
    body = '{"error": {"message": "bad thing"}}'
    fake_openai.fail(*[Fault(step="chat", status=status, body=body) for _ in range(3)])
    gateway = lite_gateway(make_gateway, fake_openai)
    with pytest.raises(openai.APIStatusError, match="bad thing") as caught:
        gateway.client().chat.completions.create(model="lite", messages=MESSAGES)
    assert caught.value.status_code == status


def test_litellm_unreachable_is_502(make_gateway: MakeGateway) -> None:
    route = {"litellm": "openai/x", "api_base": "http://127.0.0.1:9/v1", "api_key": "k"}
    gateway = make_gateway(models={"lite": route})
    with pytest.raises(openai.APIStatusError) as caught:
        gateway.client().chat.completions.create(model="lite", messages=MESSAGES)
    assert caught.value.status_code == 502
