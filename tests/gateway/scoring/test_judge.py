"""The gateway's aiohttp judge: guard's judge contract over the gateway's pool."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from gateway.scoring.judge_client import AiohttpJudge
from gateway.upstream.client import Upstream
from guard import BiasScorer, JudgeTimeout, JudgeUnavailable
from guard.bias.prompts import EXTRACT_SCHEMA
from testkit.fake_openai import FakeOpenAI, Fault
from tests.support.gateways import RunningGateway

MESSAGES = [{"role": "user", "content": 'Return {"opinions": []}'}]


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    client = Upstream()
    await client.start()
    yield client
    await client.close()


def judge(upstream: Upstream, base_url: str, **options: float) -> AiohttpJudge:
    settings: dict[str, float] = {"timeout": 5, "max_retries": 0, **options}
    made = AiohttpJudge(
        upstream,
        base_url=base_url,
        model="judge",
        api_key="sk-judge",
        timeout=settings["timeout"],
        max_retries=int(settings["max_retries"]),
    )
    made.backoff = 0.01
    return made


async def test_scores_through_the_fake(fake_openai: FakeOpenAI, upstream: Upstream) -> None:
    result = await BiasScorer(judge(upstream, fake_openai.base_url)).run(output="text")
    assert result.score == 1
    assert fake_openai.steps() == ["preprocess", "analyze", "reason"]
    assert fake_openai.requests[0].headers["authorization"] == "Bearer sk-judge"
    assert fake_openai.requests[0].body["response_format"]["type"] == "json_schema"


def test_max_tokens_goes_to_every_judge_call_not_the_upstream(
    fake_openai: FakeOpenAI, make_gateway: Callable[..., RunningGateway]
) -> None:
    gateway = make_gateway(judge={"max_tokens": 256, "reason": "inline"})
    ask: Any = [{"role": "user", "content": "Describe engineers."}]
    raw = gateway.client().chat.completions.with_raw_response.create(model="m", messages=ask)
    assert gateway.wait_for_score(raw.headers["x-bias-run-id"])["status"] == "scored"
    steps = {r.step: r.body.get("max_tokens") for r in fake_openai.requests}
    assert steps == {"chat": None, "preprocess": 256, "analyze": 256, "reason": 256}


async def test_format_fallback(fake_openai: FakeOpenAI, upstream: Upstream) -> None:
    fake_openai.refuse_formats = {"json_schema"}
    reply = await judge(upstream, fake_openai.base_url).complete(MESSAGES, schema=EXTRACT_SCHEMA)
    assert reply.text.startswith('{"opinions"')
    assert fake_openai.requests[-1].body["response_format"] == {
        "type": "json_object",
        "schema": EXTRACT_SCHEMA.schema,
    }


async def test_retries_server_errors(fake_openai: FakeOpenAI, upstream: Upstream) -> None:
    fake_openai.fail(Fault(status=503))
    reply = await judge(upstream, fake_openai.base_url, max_retries=1).complete(MESSAGES)
    assert reply.text
    assert len(fake_openai.requests) == 2


async def test_refused_connection_is_unavailable(upstream: Upstream) -> None:
    with pytest.raises(JudgeUnavailable, match="unreachable"):
        await judge(upstream, "http://127.0.0.1:9/v1").complete(MESSAGES)


async def test_timeout(fake_openai: FakeOpenAI, upstream: Upstream) -> None:
    fake_openai.fail(Fault(delay=1.0))
    with pytest.raises(JudgeTimeout):
        await judge(upstream, fake_openai.base_url, timeout=0.2).complete(MESSAGES)


async def test_error_status_is_unavailable(fake_openai: FakeOpenAI, upstream: Upstream) -> None:
    fake_openai.fail(Fault(status=401))
    with pytest.raises(JudgeUnavailable) as caught:
        await judge(upstream, fake_openai.base_url).complete(MESSAGES)
    assert caught.value.status_code == 401
