"""Sample answers and streams of the four surfaces, as their real APIs send them, and
the helpers that feed them to a surface's reader and read rendered SSE back.

For the surface adapter tests (`tests/gateway/proxy/test_surface_*.py`): whole-answer
bodies per surface (`chat_body`, `completions_body`, `responses_body`,
`messages_body`), event sequences per surface (`chat_stream`, `completions_stream`,
`responses_stream`, `messages_stream`), and `STREAM_CASES`, one realistic stream per
surface with what its reader must make of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pytest

from gateway.proxy.surfaces import (
    ChatCompletions,
    Completions,
    Facts,
    Messages,
    Responses,
    StreamReader,
    Surface,
)
from gateway.wire.sse import DONE, SSEDecoder, SSEEvent

CHAT = ChatCompletions()
COMPLETIONS = Completions()
RESPONSES = Responses()
MESSAGES = Messages()

Event = tuple[str | None, str]  # an SSE event as a reader takes it: (`event:` name, `data:`)

CREATED = 1_700_000_000
CHAT_MODEL = "gpt-4o-mini-2024-07-18"
INSTRUCT_MODEL = "gpt-3.5-turbo-instruct"
RESPONSES_MODEL = "gpt-4o-2024-08-06"
CLAUDE_MODEL = "claude-sonnet-4-20250514"


def decode(raw: bytes) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events = decoder.feed(raw) + decoder.flush()
    assert not decoder.ignored_lines, "rendered bytes hold lines that are not SSE"
    return events


def feed(reader: StreamReader, events: Iterable[Event]) -> list[bool]:
    """What `add` returned for each event."""
    return [reader.add(name, data) for name, data in events]


def read_back(surface: Surface, raw: bytes) -> tuple[StreamReader, list[bool]]:
    """Rendered SSE bytes as a client sees them: decoded, then read by a fresh reader."""
    reader = surface.reader(max_chars=None)
    flags = feed(reader, [(event.event, event.data) for event in decode(raw)])
    return reader, flags


def terminal_only_last(flags: list[bool]) -> bool:
    return bool(flags) and flags == [False] * (len(flags) - 1) + [True]


# -- sample streams: what each API sends -------------------------------------------------


def chat_chunk(*choices: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-7",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": CHAT_MODEL,
        "system_fingerprint": "fp_44709d6fcb",
        "choices": list(choices),
        **fields,
    }


def chat_delta(index: int, finish_reason: str | None = None, **delta: Any) -> dict[str, Any]:
    return {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}


def chat_stream(
    *choices: list[str], finish: tuple[str, ...] = ("stop", "length"), usage: bool = True
) -> list[Event]:
    """One choice per argument (its deltas), streamed highest index first and interleaved,
    as OpenAI does for `n` > 1, after Azure's blank prompt-filter chunk."""
    order = list(reversed(range(len(choices))))
    chunks: list[dict[str, Any]] = [
        {"id": "", "object": "", "created": 0, "model": "", "choices": []},
    ]
    chunks += [chat_chunk(chat_delta(i, role="assistant", content="")) for i in order]
    for step in range(max(map(len, choices), default=0)):
        chunks += [
            chat_chunk(chat_delta(i, content=choices[i][step]))
            for i in order
            if step < len(choices[i])
        ]
    chunks += [chat_chunk(chat_delta(i, finish_reason=finish[i])) for i in order]
    if usage:
        tokens = {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}
        chunks.append(chat_chunk(usage=tokens))
    events: list[Event] = [(None, json.dumps(chunk)) for chunk in chunks]
    return [*events, (None, DONE)]


def cmpl_chunk(*choices: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "id": "cmpl-9",
        "object": "text_completion",
        "created": CREATED,
        "model": INSTRUCT_MODEL,
        "choices": list(choices),
        **fields,
    }


def cmpl_choice(index: int, text: str, finish_reason: str | None = None) -> dict[str, Any]:
    return {"text": text, "index": index, "logprobs": None, "finish_reason": finish_reason}


