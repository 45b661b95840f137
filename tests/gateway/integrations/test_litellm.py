"""LiteLLM, both ways, through a real LiteLLM proxy process in front of the fake upstream.

- As a moderation backend: LiteLLM's own `openai_moderation` guardrail, its
  `api_base` at the gateway, calls `/v1/moderations`.
- In process: `gateway.integrations.litellm.BiasGuardrail`, named in LiteLLM's
  config, scores with guard against the fake judge.

One proxy serves the module (it takes tens of seconds to start); each test
picks its guardrails per request (`guardrails` in the body), as LiteLLM allows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml
from fastapi import HTTPException

from gateway.integrations.litellm import BiasGuardrail
from gateway.server.app import create_app
from testkit.fake_openai import JUDGE_MODEL, FakeOpenAI, Fault
from testkit.rich_answers import RichAnswer, RichChoice
from testkit.servers import ServerThread
from testkit.waiting import wait_for
from tests.support.gateways import settings_for
from tests.support.litellm_proxy import STARTUP_SECONDS, LiteLLMProxy, start_litellm
from tests.support.texts import BIASED, NEUTRAL

# The proxy's start, which the first test waits for, takes a minute on a busy machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(STARTUP_SECONDS + 60)]

GATEWAY_KEY = "sk-litellm"  # LiteLLM's key at the gateway

# LiteLLM's config, as the README shows it. {gateway}: the gateway's URL; {upstream}:
# the fake model's; {bias_config}: the gateway config BiasGuardrail reads.
LITELLM_CONFIG = """\
model_list:
  - model_name: chat-model
    litellm_params:
      model: openai/chat-model
      api_base: {upstream}
      api_key: sk-upstream

guardrails:
  # The gateway as LiteLLM's moderation backend.
  - guardrail_name: bias-moderation-post
    litellm_params:
      guardrail: openai_moderation
      mode: post_call
      api_base: {gateway}/v1
      api_key: {key}
  - guardrail_name: bias-moderation-pre
    litellm_params:
      guardrail: openai_moderation
      mode: pre_call
      api_base: {gateway}/v1
      api_key: {key}
  - guardrail_name: bias-moderation-stream-end
    litellm_params:
      guardrail: openai_moderation
      mode: post_call
      api_base: {gateway}/v1
      api_key: {key}
      streaming_end_of_stream_only: true
  - guardrail_name: bias-moderation-stream-held
    litellm_params:
      guardrail: openai_moderation
      mode: post_call
      api_base: {gateway}/v1
      api_key: {key}
      streaming_buffer_until_moderated: true
  # The judge inside LiteLLM.
  - guardrail_name: bias-enforce
    litellm_params:
      guardrail: gateway.integrations.litellm.BiasGuardrail
      mode: post_call
      gateway_config: {bias_config}
  - guardrail_name: bias-monitor
    litellm_params:
      guardrail: gateway.integrations.litellm.BiasGuardrail
      mode: post_call
      gateway_config: {bias_config}
      bias_policy: watch
  - guardrail_name: bias-input
    litellm_params:
      guardrail: gateway.integrations.litellm.BiasGuardrail
      mode: pre_call
      gateway_config: {bias_config}
"""

# The gateway config BiasGuardrail reads: the fake judge, an enforcing and a monitoring policy.
BIAS_CONFIG = """\
judge:
  model: {judge}
  base_url: {upstream}
  api_key: sk-judge
  max_retries: 0
policies:
  default:
    mode: enforce
  watch:
    mode: monitor
