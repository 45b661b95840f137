from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import httpx
import pytest

from guard import (
    BaseJudge,
    Judge,
    JudgeOutputError,
    JudgeReply,
    JudgeUnavailable,
    LiteLLMJudge,
    Message,
    OpenAIJudge,
    OutputSchema,
    RetryableFailure,
    StructuredMode,
    resolve_judge,
)
from guard.bias.prompts import EXTRACT_SCHEMA
from guard.wire import (
    check_status,
    openai_request,
    rate_limit_delay,
    read_completion,
    refuses_format,
    retry_after_seconds,
)
from testkit.fake_openai import FakeOpenAI, Fault

MESSAGES = [{"role": "user", "content": 'Return {"opinions": []}'}]


def judge_for(fake: FakeOpenAI, **options: object) -> OpenAIJudge:
    options.setdefault("max_retries", 0)
    return OpenAIJudge(base_url=fake.base_url, model="judge", api_key="sk-judge", **options)  # type: ignore[arg-type]


class PublicJudge(BaseJudge):
    """A judge over a caller's own httpx client, written from guard's public names only."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        super().__init__(
            "judge",
            timeout=5.0,
            max_retries=1,
            backoff=0.001,
            structured=StructuredMode.JSON_SCHEMA,
            temperature=0.0,
        )
        self.client = client
        self.url = url

    async def send_once(
        self, messages: Sequence[Message], response_format: dict[str, Any] | None
    ) -> JudgeReply:
        body, headers = openai_request(
            self.model, messages, response_format, self.temperature, "sk-mine"
        )
        try:
            response = await self.client.post(self.url, json=body, headers=headers)
        except httpx.TransportError as exc:
            raise RetryableFailure(f"judge unreachable: {exc!r}", None, None) from exc
        check_status(
            response.status_code, response.text, response_format, rate_limit_delay(response.headers)
        )
        return read_completion(response.text)


async def test_a_judge_written_on_the_extension_point_gets_fallback_and_retries(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.fail(Fault(status=503))
    fake_openai.refuse_formats = {"json_schema"}
    async with httpx.AsyncClient() as client:
        judge = PublicJudge(client, f"{fake_openai.base_url}/chat/completions")
        reply = await judge.complete(MESSAGES, schema=EXTRACT_SCHEMA)
    assert isinstance(judge, Judge)
    assert reply.text.startswith('{"opinions"')
    assert reply.usage.prompt_tokens > 0
    # The 503 retried, the refused schema downgraded to JSON mode with the schema beside
    # it, as OpenAIJudge does.
    formats = [r.body["response_format"]["type"] for r in fake_openai.requests]
    assert formats == ["json_schema", "json_schema", "json_object"]
    assert fake_openai.requests[-1].body["response_format"]["schema"] == EXTRACT_SCHEMA.schema
    assert judge.structured is StructuredMode.JSON_OBJECT_SCHEMA
    assert fake_openai.requests[-1].headers["authorization"] == "Bearer sk-mine"


async def test_a_judge_written_on_the_extension_point_gives_up_as_unavailable() -> None:
    async with httpx.AsyncClient() as client:
        judge = PublicJudge(client, "http://127.0.0.1:9/v1/chat/completions")
        with pytest.raises(JudgeUnavailable, match="gave up after 2 attempts"):
            await judge.complete(MESSAGES)


async def test_asks_for_json_schema_first(fake_openai: FakeOpenAI) -> None:
    judge = judge_for(fake_openai)
    await judge.complete(MESSAGES, schema=EXTRACT_SCHEMA)
    body = fake_openai.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "opinions"
    assert body["temperature"] == 0
    assert fake_openai.requests[0].headers["authorization"] == "Bearer sk-judge"


async def test_max_tokens_bounds_each_answer_only_when_set(fake_openai: FakeOpenAI) -> None:
    await judge_for(fake_openai).complete(MESSAGES, schema=EXTRACT_SCHEMA)
    await judge_for(fake_openai, max_tokens=300).complete(MESSAGES, schema=EXTRACT_SCHEMA)
    litellm_judge = LiteLLMJudge(
        "openai/judge", base_url=fake_openai.base_url, api_key="k", max_retries=0, max_tokens=200
    )
    await litellm_judge.complete(MESSAGES)
    sent = [r.body.get("max_tokens") for r in fake_openai.requests]
    assert sent == [None, 300, 200]
    with pytest.raises(ValueError, match="max_tokens"):
        judge_for(fake_openai, max_tokens=0)


@pytest.mark.parametrize(
    ("refused", "expected_format", "expected_mode"),
    [
        ({"json_schema"}, "json_object", StructuredMode.JSON_OBJECT_SCHEMA),
        ({"json_schema", "json_object_schema"}, "json_object", StructuredMode.JSON_OBJECT),
        ({"json_schema", "json_object_schema", "json_object"}, None, StructuredMode.PROMPT),
    ],
)
async def test_falls_back_when_the_endpoint_refuses_a_format(
    fake_openai: FakeOpenAI,
    refused: set[str],
    expected_format: str | None,
    expected_mode: StructuredMode,
) -> None:
    fake_openai.refuse_formats = refused
    judge = judge_for(fake_openai)

    reply = await judge.complete(MESSAGES, schema=EXTRACT_SCHEMA)
    await judge.complete(MESSAGES, schema=EXTRACT_SCHEMA)

    assert reply.text.startswith('{"opinions"')
    assert judge.structured is expected_mode
    last = fake_openai.requests[-1].body.get("response_format")
    assert (last or {}).get("type") == expected_format
    # The downgrade is remembered: the second call goes straight to the working mode.
    assert len(fake_openai.requests) == len(refused) + 2


async def test_a_format_refused_with_a_500_that_names_it_is_stepped_down_at_once(
    fake_openai: FakeOpenAI,
) -> None:
    # llama.cpp's servers refuse json_schema with a 500 that says why.
    fake_openai.refuse_formats = {"json_schema"}
    fake_openai.refuse_status = 500
    judge = judge_for(fake_openai, max_retries=2, backoff=0.001)
    reply = await judge.complete(MESSAGES, schema=EXTRACT_SCHEMA)
    assert reply.text.startswith('{"opinions"')
    assert judge.structured is StructuredMode.JSON_OBJECT_SCHEMA
    # No retry was spent on the refusal: one refused call, one answered.
    assert len(fake_openai.requests) == 2


async def test_a_prompt_past_the_context_window_keeps_the_learned_format(
    fake_openai: FakeOpenAI,
) -> None:
    # llama-cpp-python's server: a 500 for json_schema, a 400 for a prompt it cannot hold.
    fake_openai.refuse_formats = {"json_schema"}
    fake_openai.refuse_status = 500
    fake_openai.context_window = 100
    judge = judge_for(fake_openai)
    await judge.complete(MESSAGES, schema=EXTRACT_SCHEMA)
    too_long = [{"role": "user", "content": "word " * 100}]
    with pytest.raises(JudgeUnavailable, match="maximum context length") as caught:
        await judge.complete(too_long, schema=EXTRACT_SCHEMA)
    assert caught.value.status_code == 400
    # One call for the long text, not one per weaker format; the form that works stays.
    assert len(fake_openai.requests) == 3
    assert judge.structured is StructuredMode.JSON_OBJECT_SCHEMA


async def test_litellm_judge_keeps_its_format_for_a_prompt_past_the_context_window(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.context_window = 100
    judge = LiteLLMJudge("openai/judge", base_url=fake_openai.base_url, api_key="k", max_retries=0)
    with pytest.raises(JudgeUnavailable, match="context"):
        await judge.complete([{"role": "user", "content": "word " * 100}], schema=EXTRACT_SCHEMA)
    assert len(fake_openai.requests) == 1
    assert judge.structured is StructuredMode.JSON_SCHEMA


async def test_a_500_that_names_no_format_is_retried_not_stepped_down(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.fail(Fault(status=500))
    judge = judge_for(fake_openai, max_retries=1, backoff=0.001)
    await judge.complete(MESSAGES, schema=EXTRACT_SCHEMA)
    formats = [r.body["response_format"]["type"] for r in fake_openai.requests]
    assert formats == ["json_schema", "json_schema"]
    assert judge.structured is StructuredMode.JSON_SCHEMA


@pytest.mark.parametrize(
    ("status", "body", "refused"),
    [
        (400, "bad request", True),
        (422, "{}", True),
        (500, 'response_format type must be one of "text" or "json_object"', True),
        (500, "Internal Server Error", False),
        (501, "grammar sampling is not supported", True),
        (503, "overloaded", False),
        (401, "json_schema needs a key", False),
        (429, "schema calls are rate limited", False),
        (200, "json_schema", False),
        # A prompt past the context window, in OpenAI's and llama-cpp-python's words, in
        # llama.cpp's own server's, and in a 500 that also names the schema.
        (400, '{"error": {"code": "context_length_exceeded"}}', False),
        (400, "This model's maximum context length is 4096 tokens", False),
        (400, "request (5000 tokens) exceeds the available context size", False),
        (500, "json_schema grammar: prompt exceeds the context window", False),
    ],
)
def test_which_answers_refuse_the_format(status: int, body: str, refused: bool) -> None:
    assert refuses_format(status, body) is refused


async def test_plain_text_calls_send_no_response_format(fake_openai: FakeOpenAI) -> None:
    await judge_for(fake_openai).complete(MESSAGES)
    assert "response_format" not in fake_openai.requests[0].body


async def test_bad_request_without_format_is_unavailable(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(Fault(status=401))
    with pytest.raises(JudgeUnavailable) as caught:
        await judge_for(fake_openai).complete(MESSAGES)
    assert caught.value.status_code == 401


async def test_retry_after_is_honoured(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(Fault(status=429, headers={"retry-after": "0.3"}))
    judge = judge_for(fake_openai, max_retries=1, backoff=0.001)
    import time

    started = time.perf_counter()
    await judge.complete(MESSAGES)
    assert time.perf_counter() - started >= 0.3
    assert len(fake_openai.requests) == 2


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("", None), ("2", 2.0), ("-1", 0.0), ("not a date", None)],
)
def test_retry_after_parsing(value: str | None, expected: float | None) -> None:
    assert retry_after_seconds(value) == expected


def test_retry_after_http_date_in_the_past_is_zero() -> None:
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


@pytest.mark.parametrize(
    "body",
    ['{"choices": []}', "<html>oops</html>", '{"choices": [{"message": {"content": null}}]}'],
)
async def test_non_completion_body_is_an_output_error(fake_openai: FakeOpenAI, body: str) -> None:
    fake_openai.fail(Fault(body=body))
    with pytest.raises(JudgeOutputError) as caught:
        await judge_for(fake_openai).complete(MESSAGES)
    assert caught.value.raw == body


async def test_usage_is_read_from_the_response(fake_openai: FakeOpenAI) -> None:
    reply = await judge_for(fake_openai).complete(MESSAGES)
    assert reply.usage.prompt_tokens > 0
    assert reply.usage.completion_tokens > 0


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": "abc", "completion_tokens": 2},
        [1, 2],
        "many",
        {"prompt_tokens": -3, "completion_tokens": 2},
        {"prompt_tokens": None, "completion_tokens": 2.0},
        {"prompt_tokens": True, "completion_tokens": 2},
        {"prompt_tokens": float("nan"), "completion_tokens": 2},
    ],
)
def test_usage_that_cannot_be_read_counts_as_zero(usage: object) -> None:
    body = {"choices": [{"message": {"content": "ok"}}], "usage": usage}
    reply = read_completion(json.dumps(body))
    assert reply.text == "ok"
    assert reply.usage.prompt_tokens == 0
    assert reply.usage.completion_tokens == (2 if isinstance(usage, dict) else 0)


def test_deeply_nested_judge_body_is_an_output_error() -> None:
    with pytest.raises(JudgeOutputError):
        read_completion("[" * 5000 + "]" * 5000)


async def test_custom_transport_is_used() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"choices": [{"message": {"content": "hi"}}]})

    judge = OpenAIJudge(
        base_url="http://judge.invalid/v1", model="m", transport=httpx.MockTransport(handler)
    )
    reply = await judge.complete(MESSAGES)
    await judge.aclose()
    assert reply.text == "hi"
    assert str(seen[0].url) == "http://judge.invalid/v1/chat/completions"


@pytest.mark.parametrize(("option", "value"), [("timeout", 0), ("max_retries", -1)])
def test_bad_options_are_rejected(option: str, value: float) -> None:
    with pytest.raises(ValueError, match=option):
        OpenAIJudge(base_url="http://x/v1", model="m", **{option: value})  # type: ignore[arg-type]


def test_resolve_judge_routes_by_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1234/v1")
    direct = resolve_judge("gpt-4o-mini")
    assert isinstance(direct, OpenAIJudge)
    assert direct.base_url == "http://127.0.0.1:1234/v1"
    with_url = resolve_judge("llama3", base_url="http://127.0.0.1:11434/v1/")
    assert isinstance(with_url, OpenAIJudge)
    assert with_url.base_url == "http://127.0.0.1:11434/v1"
    routed = resolve_judge("anthropic/claude-haiku")
    assert isinstance(routed, LiteLLMJudge)
    assert routed.provider == "anthropic"
    assert resolve_judge(direct) is direct
    with pytest.raises(ValueError, match="empty"):
        resolve_judge("")


def test_openai_judge_does_not_import_litellm(fake_openai: FakeOpenAI) -> None:
    import subprocess

    code = (
        "import asyncio, sys\n"
        "from guard import OpenAIJudge\n"
        f"j = OpenAIJudge(base_url={fake_openai.base_url!r}, model='judge')\n"
        "asyncio.run(j.complete([{'role': 'user', 'content': 'hi'}]))\n"
        "print('litellm' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"


async def test_litellm_judge_reaches_an_openai_compatible_server(fake_openai: FakeOpenAI) -> None:
    judge = LiteLLMJudge(
        "openai/judge", base_url=fake_openai.base_url, api_key="sk-judge", max_retries=0
    )
    schema = OutputSchema("opinions", EXTRACT_SCHEMA.schema)
    reply = await judge.complete(MESSAGES, schema=schema)
    assert reply.text == '{"opinions": ["Engineers from the north are lazy."]}'
    assert reply.usage.prompt_tokens > 0
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert fake_openai.requests[0].body["response_format"]["type"] == "json_schema"


async def test_litellm_judge_maps_errors(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(Fault(status=503))
    judge = LiteLLMJudge("openai/judge", base_url=fake_openai.base_url, api_key="k", max_retries=0)
    with pytest.raises(JudgeUnavailable):
        await judge.complete(MESSAGES)


async def test_refused_connection_over_httpx_aiohttp_is_unavailable_not_timeout() -> None:
    from httpx_aiohttp import AiohttpTransport

    judge = OpenAIJudge(
        base_url="http://127.0.0.1:9/v1", model="m", max_retries=0, transport=AiohttpTransport()
    )
    try:
        with pytest.raises(JudgeUnavailable, match="unreachable"):
            await judge.complete(MESSAGES)
    finally:
        await judge.aclose()


async def test_httpx_aiohttp_transport_reaches_the_judge(fake_openai: FakeOpenAI) -> None:
    from httpx_aiohttp import AiohttpTransport

    judge = judge_for(fake_openai, transport=AiohttpTransport())
    try:
        reply = await judge.complete(MESSAGES, schema=EXTRACT_SCHEMA)
    finally:
        await judge.aclose()
    assert reply.text.startswith('{"opinions"')
