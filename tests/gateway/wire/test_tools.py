"""`gateway.wire.tools`: the string values of tool-call arguments, whole and streamed,
and `gateway.wire.holding`: how far a stream with a tool call may be released."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.wire.holding import ToolCallHold
from gateway.wire.tools import (
    MessageToolCalls,
    ResponseToolCalls,
    ToolArgument,
    arguments_of,
    chat_tool_arguments,
    message_tool_arguments,
    opinion_sources,
    response_tool_arguments,
    with_tool_lines,
)

BIASED = "Women are too emotional to lead."


def lines(found: list[ToolArgument]) -> list[str]:
    return [argument.line() for argument in found]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"body": "Hi"}', ["Tool t, argument body: Hi"]),
        ({"body": "Hi"}, ["Tool t, argument body: Hi"]),  # Messages' decoded `input`
        (
            '{"to": {"name": "Ann", "cc": ["Bo", "Cy"]}, "n": 3, "ok": true, "x": null}',
            [
                "Tool t, argument to.name: Ann",
                "Tool t, argument to.cc[0]: Bo",
                "Tool t, argument to.cc[1]: Cy",
            ],
        ),
        ('["a", {"b": "c"}]', ["Tool t, argument [0]: a", "Tool t, argument [1].b: c"]),
        ('"just text"', ["Tool t, arguments: just text"]),
        ("send it: " + BIASED, [f"Tool t, arguments: send it: {BIASED}"]),  # not JSON
        ('{"body": "Wom', ['Tool t, arguments: {"body": "Wom']),  # a call cut short
        ('{"body": "  ", "other": ""}', []),  # blank values say nothing
        ("", []),
        ("{}", []),
        (None, []),
        (42, []),
    ],
)
def test_arguments_of_gives_a_line_per_string_value(arguments: Any, expected: list[str]) -> None:
    assert lines(arguments_of("t", arguments)) == expected


def test_a_call_without_a_name_is_still_read() -> None:
    assert lines(arguments_of(None, '{"a": "b"}')) == ["Tool (unnamed), argument a: b"]


def test_deeply_nested_arguments_are_read_without_recursion() -> None:
    deep: Any = BIASED
    for _ in range(5000):
        deep = {"k": deep}
    found = arguments_of("t", deep)
    assert [argument.value for argument in found] == [BIASED]
    assert found[0].argument.startswith("k.k.k")
    assert found[0].argument.endswith("…")
    assert len(found[0].argument) < 100  # past the depth bound, the path stops growing


def test_arguments_nested_past_what_json_parses_are_judged_raw() -> None:
    text = '{"k": ' * 100_000 + '"x"' + "}" * 100_000
    assert [argument.argument for argument in arguments_of("t", text)] == [""]


def test_with_tool_lines_appends_after_the_last_text() -> None:
    found = [ToolArgument("send", "body", BIASED), ToolArgument("send", "to", "all")]
    both = f"Tool send, argument body: {BIASED}\nTool send, argument to: all"
    assert with_tool_lines(["One.", "Two."], found) == ["One.", f"Two.\n\n{both}"]
    assert with_tool_lines([], found) == [both]
    assert with_tool_lines(["One."], []) == ["One."]


def test_chat_tool_calls_and_the_legacy_function_call_are_read() -> None:
    completion = {
        "choices": [
            {
                "message": {
                    "content": "Sending.",
                    "tool_calls": [
                        {"type": "function", "function": {"name": "a", "arguments": '{"x": "1"}'}},
                        "not a call",
                        {"type": "function", "function": None},
                    ],
                }
            },
            {"message": {"content": None, "function_call": {"name": "b", "arguments": "{}"}}},
            {"message": {"function_call": {"name": "c", "arguments": '{"y": "2"}'}}},
            "not a choice",
        ]
    }
    assert lines(chat_tool_arguments(completion)) == [
        "Tool a, argument x: 1",
        "Tool c, argument y: 2",
    ]
    assert chat_tool_arguments({"choices": None}) == []


def test_responses_function_call_items_are_read() -> None:
    response = {
        "output": [
            {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]},
            {"type": "function_call", "name": "send", "arguments": json.dumps({"b": BIASED})},
            {"type": "custom_tool_call", "name": "shell", "input": "echo hi"},
            {"type": "reasoning", "summary": []},
        ]
    }
    assert lines(response_tool_arguments(response)) == [
        f"Tool send, argument b: {BIASED}",
        "Tool shell, arguments: echo hi",
    ]


def test_messages_tool_use_input_is_read() -> None:
    message = {
        "content": [
            {"type": "text", "text": "Sending."},
            {"type": "tool_use", "id": "toolu_1", "name": "send", "input": {"b": BIASED}},
            {"type": "thinking", "thinking": "hm"},
        ]
    }
    assert lines(message_tool_arguments(message)) == [f"Tool send, argument b: {BIASED}"]


def test_a_responses_stream_builds_its_calls_from_deltas_or_the_done_text() -> None:
    calls = ResponseToolCalls()
    assert not calls.started
    item = {"type": "function_call", "name": "send", "arguments": ""}
    calls.take("response.output_item.added", 1, {"item": item})
    assert calls.started
    calls.take("response.output_item.added", 0, {"item": {"type": "message"}})
    for piece in ('{"b": "', "Hi", ' all"}'):
        calls.take("response.function_call_arguments.delta", 1, {"delta": piece})
    assert lines(calls.arguments()) == ["Tool send, argument b: Hi all"]
    # A server that sends the text whole: the `done` event's text stands.
    calls.take("response.function_call_arguments.done", 1, {"arguments": '{"b": "Bye"}'})
    calls.take("response.function_call_arguments.delta", None, {"delta": "ignored"})
    assert lines(calls.arguments()) == ["Tool send, argument b: Bye"]


def test_a_responses_stream_reads_a_custom_tools_input() -> None:
    calls = ResponseToolCalls()
    item = {"type": "custom_tool_call", "name": "shell", "input": ""}
    calls.take("response.output_item.added", 0, {"item": item})
    for piece in ("echo ", "hi"):
        calls.take("response.custom_tool_call_input.delta", 0, {"delta": piece})
    assert lines(calls.arguments()) == ["Tool shell, arguments: echo hi"]
    done = {**item, "input": "echo bye"}
    calls.take("response.output_item.done", 0, {"item": done})
    assert lines(calls.arguments()) == ["Tool shell, arguments: echo bye"]


def test_a_messages_stream_builds_its_input_from_partial_json() -> None:
    calls = MessageToolCalls()
    text = {"type": "text", "text": ""}
    calls.take("content_block_start", 0, {"content_block": text})
    calls.take("content_block_delta", 0, {"delta": {"type": "text_delta", "text": "Hi"}})
    assert not calls.started
    block = {"type": "tool_use", "name": "send", "input": {}}
    calls.take("content_block_start", 1, {"content_block": block})
    assert calls.started
    for piece in ('{"b": "Wo', 'men"}'):
        delta = {"type": "input_json_delta", "partial_json": piece}
        calls.take("content_block_delta", 1, {"delta": delta})
    assert lines(calls.arguments()) == ["Tool send, argument b: Women"]


def test_a_messages_block_with_its_whole_input_at_start_is_read() -> None:
    calls = MessageToolCalls()
    block = {"type": "tool_use", "name": "send", "input": {"b": "Hi"}}
    calls.take("content_block_start", 0, {"content_block": block})
    assert lines(calls.arguments()) == ["Tool send, argument b: Hi"]


def test_opinion_sources_tell_tool_arguments_from_text() -> None:
    found = [ToolArgument("send", "to", "team"), ToolArgument("send", "body", BIASED)]
    opinions = [BIASED.rstrip("."), "body: " + BIASED, "The team ships on time.", ""]
    assert opinion_sources(opinions, found) == ["tool_argument", "tool_argument", "text", "text"]


def test_the_tool_call_hold_caps_releases_at_the_first_call() -> None:
    hold = ToolCallHold()
    assert hold.cap(5) == 5
    hold.see(False, 5)
    hold.see(True, 6)
    hold.see(True, 9)  # the first call's place stands
    assert (hold.at, hold.cap(4), hold.cap(12)) == (6, 4, 6)
    off = ToolCallHold(enabled=False)
    off.see(True, 0)
    assert off.cap(12) == 12