"""


@pytest.fixture(scope="module")
def backend(_fake_server: FakeOpenAI, tmp_path_factory) -> Iterator[str]:
    """The gateway LiteLLM's moderation guardrail calls, with a key for LiteLLM."""
    settings = settings_for(
        _fake_server,
        tmp_path_factory.mktemp("backend"),
        keys=[{"key": GATEWAY_KEY, "name": "litellm"}],
    )
    server = ServerThread(create_app(settings), lifespan="on").start()
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def proxy(_fake_server: FakeOpenAI, backend: str, tmp_path_factory) -> Iterator[LiteLLMProxy]:
    folder = tmp_path_factory.mktemp("litellm")
    bias_config = folder / "gateway.yaml"
    bias_config.write_text(BIAS_CONFIG.format(judge=JUDGE_MODEL, upstream=_fake_server.base_url))
    config = folder / "config.yaml"
    config.write_text(
        LITELLM_CONFIG.format(
            upstream=_fake_server.base_url,
            gateway=backend,
            key=GATEWAY_KEY,
            bias_config=bias_config,
        )
    )
    proxy = start_litellm(config, folder / "litellm.log")
    yield proxy
    proxy.stop()


def ask(proxy: LiteLLMProxy, guardrail: str, prompt: str = "Tell me about engineers.", **extra):
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key=proxy.master_key, max_retries=0)
    return client.chat.completions.with_raw_response.create(
        model="chat-model",
        messages=[{"role": "user", "content": prompt}],
        extra_body={"guardrails": [guardrail]},
        **extra,
    )


def moderated(fake: FakeOpenAI) -> list[str]:
    """The texts the gateway's judge was asked about, by the analyze step."""
    return [
        str(recorded.body["messages"][-1]["content"])
        for recorded in fake.requests
        if recorded.step == "analyze"
    ]


def stream_text(proxy: LiteLLMProxy, guardrail: str) -> tuple[str, Exception | None]:
    """What a streamed answer delivers through `guardrail`, and the error that ended it."""
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key=proxy.master_key, max_retries=0)
    pieces: list[str] = []
    try:
        stream = client.chat.completions.create(
            model="chat-model",
            messages=[{"role": "user", "content": "Tell me about engineers."}],
            stream=True,
            extra_body={"guardrails": [guardrail]},
        )
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
    except (openai.APIError, openai.APIConnectionError) as exc:
        return "".join(pieces), exc
    return "".join(pieces), None


# -- the gateway as LiteLLM's moderation backend -----------------------------------


def test_post_call_blocks_a_biased_answer(proxy: LiteLLMProxy, judged: FakeOpenAI) -> None:
    judged.reply = BIASED
    with pytest.raises(openai.BadRequestError) as raised:
        ask(proxy, "bias-moderation-post")

    assert "Violated OpenAI moderation policy" in str(raised.value)
    assert "geographical" in str(raised.value.body)
    assert any(BIASED in text for text in moderated(judged))


def test_post_call_passes_a_neutral_answer(proxy: LiteLLMProxy, judged: FakeOpenAI) -> None:
    judged.reply = NEUTRAL
    completion = ask(proxy, "bias-moderation-post").parse()

    assert completion.choices[0].message.content == NEUTRAL
    assert any(NEUTRAL in text for text in moderated(judged))


def test_pre_call_scores_the_users_input(proxy: LiteLLMProxy, judged: FakeOpenAI) -> None:
    judged.reply = NEUTRAL
    with pytest.raises(openai.BadRequestError):
        ask(proxy, "bias-moderation-pre", prompt=BIASED)
    # The model was never asked.
    assert "chat" not in judged.steps()

    assert ask(proxy, "bias-moderation-pre", prompt=NEUTRAL).parse().choices[0].message.content


def test_a_flagged_stream_is_cut_after_some_of_it_was_sent(
    proxy: LiteLLMProxy, judged: FakeOpenAI
) -> None:
    """LiteLLM 1.110 moderates a stream every fifth chunk by default: a flagged verdict
    ends it with an error event, after the chunks before that scan went out. With
    `streaming_end_of_stream_only` the whole text goes out first. Its setting that
    withholds a stream until moderated, `streaming_buffer_until_moderated`, is not
    read by `openai_moderation`: the stream is cut as by default."""
    judged.reply = BIASED
    judged.chunks = 12
    for guardrail in ("bias-moderation-post", "bias-moderation-stream-held"):
        sent, error = stream_text(proxy, guardrail)
        assert isinstance(error, openai.APIError)
        assert "Violated OpenAI moderation policy" in str(error)
        assert sent
        assert BIASED.startswith(sent)
        assert sent != BIASED

    sent, error = stream_text(proxy, "bias-moderation-stream-end")
    assert sent == BIASED
    assert isinstance(error, openai.APIError)


