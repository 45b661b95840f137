"""Each surface's stream reader fed what its real API sends (SSE event sequences) and what
a broken or hostile one might: the texts read, the terminal event found, the facts,
`max_chars` kept, and a foreign event making the stream unreadable.
Pure code: no gateway, no I/O.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.proxy.surfaces import Facts, Surface
from gateway.wire.sse import DONE
from tests.support.surface_samples import (
    CHAT,
    COMPLETIONS,
    EVERY_STREAM,
    FUNCTION_CALL_ITEM,
    MESSAGES,
    REASONING_ITEM,
    RESPONSES,
    THINKING_BLOCK,
    TOOL_USE_BLOCK,
    Event,
    StreamCase,
    chat_chunk,
    chat_delta,
    chat_stream,
    cmpl_chunk,
    completions_stream,
    feed,
    messages_stream,
    named,
    responses_stream,
    terminal_only_last,
    text_block,
)

# -- per surface -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "texts", "finish"),
    [
        (chat_stream(["Hi"]), ["Hi"], ["stop"]),
        (
            chat_stream(["a", "b"], ["c"], ["d", "e", "f"], finish=("stop",) * 3),
            ["ab", "c", "def"],
            ["stop"] * 3,
        ),
        (chat_stream([], ["only"]), ["only"], ["stop", "length"]),
        (chat_stream([]), [], ["stop"]),
        (chat_stream(["x"], usage=False), ["x"], ["stop"]),
    ],
    ids=["one", "three-choices", "first-empty", "no-text", "no-usage"],
)
def test_chat_stream_texts(events: list[Event], texts: list[str], finish: list[str]) -> None:
    reader = CHAT.reader(max_chars=None)

    flags = feed(reader, events)

    assert terminal_only_last(flags)
    assert reader.texts() == texts
    assert reader.facts().finish_reasons == finish
    assert reader.readable
    assert not reader.truncated


def test_chat_stream_tool_call_deltas_carry_no_text() -> None:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f"}}
    events = [
        (None, json.dumps(chat_chunk(chat_delta(0, role="assistant", content=None)))),
        (None, json.dumps(chat_chunk(chat_delta(0, tool_calls=[call])))),
        (None, json.dumps(chat_chunk(chat_delta(0, "tool_calls")))),
        (None, DONE),
    ]
    reader = CHAT.reader(max_chars=None)

    assert terminal_only_last(feed(reader, events))
    assert reader.texts() == []
    assert reader.readable
    assert reader.facts().finish_reasons == ["tool_calls"]


@pytest.mark.parametrize(
    ("events", "texts"),
    [
        (completions_stream(["Hi"], finish=("stop",)), ["Hi"]),
        (completions_stream(["a", "b"], ["c"], ["d"], finish=("stop",) * 3), ["ab", "c", "d"]),
        (completions_stream([], ["only"]), ["only"]),
        (completions_stream([], finish=("stop",)), []),
    ],
    ids=["one", "three-choices", "first-empty", "no-text"],
)
def test_completions_stream_texts(events: list[Event], texts: list[str]) -> None:
    reader = COMPLETIONS.reader(max_chars=None)

    assert terminal_only_last(feed(reader, events))
    assert reader.texts() == texts
    assert reader.readable


@pytest.mark.parametrize(
    "chunk",
    [{"id": "cmpl-1", "object": "text_completion"}, cmpl_chunk(choices={"text": "x"})],
    ids=["no-choices", "choices-not-a-list"],
)
def test_completions_chunk_without_a_choice_list_is_unreadable(chunk: dict[str, Any]) -> None:
    reader = COMPLETIONS.reader(max_chars=None)

    assert reader.add(None, json.dumps(chunk)) is False
    assert not reader.readable


@pytest.mark.parametrize(
    "chunk",
    [{"id": "c1", "object": "chat.completion.chunk"}, {"choices": {"0": {"delta": "x"}}}],
    ids=["no-choices", "choices-not-a-list"],
)
def test_chat_chunk_without_a_choice_list_is_unreadable(chunk: dict[str, Any]) -> None:
    """Its text, if any, cannot be read, so an enforcing gateway may not take it for none."""
    reader = CHAT.reader(max_chars=None)

    assert reader.add(None, json.dumps(chunk)) is False
    assert not reader.readable


@pytest.mark.parametrize(
    ("terminal", "status"),
    [
        ("response.completed", "completed"),
        ("response.incomplete", "incomplete"),
        ("response.failed", "failed"),
    ],
)
def test_responses_stream_ends_with_each_terminal_event(terminal: str, status: str) -> None:
    events = responses_stream(["Hel", "lo"], terminal=terminal, status=status)
    reader = RESPONSES.reader(max_chars=None)

    flags = feed(reader, events[:-1])
    assert not any(flags)
    assert not reader.done
    assert reader.add(*events[-1]) is True

    assert reader.done
    assert reader.readable
    assert reader.texts() == ["Hello"]
    assert reader.facts().finish_reasons == [status]


@pytest.mark.parametrize(
    ("items", "texts"),
    [
        ((["Hello", " world"],), ["Hello world"]),
        ((REASONING_ITEM, ["a"], ["b", "c"], FUNCTION_CALL_ITEM), ["a", "bc"]),
        ((FUNCTION_CALL_ITEM,), []),
        (([], ["kept"]), ["kept"]),
    ],
    ids=["one", "several", "function-call-only", "empty-left-out"],
)
@pytest.mark.parametrize("deltas", [True, False], ids=["deltas", "done-only"])
def test_responses_stream_texts(
    items: tuple[list[str] | dict[str, Any], ...], texts: list[str], deltas: bool
) -> None:
    """A server that skips the deltas and sends only `output_text.done` still gives the text."""
    reader = RESPONSES.reader(max_chars=None)

    assert terminal_only_last(feed(reader, responses_stream(*items, deltas=deltas)))
    assert reader.texts() == texts
    assert reader.readable
    assert not reader.truncated


def test_responses_stream_done_text_is_clipped_too() -> None:
    reader = RESPONSES.reader(max_chars=5)
    feed(reader, responses_stream(["Hello world"], ["Bye"], deltas=False))

    assert reader.texts() == ["Hello", "Bye"]
    assert reader.truncated


def test_responses_stream_done_text_cut_is_known_before_texts_are_read() -> None:
    reader = RESPONSES.reader(max_chars=5)
    feed(reader, responses_stream(["Hello world"], deltas=False))

    assert reader.truncated


def test_responses_stream_event_without_a_type_is_unreadable() -> None:
    reader = RESPONSES.reader(max_chars=None)

    assert reader.add("response.output_text.delta", json.dumps({"delta": "x"})) is False
    assert not reader.readable


@pytest.mark.parametrize(
    ("blocks", "texts"),
    [
        ((["Hel", "lo"],), ["Hello"]),
        ((["a"], TOOL_USE_BLOCK, ["b", "c"]), ["a\nbc"]),
        ((THINKING_BLOCK, ["x"]), ["x"]),
        ((TOOL_USE_BLOCK,), []),
        ((), []),
    ],
    ids=["one", "tool-use-between", "thinking", "tool-use-only", "no-blocks"],
)
def test_messages_stream_texts(
    blocks: tuple[list[str] | dict[str, Any], ...], texts: list[str]
) -> None:
    reader = MESSAGES.reader(max_chars=None)

    assert terminal_only_last(feed(reader, messages_stream(*blocks)))
    assert reader.texts() == texts
    assert reader.readable


def test_messages_stream_takes_text_from_content_block_start() -> None:
    """A text block may open with text of its own, not only with ""."""
    events = named(
        [
            {"type": "content_block_start", "index": 0, "content_block": text_block("Hi ")},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "there"},
            },
            {"type": "message_stop"},
        ]
    )
    reader = MESSAGES.reader(max_chars=None)

    assert terminal_only_last(feed(reader, events))
    assert reader.texts() == ["Hi there"]


def test_messages_stream_event_without_a_type_is_unreadable() -> None:
    reader = MESSAGES.reader(max_chars=None)

    assert reader.add("content_block_delta", json.dumps({"index": 0})) is False
    assert not reader.readable


# -- what every stream reader shares ----------------------------------------------------


@EVERY_STREAM
def test_stream_reader_reads_a_whole_stream(case: StreamCase) -> None:
    reader = case.surface.reader(max_chars=None)
    flags = []
    for name, data in case.events:
        assert not reader.done
        flags.append(reader.add(name, data))

    assert terminal_only_last(flags)
    assert reader.done
    assert reader.readable
    assert not reader.truncated
    assert reader.texts() == case.texts
    assert reader.facts() == case.facts


@EVERY_STREAM
def test_stream_reader_facts_are_known_from_the_opening_event(case: StreamCase) -> None:
    reader = case.surface.reader(max_chars=None)
    feed(reader, case.events[:3])

    facts = reader.facts()
    assert (facts.response_id, facts.model) == (case.facts.response_id, case.facts.model)


BAD_DATA = [
    pytest.param(None, "not json", id="not-json"),
    pytest.param(None, "{'type': 'ping'}", id="python-repr"),
    pytest.param(None, '{"choices": [', id="cut-json"),
    pytest.param(None, "[1, 2]", id="json-array"),
    pytest.param(None, '"text"', id="json-string"),
    pytest.param(None, "42", id="json-number"),
    pytest.param(None, "null", id="json-null"),
    pytest.param(
        None, '{"error": {"message": "overloaded", "type": "server_error"}}', id="error-key"
    ),
    pytest.param(
        "error",
        '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
        id="error-event",
    ),
    pytest.param(
        "error",
        '{"type": "error", "code": "server_error", "message": "boom", "sequence_number": 3}',
        id="type-error",
    ),
]


@EVERY_STREAM
@pytest.mark.parametrize(("name", "data"), BAD_DATA)
def test_stream_reader_is_unreadable_after_a_foreign_event(
    case: StreamCase, name: str | None, data: str
) -> None:
    reader = case.surface.reader(max_chars=None)
    feed(reader, case.events[:3])
    assert reader.readable

    assert reader.add(name, data) is False
    assert not reader.readable
    assert not reader.done

    feed(reader, case.events[3:])  # the rest of a good stream does not make up for it
    assert not reader.readable
    assert reader.done


@EVERY_STREAM
def test_stream_reader_keeps_an_empty_stream_readable(case: StreamCase) -> None:
    reader = case.surface.reader(max_chars=None)

    assert reader.readable
    assert not reader.done
    assert reader.texts() == []
    assert reader.facts() == Facts()


TRUNCATION_CASES = (
    [
        pytest.param(surface, events, max_chars, texts, truncated, id=f"{name}-{max_chars}")
        for name, surface, events in [
            ("chat", CHAT, chat_stream(["Hello", " world"], ["Bon", "jour"])),
            ("completions", COMPLETIONS, completions_stream(["Hello", " world"], ["Bon", "jour"])),
            (
                "responses",
                RESPONSES,
                responses_stream(REASONING_ITEM, ["Hello", " world"], ["Bon", "jour"]),
            ),
        ]
        for max_chars, texts, truncated in [
            (None, ["Hello world", "Bonjour"], False),
            (100, ["Hello world", "Bonjour"], False),
            (11, ["Hello world", "Bonjour"], False),
            (10, ["Hello worl", "Bonjour"], True),
            (7, ["Hello w", "Bonjour"], True),
            (5, ["Hello", "Bonjo"], True),
            (3, ["Hel", "Bon"], True),
            (1, ["H", "B"], True),
        ]
    ]
    + [
        pytest.param(
            MESSAGES, messages_stream(["Hello", " world"]), n, texts, cut, id=f"messages-{n}"
        )
        for n, texts, cut in [
            (None, ["Hello world"], False),
            (11, ["Hello world"], False),
            (8, ["Hello wo"], True),
            (5, ["Hello"], True),
            (1, ["H"], True),
        ]
    ]
    + [
        pytest.param(
            MESSAGES,
            messages_stream(["Hello", " world"], TOOL_USE_BLOCK, ["Bye"]),
            n,
            texts,
            cut,
            id=f"messages-blocks-{n}",
        )
        for n, texts, cut in [
            (None, ["Hello world\nBye"], False),
            (100, ["Hello world\nBye"], False),
        ]
    ]
    + [
        pytest.param(
            MESSAGES,
            messages_stream(["Hello", " world"], TOOL_USE_BLOCK, ["Bye"]),
            n,
            texts,
            True,
            id=f"messages-blocks-{n}",
        )
        for n, texts in [(5, ["Hello"]), (13, ["Hello world\nB"])]
    ]
)


@pytest.mark.parametrize(("surface", "events", "max_chars", "texts", "truncated"), TRUNCATION_CASES)
def test_stream_reader_keeps_at_most_max_chars(
    surface: Surface,
    events: list[Event],
    max_chars: int | None,
    texts: list[str],
    truncated: bool,
) -> None:
    """Per choice or output message for OpenAI's APIs, in total for Anthropic's."""
    reader = surface.reader(max_chars=max_chars)

    assert terminal_only_last(feed(reader, events))
    assert reader.texts() == texts
    assert reader.truncated is truncated
    assert reader.readable
