"""Per-key request limits: the arithmetic on its own clock, and 429s through the gateway."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import openai
import pytest
from pydantic import SecretStr

from gateway.config import KeySettings, LimitSettings
from gateway.errors import RateLimited
from gateway.runtime.quotas import KeyQuota, Quotas
from testkit.fake_openai import FakeOpenAI
from testkit.waiting import eventually
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
CHAT = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}


def test_a_minute_budget_refills_continuously() -> None:
    quota = KeyQuota(2, None, now=0.0)
    assert quota.admit(0.0) is None
    assert quota.admit(0.0) is None
    refused = quota.admit(0.0)
    assert refused is not None
    assert refused[0] == "requests_per_minute"
    assert refused[1] == pytest.approx(30.0)
    assert quota.admit(29.0) is not None
    assert quota.admit(30.0) is None  # two a minute: one more every 30 s


def test_requests_at_once_are_counted_until_released() -> None:
    quota = KeyQuota(None, 1, now=0.0)
    assert quota.admit(0.0) is None
    assert quota.admit(0.0) == ("concurrent_requests", 1.0)
    quota.release()
    assert quota.admit(0.0) is None


def test_a_key_s_own_limits_win_over_the_defaults() -> None:
    now = [0.0]
    own = KeySettings(key=SecretStr("sk-own-1"), name="own", requests_per_minute=1)
    plain = KeySettings(key=SecretStr("sk-plain-1"), name="plain")
    quotas = Quotas([own, plain], LimitSettings(requests_per_minute=3), clock=lambda: now[0])
    limited: list[tuple[str, str]] = []
    quotas.on_limited = lambda key, limit: limited.append((key, limit))
    assert quotas.admit(own) is not None
    with pytest.raises(RateLimited) as refused:
        quotas.admit(own)
    assert refused.value.headers() == {"retry-after": "60"}
    for _ in range(3):
        assert quotas.admit(plain) is not None
    with pytest.raises(RateLimited):
        quotas.admit(plain)
    assert limited == [("own", "requests_per_minute"), ("plain", "requests_per_minute")]
    assert quotas.admit(None) is None  # open mode has no key, hence no limit


def test_a_reload_keeps_the_quota_of_a_key_whose_limits_stay() -> None:
    kept = KeySettings(key=SecretStr("sk-kept-1"), name="kept", concurrent_requests=1)
    changed = KeySettings(key=SecretStr("sk-chg-1"), name="changed", concurrent_requests=1)
    before = Quotas([kept, changed], LimitSettings(), clock=lambda: 0.0)
    assert before.admit(kept) is not None
    assert before.admit(changed) is not None
    wider = changed.model_copy(update={"concurrent_requests": 2})
    after = Quotas([kept, wider], LimitSettings(), clock=lambda: 0.0, previous=before)
    with pytest.raises(RateLimited):
        after.admit(kept)  # its request in flight still counts
    assert after.admit(wider) is not None  # new limits: a new count
    assert after.admit(wider) is not None
    with pytest.raises(RateLimited):
        after.admit(wider)


def test_a_key_past_its_minute_budget_gets_429_before_any_upstream_call(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    keys = [{"name": "bot", "key": "sk-bot-5e1d"}, {"name": "other", "key": "sk-other-9a2c"}]
    gateway = make_gateway(keys=keys, limits={"requests_per_minute": 2}, **policy(mode="off"))
    client = gateway.client(api_key="sk-bot-5e1d")
    for _ in range(2):
        client.chat.completions.create(**CHAT)  # type: ignore[call-overload]
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(**CHAT)  # type: ignore[call-overload]
    assert refused.value.response.headers["retry-after"] == "30"
    error = refused.value.response.json()["error"]
    assert (error["type"], error["code"]) == ("requests", "rate_limit_exceeded")
    assert len(fake_openai.requests) == 2  # the refused request went nowhere
    # Another key keeps its own budget.
    gateway.client(api_key="sk-other-9a2c").chat.completions.create(**CHAT)  # type: ignore[call-overload]
    with httpx.Client(base_url=gateway.url) as http:
        metrics = http.get("/metrics", headers={"authorization": "Bearer sk-other-9a2c"}).text
    assert 'gateway_key_limited_total{key="bot",limit="requests_per_minute"} 1.0' in metrics


async def test_requests_at_once_are_held_until_the_answer_is_sent(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.delay = 0.5  # the first answer is still on its way when the second asks
    keys = [{"name": "bot", "key": "sk-bot-5e1d", "concurrent_requests": 1}]
    gateway = make_gateway(keys=keys, **policy(mode="off"))
    headers = {"authorization": "Bearer sk-bot-5e1d"}
    async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=10) as http:
        first = asyncio.create_task(http.post("/v1/chat/completions", json=CHAT))
        await eventually(lambda: fake_openai.requests, "the first request upstream")
        second = await http.post("/v1/chat/completions", json=CHAT)
        assert second.status_code == 429
        assert second.json()["error"]["message"].endswith("too many requests at once.")
        assert (await first).status_code == 200
        third = await http.post("/v1/chat/completions", json={**CHAT, "stream": True})
        assert third.status_code == 200  # the place came back with the first answer