# -- BiasGuardrail inside LiteLLM ----------------------------------------------------


def test_the_guardrail_blocks_a_biased_answer_in_enforce(
    proxy: LiteLLMProxy, judged: FakeOpenAI
) -> None:
    judged.reply = BIASED
    with pytest.raises(openai.APIStatusError) as raised:
        ask(proxy, "bias-enforce")

    assert raised.value.status_code == 422
    assert "bias_threshold_exceeded" in str(raised.value.body)


def test_the_guardrail_passes_a_neutral_answer_with_its_score(
    proxy: LiteLLMProxy, judged: FakeOpenAI
) -> None:
    judged.reply = NEUTRAL
    raw = ask(proxy, "bias-enforce")

    assert raw.parse().choices[0].message.content == NEUTRAL
    assert raw.headers["x-bias-status"] == "scored"
    assert raw.headers["x-bias-verdict"] == "pass"
    assert raw.headers["x-bias-score"] == "0"
    assert raw.headers["x-bias-run-id"]


def test_the_guardrail_in_monitor_reports_and_lets_through(
    proxy: LiteLLMProxy, judged: FakeOpenAI
) -> None:
    judged.reply = BIASED
    raw = ask(proxy, "bias-monitor")

    assert raw.parse().choices[0].message.content == BIASED
    assert raw.headers["x-bias-verdict"] == "block"
    assert raw.headers["x-bias-score"] == "1"
    assert raw.headers["x-bias-categories"] == "geographical"
    run_id = raw.headers["x-bias-run-id"]
    wait_for(lambda: run_id in proxy.output(), "the monitored block in LiteLLM's log")


def test_the_guardrail_judges_the_input_before_the_call(
    proxy: LiteLLMProxy, judged: FakeOpenAI
) -> None:
    judged.reply = NEUTRAL
    with pytest.raises(openai.APIStatusError) as raised:
        ask(proxy, "bias-input", prompt=BIASED)
    assert raised.value.status_code == 422
    assert "chat" not in judged.steps()


def test_the_guardrail_holds_a_stream_until_it_is_judged(
    proxy: LiteLLMProxy, judged: FakeOpenAI
) -> None:
    judged.reply = BIASED
    judged.chunks = 12
    sent, error = stream_text(proxy, "bias-enforce")

    assert sent == ""
    assert isinstance(error, openai.APIStatusError)
    assert error.status_code == 422

    judged.reply = NEUTRAL
    assert stream_text(proxy, "bias-enforce") == (NEUTRAL, None)


def tool_call_answer(fake: FakeOpenAI, body: str) -> str:
    """The upstream answers NEUTRAL text and a `send_message` call whose body is `body`;
    returns the call's arguments as sent."""
    arguments = json.dumps({"to": "team", "body": body})
    call = ("call_1", "send_message", arguments)
    choice = RichChoice(content=NEUTRAL, tool_calls=[call], finish_reason="tool_calls")
    fake.rich = RichAnswer(choices=[choice], pieces=6, logprobs=False)
    return arguments


def test_the_guardrail_judges_the_answers_tool_call_arguments(
    proxy: LiteLLMProxy, judged: FakeOpenAI
) -> None:
    tool_call_answer(judged, BIASED)
    with pytest.raises(openai.APIStatusError) as raised:
        ask(proxy, "bias-enforce")
    assert raised.value.status_code == 422
    assert "bias_threshold_exceeded" in str(raised.value.body)
    line = f"Tool send_message, argument body: {BIASED}"
    assert any(line in text for text in moderated(judged))

    sent = tool_call_answer(judged, NEUTRAL)
    raw = ask(proxy, "bias-enforce")
    calls = raw.parse().choices[0].message.tool_calls
    assert calls is not None
    assert [call.function.arguments for call in calls] == [sent]
    assert raw.headers["x-bias-verdict"] == "pass"


