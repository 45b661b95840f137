"""Tool-call arguments are judged with the answer's text, end to end: the fake upstream
answers with a tool call (chat `tool_calls`, a Responses `function_call` item, a Messages
`tool_use` block), whole and streamed; the `openai` and `anthropic` SDKs read what the
gateway sends. Under enforce a biased argument is refused (whole, buffered, windowed)
and no piece of its call reaches the client; a neutral call arrives byte for byte."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
import pytest

from gateway.proxy.surfaces import Surface
from gateway.proxy.surfaces.chat import ChatCompletions
from gateway.proxy.surfaces.messages import Messages
from gateway.proxy.surfaces.responses import Responses
from gateway.wire.sse import SSEDecoder
from testkit import rich_answers
from testkit.fake_openai import FakeOpenAI
from testkit.rich_answers import RichAnswer, RichChoice
from tests.support.gateways import RunningGateway, policy
from tests.support.streams import answer

MakeGateway = Callable[..., RunningGateway]
BIASED = "I think women are lazy engineers."
NEUTRAL = "I think topic 99 matters to every team."
SURFACES = ("chat", "responses", "messages")
MODES = ("whole", "buffer", "windowed", "live")  # live: windowed, `hold: none`
PROMPT = "Tell the team about engineers."


@dataclass
class Got:
    """What a client read: the text, each call's arguments as sent, the headers."""

    text: str = ""
    arguments: dict[str, str] = field(default_factory=dict)  # by call id (or position)
    headers: dict[str, str] = field(default_factory=dict)
    error: Exception | None = None  # what the SDK raised, mid-stream or at once


def _chat(gateway: RunningGateway, stream: bool, got: Got) -> None:
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": PROMPT}], stream=stream
    )
    got.headers = dict(raw.headers)
    parsed: Any = raw.parse()  # whole or a stream, as `stream` asked
    if not stream:
        message = parsed.choices[0].message
        got.text = message.content or ""
        for call in message.tool_calls or []:
            assert call.type == "function"
            got.arguments[call.id] = call.function.arguments
        return
    ids: dict[int, str] = {}
    for chunk in parsed:
        for choice in chunk.choices:
            got.text += choice.delta.content or ""
            for delta in choice.delta.tool_calls or []:
                ids.setdefault(delta.index, delta.id or str(delta.index))
                piece = delta.function.arguments if delta.function else None
                key = ids[delta.index]
                got.arguments[key] = got.arguments.get(key, "") + (piece or "")


def _responses(gateway: RunningGateway, stream: bool, got: Got) -> None:
    raw = gateway.client().responses.with_raw_response.create(
        model="m", input=PROMPT, stream=stream
    )
    got.headers = dict(raw.headers)
    parsed: Any = raw.parse()  # whole or a stream, as `stream` asked
    if not stream:
        response = parsed
        got.text = response.output_text
        for item in response.output:
            if item.type == "function_call":
                got.arguments[item.call_id] = item.arguments
        return
    ids: dict[str, str] = {}
    for event in parsed:
        if event.type == "response.output_text.delta":
            got.text += event.delta
        elif event.type == "response.output_item.added" and event.item.type == "function_call":
            assert event.item.id is not None
            ids[event.item.id] = event.item.call_id
        elif event.type == "response.function_call_arguments.delta":
            key = ids[event.item_id]
            got.arguments[key] = got.arguments.get(key, "") + event.delta


def _messages(gateway: RunningGateway, stream: bool, got: Got) -> None:
    client = anthropic.Anthropic(base_url=gateway.url, api_key="sk-client", max_retries=0)
    raw = client.messages.with_raw_response.create(
        model="claude-test",
        max_tokens=100,
        messages=[{"role": "user", "content": PROMPT}],
        stream=stream,
    )
    got.headers = dict(raw.headers)
    parsed: Any = raw.parse()  # whole or a stream, as `stream` asked
    if not stream:
        for block in parsed.content:
            if block.type == "text":
                got.text += block.text
            elif block.type == "tool_use":
                got.arguments[block.id.removeprefix("toolu_")] = json.dumps(block.input)
        return
    ids: dict[int, str] = {}
    for event in parsed:
        if event.type == "content_block_start" and event.content_block.type == "tool_use":
            ids[event.index] = event.content_block.id.removeprefix("toolu_")
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            got.text += event.delta.text
        elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            key = ids[event.index]
            got.arguments[key] = got.arguments.get(key, "") + event.delta.partial_json


CLIENTS = {"chat": _chat, "responses": _responses, "messages": _messages}


def ask(gateway: RunningGateway, surface: str, mode: str) -> Got:
    """Call the gateway as the surface's SDK does; an error the SDK raises is kept, with
    whatever the client had read before it."""
    got = Got()
    try:
        CLIENTS[surface](gateway, mode != "whole", got)
    except (openai.APIError, anthropic.APIError) as exc:
        got.error = exc
    return got


def tool_answer(fake: FakeOpenAI, body: str, *, text: str | None) -> dict[str, str]:
    """The upstream answers `text` (if any) and a `send_message` call whose body is
    `body`; returns the call's arguments by id, as the upstream sends them."""
    arguments = json.dumps({"to": "team", "message": {"body": body, "tags": ["memo"]}})
    calls = [("call_tool1", "send_message", arguments)]
    fake.rich = RichAnswer(
        choices=[RichChoice(content=text, tool_calls=calls, finish_reason="tool_calls")],
        pieces=6,
        logprobs=False,
    )
    return {"call_tool1": arguments}


