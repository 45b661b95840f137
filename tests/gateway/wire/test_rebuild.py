"""Whole answers rebuilt from streams, API by API, against the whole form of the same
answer (`testkit.rich_answers`), and the streams that rebuild nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from gateway.wire import rebuild
from gateway.wire.rebuild import (
    Rebuilt,
    StreamError,
    Unfinished,
    chat_answer,
    completion_answer,
    message_answer,
    response_answer,
)
from testkit import rich_answers
from testkit.rich_answers import NOT_STREAMED, RichAnswer, RichChoice

REBUILD: dict[str, Callable[[bytes], Rebuilt]] = {
    "chat": chat_answer,
    "completions": completion_answer,
    "responses": response_answer,
    "messages": message_answer,
}
ASKED = {"stream": True, "stream_options": {"include_usage": True}}


def streamed(api: str, answer: RichAnswer, body: dict[str, Any] | None = None) -> bytes:
    return b"".join(frame.data for frame in rich_answers.STREAM[api](answer, body or ASKED))


def without_unstreamed(api: str, whole: dict[str, Any]) -> dict[str, Any]:
    """The whole form less the fields no stream carries (chat's `annotations: []`)."""
    whole = json.loads(json.dumps(whole))
    for name in NOT_STREAMED.get(api, ()):
        for choice in whole.get("choices", []):
            assert choice["message"].pop(name) == []  # only ever the empty list
    return whole


def answer_of(rebuilt: Rebuilt) -> dict[str, Any]:
    assert isinstance(rebuilt, dict), rebuilt
    return rebuilt


def test_module_exports_are_sorted_and_exist() -> None:
    assert rebuild.__all__ == sorted(rebuild.__all__)
    assert all(hasattr(rebuild, name) for name in rebuild.__all__)


ANSWERS = {
    "rich": RichAnswer(),
    "no-logprobs": RichAnswer(logprobs=False),
    "one-piece": RichAnswer(pieces=1),
    "tools-only": RichAnswer(
        choices=[
            RichChoice(content=None, tool_calls=[("c", "f", "{}")], finish_reason="tool_calls")
        ]
    ),
    "refusal-first": RichAnswer(choices=[RichChoice(content=None, refusal="No."), RichChoice()]),
}


@pytest.mark.parametrize("api", sorted(REBUILD))
@pytest.mark.parametrize("answer", sorted(ANSWERS))
def test_a_rebuilt_answer_equals_the_whole_one_field_by_field(api: str, answer: str) -> None:
    rich = ANSWERS[answer]
    whole = without_unstreamed(api, rich_answers.WHOLE[api](rich, {}))
    rebuilt = answer_of(REBUILD[api](streamed(api, rich)))
    assert rebuilt == whole
    assert json.dumps(rebuilt, sort_keys=True) == json.dumps(whole, sort_keys=True)


def test_the_one_field_a_chat_stream_cannot_give_back_is_annotations() -> None:
    rich = RichAnswer()
    whole = rich_answers.chat_whole(rich, {})
    rebuilt = answer_of(chat_answer(streamed("chat", rich)))
    assert rebuilt != whole
    for built, given in zip(rebuilt["choices"], whole["choices"], strict=True):
        assert set(given["message"]) - set(built["message"]) == {"annotations"}


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_without_include_usage_a_choice_stream_rebuilds_no_usage(api: str) -> None:
    rebuilt = answer_of(REBUILD[api](streamed(api, RichAnswer(), {"stream": True})))
    assert "usage" not in rebuilt
    assert rebuilt["choices"]  # the rest is there


@pytest.mark.parametrize("api", sorted(REBUILD))
def test_a_server_that_streams_no_usage_rebuilds_none(api: str) -> None:
    rebuilt = answer_of(REBUILD[api](streamed(api, RichAnswer(stream_usage=False))))
    assert rebuilt.get("usage") is None


def test_chat_fields_are_kept_from_the_chunks() -> None:
    rebuilt = answer_of(chat_answer(streamed("chat", RichAnswer())))
    assert rebuilt["system_fingerprint"] == "fp_rich01"
    assert rebuilt["service_tier"] == "default"
    assert "obfuscation" not in rebuilt
    text, refused, tools = rebuilt["choices"]
    assert text["message"]["refusal"] is None
    assert refused["message"] == {
        "role": "assistant",
        "content": None,
        "refusal": "I can't help with that request.",
    }
    assert refused["logprobs"]["content"] is None
    assert (
        "".join(t["token"] for t in refused["logprobs"]["refusal"]) == refused["message"]["refusal"]
    )
    assert [call["function"]["name"] for call in tools["message"]["tool_calls"]] == [
        "lookup",
        "clock",
    ]
    assert json.loads(tools["message"]["tool_calls"][0]["function"]["arguments"]) == {
        "city": "Oslo",
        "units": "metric",
    }
    assert rebuilt["usage"]["completion_tokens_details"]["reasoning_tokens"] == 12


def test_chat_other_delta_fields_are_joined() -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + json.dumps({"id": "c", "choices": [choice]}).encode() + b"\n\n"

    body = (
        chunk(
            {
                "role": "assistant",
                "reasoning_content": "Think",
                "audio": {"id": "au_1", "data": "AB"},
            }
        )
        + chunk({"reasoning_content": "ing.", "audio": {"data": "CD", "transcript": "hi"}})
        + chunk({"annotations": [{"type": "url_citation"}], "function_call": None})
        + chunk({"content": "ok"}, "stop")
        + b"data: [DONE]\n\n"
    )
    [choice] = answer_of(chat_answer(body))["choices"]
    assert choice["message"] == {
        "role": "assistant",
        "content": "ok",
        "reasoning_content": "Thinking.",
        "audio": {"id": "au_1", "data": "ABCD", "transcript": "hi"},
        "annotations": [{"type": "url_citation"}],
        "function_call": None,
    }


def test_a_responses_terminal_event_without_output_takes_the_done_items() -> None:
    events = []
    for frame in rich_answers.response_stream(RichAnswer(), ASKED):
        if b"response.completed" in frame.data.split(b"\n")[0]:
            payload = json.loads(frame.data.split(b"data: ", 1)[1])
            payload["response"]["output"] = []
            frame_data = (
                b"event: response.completed\ndata: " + json.dumps(payload).encode() + b"\n\n"
            )
            events.append(frame_data)
        else:
            events.append(frame.data)
    rebuilt = answer_of(response_answer(b"".join(events)))
    assert rebuilt == rich_answers.response_whole(RichAnswer(), {})


def test_a_message_rebuilds_thinking_citations_and_tool_input() -> None:
    rebuilt = answer_of(message_answer(streamed("messages", RichAnswer())))
    thinking, text, *tools = rebuilt["content"]
    assert thinking["signature"] == "c2lnbmF0dXJl"
    assert text["citations"][0]["cited_text"] == "Engineers design bridges."
    assert [tool["input"] for tool in tools] == [
        {"city": "Oslo", "units": "metric"},
        {"zone": "UTC"},
    ]
    assert rebuilt["usage"] == {
        "input_tokens": 31,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 5,
        "output_tokens": 57,
        "service_tier": "standard",
    }


OPENAI_ERROR = {"error": {"message": "overloaded", "type": "server_error", "code": None}}


@pytest.mark.parametrize(
    ("api", "error_event"),
    [
        ("chat", b"data: " + json.dumps(OPENAI_ERROR).encode() + b"\n\n"),
        ("completions", b"data: " + json.dumps(OPENAI_ERROR).encode() + b"\n\n"),
        (
            "responses",
            b'event: error\ndata: {"type": "error", "code": "server_error", "message": "x",'
            b' "param": null, "sequence_number": 3}\n\n',
        ),
        (
            "messages",
            b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error",'
            b' "message": "Overloaded"}}\n\n',
        ),
    ],
)
def test_an_error_event_mid_stream_is_the_answer(api: str, error_event: bytes) -> None:
    frames = [frame.data for frame in rich_answers.STREAM[api](RichAnswer(), ASKED)]
    body = b"".join(frames[:3]) + error_event + b"".join(frames[3:])
    result = REBUILD[api](body)
    assert isinstance(result, StreamError)
    assert result.body == json.loads(error_event.split(b"data: ", 1)[1])


@pytest.mark.parametrize("api", sorted(REBUILD))
def test_a_stream_cut_short_rebuilds_nothing(api: str) -> None:
    frames = [frame.data for frame in rich_answers.STREAM[api](RichAnswer(), ASKED)]
    with pytest.raises(Unfinished):
        REBUILD[api](b"".join(frames[: len(frames) // 2]))


@pytest.mark.parametrize("api", sorted(REBUILD))
@pytest.mark.parametrize(
    "body", [b"data: not json\n\n", b"data: [1, 2]\n\n", b""], ids=["text", "array", "empty"]
)
def test_a_stream_that_is_not_one_rebuilds_nothing(api: str, body: bytes) -> None:
    with pytest.raises(Unfinished):
        REBUILD[api](body)


def test_a_chat_stream_without_done_needs_every_choice_finished() -> None:
    frames = [frame.data for frame in rich_answers.chat_stream(RichAnswer(), ASKED)]
    assert frames[-1] == b"data: [DONE]\n\n"
    assert answer_of(chat_answer(b"".join(frames[:-1])))["usage"]  # every choice had ended
    with pytest.raises(Unfinished, match="before its last chunk"):
        chat_answer(b"".join(frames[:5]))


def test_a_message_tool_input_that_is_not_json_rebuilds_nothing() -> None:
    body = b"".join(
        b"event: x\ndata: " + json.dumps(event).encode() + b"\n\n"
        for event in [
            {"type": "message_start", "message": {"id": "m", "content": [], "usage": {}}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": "{"},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "message_stop"},
        ]
    )
    with pytest.raises(Unfinished, match="not JSON"):
        message_answer(body)


@pytest.mark.parametrize(
    "events",
    [
        [{"type": "content_block_start", "index": 0, "content_block": {}}],
        [
            {"type": "message_start", "message": {"id": "m"}},
            {
                "type": "content_block_delta",
                "index": 3,
                "delta": {"type": "text_delta", "text": "x"},
            },
        ],
        [{"type": "message_start", "message": "m"}],
        [
            {"type": "message_start", "message": {"id": "m"}},
            {"type": "content_block_stop", "index": "0"},
        ],
    ],
    ids=["before-start", "unstarted-block", "no-message", "bad-index"],
)
def test_a_message_stream_out_of_order_rebuilds_nothing(events: list[dict[str, Any]]) -> None:
    body = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)
    with pytest.raises(Unfinished):
        message_answer(body + b'data: {"type": "message_stop"}\n\n')