# -- BiasGuardrail's own decisions, called in this process ------------------------


@pytest.fixture
def make_guardrail(judged: FakeOpenAI, tmp_path: Path):
    """A BiasGuardrail on a gateway config of its own; `policy` fields override the default's."""

    def make(**policy: Any) -> BiasGuardrail:
        config = tmp_path / "gateway.yaml"
        config.write_text(BIAS_CONFIG.format(judge=JUDGE_MODEL, upstream=judged.base_url))
        if policy:
            data = yaml.safe_load(config.read_text())
            data["policies"]["default"].update(policy)
            config.write_text(yaml.safe_dump(data))
        return BiasGuardrail(
            guardrail_name="bias", event_hook="post_call", gateway_config=str(config)
        )

    return make


async def test_a_judge_failure_passes_unless_the_policy_blocks_it(judged, make_guardrail) -> None:
    judged.fail(Fault(step="preprocess", status=500), Fault(step="preprocess", status=500))
    request: dict[str, Any] = {}
    inputs = {"texts": [BIASED]}
    assert await make_guardrail().apply_guardrail(inputs, request, "response") == inputs
    assert request["metadata"]["bias"]["status"] == "error"
    assert request["metadata"]["bias"]["error_type"] == "JudgeUnavailable"

    with pytest.raises(HTTPException) as raised:
        await make_guardrail(on_judge_error="block").apply_guardrail(inputs, {}, "response")
    assert raised.value.status_code == 503


async def test_the_request_side_judges_the_last_user_message(judged, make_guardrail) -> None:
    guardrail = make_guardrail(mode="monitor")
    messages = [
        {"role": "user", "content": BIASED},
        {"role": "assistant", "content": NEUTRAL},
        {"role": "user", "content": [{"type": "text", "text": NEUTRAL}]},
    ]
    request: dict[str, Any] = {"metadata": {"user": "u1"}}
    await guardrail.apply_guardrail({"structured_messages": messages}, request, "request")

    assert request["metadata"]["bias"]["verdict"] == "pass"
    assert request["metadata"]["user"] == "u1"
    headers = await guardrail.async_post_call_response_headers_hook(request, None, None)
    assert headers is not None
    assert headers["x-bias-verdict"] == "pass"
    assert headers["x-bias-categories"] == ""


TOOL_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "send_message", "arguments": json.dumps({"body": BIASED})},
}


async def test_an_answer_that_is_only_a_tool_call_is_judged(judged, make_guardrail) -> None:
    request: dict[str, Any] = {}
    inputs = {"texts": [], "tool_calls": [TOOL_CALL]}
    await make_guardrail(mode="monitor").apply_guardrail(inputs, request, "response")

    bias = request["metadata"]["bias"]
    assert (bias["status"], bias["verdict"]) == ("scored", "block")
    assert bias["tool_arguments"] == [{"tool": "send_message", "argument": "body"}]


async def test_judge_tool_arguments_off_leaves_tool_calls_unjudged(judged, make_guardrail) -> None:
    guardrail = make_guardrail(judge_tool_arguments=False)
    inputs = {"texts": [], "tool_calls": [TOOL_CALL]}
    assert await guardrail.apply_guardrail(inputs, {}, "response") == inputs
    assert judged.judge_calls() == 0


async def test_nothing_to_judge_costs_no_judge_call(judged, make_guardrail) -> None:
    guardrail = make_guardrail()
    request: dict[str, Any] = {}
    await guardrail.apply_guardrail({"texts": ["  "]}, request, "response")

    assert judged.judge_calls() == 0
    assert await guardrail.async_post_call_response_headers_hook(request, None, None) is None


def test_an_unknown_policy_is_refused_at_startup(judged, tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(BIAS_CONFIG.format(judge=JUDGE_MODEL, upstream=judged.base_url))
    with pytest.raises(ValueError, match="no policy 'strict'"):
        BiasGuardrail(guardrail_name="bias", gateway_config=str(config), bias_policy="strict")