def completions_stream(
    *choices: list[str], finish: tuple[str, ...] = ("stop", "length")
) -> list[Event]:
    order = list(reversed(range(len(choices))))
    chunks: list[dict[str, Any]] = []
    for step in range(max(map(len, choices), default=0)):
        chunks += [
            cmpl_chunk(cmpl_choice(i, choices[i][step])) for i in order if step < len(choices[i])
        ]
    chunks += [cmpl_chunk(cmpl_choice(i, "", finish[i])) for i in order]
    usage = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
    chunks.append(cmpl_chunk(usage=usage))
    events: list[Event] = [(None, json.dumps(chunk)) for chunk in chunks]
    return [*events, (None, DONE)]


def named(events: list[dict[str, Any]]) -> list[Event]:
    """Responses and Anthropic events: each carries an `event:` name equal to its `type`."""
    return [(event["type"], json.dumps(event)) for event in events]


def response_object(status: str, output: list[Any], **fields: Any) -> dict[str, Any]:
    return {
        "id": "resp_67ccd2bed1ec8190",
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": RESPONSES_MODEL,
        "output": output,
        "usage": None,
        **fields,
    }


def output_message(item_id: str, text: str | None) -> dict[str, Any]:
    content = [] if text is None else [{"type": "output_text", "text": text, "annotations": []}]
    return {
        "type": "message",
        "id": item_id,
        "status": "in_progress" if text is None else "completed",
        "role": "assistant",
        "content": content,
    }


REASONING_ITEM = {"type": "reasoning", "id": "rs_1", "summary": []}
FUNCTION_CALL_ITEM = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city": "Paris"}',
    "status": "completed",
}