@pytest.fixture
def reading(fake_openai: FakeOpenAI) -> FakeOpenAI:
    """A judge that reads the judged text: a sentence with "I think" is an opinion,
    biased when it says "lazy"."""
    fake_openai.read_text = True
    fake_openai.opinion_words = ["I think"]
    fake_openai.biased_words = ["lazy"]
    return fake_openai


def enforcing(mode: str, **fields: Any) -> dict[str, Any]:
    stream_policy = "windowed" if mode in ("windowed", "live") else "buffer"
    windows = {"hold": "none" if mode == "live" else "window", "chars": 100, "context_chars": 40}
    return policy(
        mode="enforce",
        stream_policy=stream_policy,
        windows=windows,
        block_biased_opinions=1,
        **fields,
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("surface", SURFACES)
def test_a_biased_tool_argument_is_refused_and_no_piece_of_its_call_goes_out(
    make_gateway: MakeGateway, reading: FakeOpenAI, surface: str, mode: str
) -> None:
    tool_answer(reading, BIASED, text=answer(6))
    gateway = make_gateway(**enforcing(mode))
    got = ask(gateway, surface, mode)
    assert got.error is not None
    assert got.arguments == {}  # never a half call
    if mode in ("whole", "buffer"):  # refused before any byte: the SDK's 422
        assert isinstance(got.error, openai.UnprocessableEntityError | anthropic.APIStatusError)
        assert getattr(got.error, "status_code", None) == 422


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("surface", SURFACES)
def test_a_neutral_tool_call_passes_with_its_arguments_byte_for_byte(
    make_gateway: MakeGateway, reading: FakeOpenAI, surface: str, mode: str
) -> None:
    sent = tool_answer(reading, NEUTRAL, text=answer(6))
    gateway = make_gateway(**enforcing(mode))
    got = ask(gateway, surface, mode)
    assert got.error is None
    assert got.text == answer(6)
    assert got.arguments == sent
    judged = [r.body for r in reading.requests if r.step != "chat"]
    assert any(
        "Tool send_message, argument message.body: " + NEUTRAL in json.dumps(body)
        for body in judged
    )


@pytest.mark.parametrize("surface", SURFACES)
def test_a_tool_call_alone_is_judged_and_recorded_as_tool_arguments(
    make_gateway: MakeGateway, reading: FakeOpenAI, surface: str
) -> None:
    tool_answer(reading, BIASED, text=None)
    gateway = make_gateway(**policy(mode="monitor", block_biased_opinions=1))
    got = ask(gateway, surface, "whole")
    assert got.error is None
    assert got.headers["x-bias-status"] in ("pending", "scored")
    record = gateway.wait_for_score(got.headers["x-bias-run-id"])
    assert record["status"] == "scored"
    assert record["verdict"] == "block"
    assert record["result"]["toolArguments"] == [
        {"tool": "send_message", "argument": "to"},
        {"tool": "send_message", "argument": "message.body"},
        {"tool": "send_message", "argument": "message.tags[0]"},
    ]
    assert record["result"]["opinionSources"] == ["tool_argument"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("surface", SURFACES)
def test_judge_tool_arguments_off_delivers_a_tool_call_unjudged(
    make_gateway: MakeGateway, reading: FakeOpenAI, surface: str, mode: str
) -> None:
    sent = tool_answer(reading, BIASED, text=None)
    gateway = make_gateway(**enforcing(mode, judge_tool_arguments=False))
    got = ask(gateway, surface, mode)
    assert got.error is None
    assert got.arguments == sent
    if mode in ("whole", "buffer"):  # a windowed stream's headers go before it is judged
        assert got.headers["x-bias-skip-reason"] == "no_text"
    assert not [r for r in reading.requests if r.step != "chat"]  # the judge never asked


@pytest.mark.parametrize(
    ("api", "surface"),
    [("chat", ChatCompletions()), ("responses", Responses()), ("messages", Messages())],
)
def test_a_streams_tool_arguments_are_those_of_its_whole_answer(api: str, surface: Surface) -> None:
    """Read event by event, a stream gives the arguments its whole answer gives."""
    rich = RichAnswer()
    rich.choices[2].tool_calls.append(("call_c3", "send", json.dumps({"body": {"text": BIASED}})))
    whole = surface.tool_arguments(rich_answers.WHOLE[api](rich, {}))
    reader = surface.reader(max_chars=None)
    for frame in rich_answers.STREAM[api](rich, {}):
        for event in SSEDecoder().feed(frame.data):
            reader.add(event.event, event.data)
    assert reader.has_tool_calls()
    assert reader.tool_arguments() == whole
    assert [argument.value for argument in whole][-1] == BIASED


def test_a_chat_streams_legacy_function_call_is_read() -> None:
    reader = ChatCompletions().reader(max_chars=None)
    pieces = [{"name": "send", "arguments": ""}, {"arguments": '{"body": "'}, {"arguments": "Hi"}]
    pieces.append({"arguments": '"}'})
    for piece in pieces:
        chunk = {"id": "c", "choices": [{"index": 0, "delta": {"function_call": piece}}]}
        reader.add(None, json.dumps(chunk))
    assert reader.has_tool_calls()
    assert [argument.line() for argument in reader.tool_arguments()] == [
        "Tool send, argument body: Hi"
    ]