def responses_stream(
    *items: list[str] | dict[str, Any],
    deltas: bool = True,
    terminal: str = "response.completed",
    status: str = "completed",
) -> list[Event]:
    """One output item per argument: a list of strings is a message streamed in those
    deltas, a dict another item (reasoning, a function call) passed as it is."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response_object("in_progress", [])},
        {"type": "response.in_progress", "response": response_object("in_progress", [])},
    ]
    done_items = []
    for index, item in enumerate(items):
        if isinstance(item, dict):
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": item}
            )
            events.append(
                {"type": "response.output_item.done", "output_index": index, "item": item}
            )
            done_items.append(item)
            continue
        item_id, text = f"msg_{index}", "".join(item)
        at = {"item_id": item_id, "output_index": index, "content_index": 0}
        part = {"type": "output_text", "text": "", "annotations": []}
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": output_message(item_id, None),
            }
        )
        events.append({"type": "response.content_part.added", **at, "part": part})
        if deltas:
            events += [
                {"type": "response.output_text.delta", **at, "delta": piece, "logprobs": []}
                for piece in item
            ]
        events.append({"type": "response.output_text.done", **at, "text": text, "logprobs": []})
        events.append({"type": "response.content_part.done", **at, "part": {**part, "text": text}})
        message = output_message(item_id, text)
        events.append({"type": "response.output_item.done", "output_index": index, "item": message})
        done_items.append(message)
    usage = {
        "input_tokens": 36,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 87,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 123,
    }
    events.append({"type": terminal, "response": response_object(status, done_items, usage=usage)})
    return named([{**event, "sequence_number": n} for n, event in enumerate(events)])


TOOL_USE_BLOCK = {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {}}
THINKING_BLOCK = {"type": "thinking", "thinking": "", "signature": ""}


def messages_stream(
    *blocks: list[str] | dict[str, Any], stop_reason: str = "end_turn"
) -> list[Event]:
    """One content block per argument: a list of strings is a text block streamed in those
    deltas, a dict another block (tool_use, thinking) with a delta of its own kind."""
    message: dict[str, Any] = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": CLAUDE_MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}, {"type": "ping"}]
    for index, block in enumerate(blocks):
        if isinstance(block, dict):
            other = (
                {"type": "input_json_delta", "partial_json": '{"city": "Paris"}'}
                if block["type"] == "tool_use"
                else {"type": "thinking_delta", "thinking": "Let me think."}
            )
            events.append({"type": "content_block_start", "index": index, "content_block": block})
            events.append({"type": "content_block_delta", "index": index, "delta": other})
        else:
            start = {"type": "text", "text": ""}
            events.append({"type": "content_block_start", "index": index, "content_block": start})
            events += [
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                }
                for piece in block
            ]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 15},
        }
    )
    events.append({"type": "message_stop"})
    return named(events)


@dataclass(frozen=True)
class StreamCase:
    """A realistic stream of one surface and what its reader must make of it."""

    surface: Surface
    events: list[Event]
    texts: list[str]
    facts: Facts


STREAM_CASES = {
    "chat": StreamCase(
        CHAT,
        chat_stream(["Hel", "lo ", "world"], ["Bon", "jour"]),
        ["Hello world", "Bonjour"],
        Facts("chatcmpl-7", CHAT_MODEL, ["stop", "length"], 12, 9),
    ),
    "completions": StreamCase(
        COMPLETIONS,
        completions_stream(["Hel", "lo ", "world"], ["Bon", "jour"]),
        ["Hello world", "Bonjour"],
        Facts("cmpl-9", INSTRUCT_MODEL, ["stop", "length"], 5, 7),
    ),
    "responses": StreamCase(
        RESPONSES,
        responses_stream(REASONING_ITEM, ["Hel", "lo ", "world"], FUNCTION_CALL_ITEM, ["Bye"]),
        ["Hello world", "Bye"],
        Facts("resp_67ccd2bed1ec8190", RESPONSES_MODEL, ["completed"], 36, 87),
    ),
    "messages": StreamCase(
        MESSAGES,
        messages_stream(THINKING_BLOCK, ["Hel", "lo ", "world"], TOOL_USE_BLOCK, ["Bye"]),
        ["Hello world\nBye"],
        Facts("msg_01XFDUDYJgAACzvnptvVoYEL", CLAUDE_MODEL, ["end_turn"], 25, 15),
    ),
}
EVERY_STREAM = pytest.mark.parametrize("case", list(STREAM_CASES.values()), ids=list(STREAM_CASES))


def fed_reader(case: StreamCase) -> tuple[StreamReader, list[SSEEvent]]:
    """A reader that read the whole case, and the events it held back."""
    reader = case.surface.reader(max_chars=None)
    held = [SSEEvent(data, event=name) for name, data in case.events if reader.add(name, data)]
    return reader, held


# -- whole answers: what each API sends ------------------------------------------------


def chat_body(*choices: object, **fields: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": CREATED,
        "model": CHAT_MODEL,
        "choices": list(choices),
        "usage": {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29},
        "system_fingerprint": "fp_44709d6fcb",
        **fields,
    }


def chat_choice(index: int | None, content: object, finish: str | None = "stop") -> dict[str, Any]:
    choice: dict[str, Any] = {
        "message": {"role": "assistant", "content": content, "refusal": None},
        "logprobs": None,
        "finish_reason": finish,
    }
    if index is not None:
        choice["index"] = index
    return choice


TOOL_CALL_CHOICE = {
    "index": 0,
    "message": {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    "finish_reason": "tool_calls",
}


def completions_body(*choices: object, **fields: Any) -> dict[str, Any]:
    return {
        "id": "cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7",
        "object": "text_completion",
        "created": CREATED,
        "model": INSTRUCT_MODEL,
        "choices": list(choices),
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
        **fields,
    }


def responses_body(*output: object, **fields: Any) -> dict[str, Any]:
    usage = {
        "input_tokens": 36,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 87,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 123,
    }
    return {**response_object("completed", list(output), usage=usage), **fields}


def message_parts(item_id: str, *parts: object) -> dict[str, Any]:
    return {**output_message(item_id, None), "status": "completed", "content": list(parts)}


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def messages_body(*content: object, **fields: Any) -> dict[str, Any]:
    return {
        "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
        "type": "message",
        "role": "assistant",
        "model": CLAUDE_MODEL,
        "content": list(content),
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 2095, "output_tokens": 503},
        **fields,
    }


def text_block(text: object) -> dict[str, Any]:
    return {"type": "text", "text": text}
