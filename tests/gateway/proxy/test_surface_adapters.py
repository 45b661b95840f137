"""The surface adapters (`gateway.proxy.surfaces`) and `decide`, as pure code: no gateway, no I/O.

Each surface is fed what its real API sends (request bodies, whole answers, SSE
event sequences) and what a broken or hostile one might. Rendered output (a
replacement, a refusal stream, a trailer, an error frame) is decoded with
`gateway.wire.sse.SSEDecoder` and read back with a fresh reader of the same surface,
as a client would read it.

Sections: helpers and sample streams; parsing; whole answers and streams per
surface (chat, completions, responses, messages); what every stream reader
shares; rendering; `decide`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from gateway.config import Policy
from gateway.domain import PolicyVerdict, Status
from gateway.errors import BadRequest, PayloadTooLarge, unreadable_error
from gateway.proxy.decisions import DELIVER, REPLACE, Refusal, bias_details, block_refusal, decide
from gateway.proxy.surfaces import (
    SURFACES,
    ChatCompletions,
    Completions,
    Facts,
    Messages,
    Responses,
    StreamReader,
    Surface,
)
from gateway.proxy.surfaces.base import held_with_bias
from gateway.scoring.outcome import Outcome
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

POLICY = Policy(mode="enforce")
# A refusal text with a line break and non-ASCII characters: SSE framing must keep it whole.
ODD_POLICY = Policy(mode="enforce", refusal_text="Not shown: blocked.\nSorry — ✋ «policy»")


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


# -- parsing requests -------------------------------------------------------------------

MISSING = object()

VALID_BODIES: dict[str, tuple[Surface, dict[str, Any]]] = {
    "chat": (CHAT, {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}),
    "completions": (COMPLETIONS, {"model": INSTRUCT_MODEL, "prompt": "Say hi"}),
    "responses": (RESPONSES, {"model": "gpt-4o", "input": "Tell me a story."}),
    "messages": (
        MESSAGES,
        {
            "model": CLAUDE_MODEL,
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": "Hello, Claude"}],
        },
    ),
}


def changed(body: Mapping[str, Any], **changes: Any) -> bytes:
    """`body` with fields set (or, for MISSING, removed), as JSON bytes."""
    new = {key: value for key, value in body.items() if changes.get(key) is not MISSING}
    new.update({key: value for key, value in changes.items() if value is not MISSING})
    return json.dumps(new).encode()


@pytest.mark.parametrize(
    ("surface", "fields", "model", "stream"),
    [
        (CHAT, {}, "gpt-4o-mini", False),
        (CHAT, {"stream": True}, "gpt-4o-mini", True),
        (CHAT, {"stream": False}, "gpt-4o-mini", False),
        (CHAT, {"stream": None}, "gpt-4o-mini", False),
        (CHAT, {"n": 3, "stream": True}, "gpt-4o-mini", True),
        (CHAT, {"n": None}, "gpt-4o-mini", False),
        (CHAT, {"model": "my-org/llama-3.1:8b"}, "my-org/llama-3.1:8b", False),
        # A surrogate *pair*, escaped as JSON does, is one valid character.
        (CHAT, {"model": "gpt-\U0001f600"}, "gpt-\U0001f600", False),
        (CHAT, {"messages": [{"role": "system", "content": "x"}, {}]}, "gpt-4o-mini", False),
        (COMPLETIONS, {}, INSTRUCT_MODEL, False),
        (COMPLETIONS, {"stream": True}, INSTRUCT_MODEL, True),
        (COMPLETIONS, {"prompt": ["one", "two"], "n": 2}, INSTRUCT_MODEL, False),
        (COMPLETIONS, {"prompt": [[1, 2, 3]]}, INSTRUCT_MODEL, False),  # token ids
        (COMPLETIONS, {"prompt": ""}, INSTRUCT_MODEL, False),
        (RESPONSES, {}, "gpt-4o", False),
        (RESPONSES, {"stream": True}, "gpt-4o", True),
        (RESPONSES, {"input": [{"role": "user", "content": "Hi"}]}, "gpt-4o", False),
        (RESPONSES, {"input": MISSING, "previous_response_id": "resp_1"}, "gpt-4o", False),
        (RESPONSES, {"background": False, "stream": True}, "gpt-4o", True),
        (RESPONSES, {"n": "ignored"}, "gpt-4o", False),  # Responses has no `n`
        (MESSAGES, {}, CLAUDE_MODEL, False),
        (MESSAGES, {"stream": True}, CLAUDE_MODEL, True),
        (MESSAGES, {"system": "Be brief.", "stream": False}, CLAUDE_MODEL, False),
    ],
    ids=lambda value: value.name if isinstance(value, Surface) else None,
)
def test_parse_reads_model_and_stream(
    surface: Surface, fields: dict[str, Any], model: str, stream: bool
) -> None:
    base = next(body for s, body in VALID_BODIES.values() if s is surface)
    raw = changed(base, **fields)

    request = surface.parse(raw)

    assert (request.model, request.stream) == (model, stream)
    assert request.body == json.loads(raw)
    assert request.raw is raw


BAD_FOR_EVERY_SURFACE: list[tuple[dict[str, Any], str]] = [
    ({"model": MISSING}, "model"),
    ({"model": ""}, "model"),
    ({"model": None}, "model"),
    ({"model": 42}, "model"),
    ({"model": True}, "model"),
    ({"model": ["gpt-4o"]}, "model"),
    ({"model": {"name": "gpt-4o"}}, "model"),
    # json.dumps escapes these lone surrogates as `\ud800`, valid JSON but not valid text.
    ({"model": "\ud800"}, "model"),
    ({"model": "gpt-4o\udfff"}, "model"),
    ({"stream": "true"}, "stream"),
    ({"stream": 1}, "stream"),
    ({"stream": 0}, "stream"),
    ({"stream": []}, "stream"),
    ({"stream": {"include_usage": True}}, "stream"),
]
BAD_FOR_SURFACE: dict[str, list[tuple[dict[str, Any], str]]] = {
    "chat": [
        ({"n": 0}, "n"),
        ({"n": -1}, "n"),
        ({"n": 1.5}, "n"),
        ({"n": "2"}, "n"),
        ({"n": True}, "n"),
        ({"messages": MISSING}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": None}, "messages"),
        ({"messages": "Hi"}, "messages"),
        ({"messages": {"role": "user", "content": "Hi"}}, "messages"),
        ({"messages": ["Hi"]}, "messages"),
        ({"messages": [{"role": "user", "content": "Hi"}, None]}, "messages"),
        ({"messages": [[{"role": "user"}]]}, "messages"),
    ],
    "completions": [
        ({"n": 0}, "n"),
        ({"n": 2.0}, "n"),
        ({"n": False}, "n"),
        ({"prompt": MISSING}, "prompt"),
        ({"prompt": None}, "prompt"),
        ({"prompt": 42}, "prompt"),
        ({"prompt": {"text": "Hi"}}, "prompt"),
        ({"prompt": []}, "prompt"),
    ],
    "responses": [
        ({"input": 42}, "input"),
        ({"input": None}, "input"),
        ({"input": {"role": "user", "content": "Hi"}}, "input"),
        ({"input": True}, "input"),
        ({"background": True}, "background"),
        ({"background": True, "stream": True}, "background"),
    ],
    "messages": [
        ({"messages": MISSING}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": "Hello"}, "messages"),
        ({"messages": {"role": "user"}}, "messages"),
        ({"messages": [{"role": "user", "content": "Hi"}, "Hi"]}, "messages"),
        ({"messages": [1]}, "messages"),
    ],
}
BAD_FIELD_CASES = [
    pytest.param(name, fields, param, id=f"{name}-{param}-{index}")
    for name in VALID_BODIES
    for index, (fields, param) in enumerate(BAD_FOR_EVERY_SURFACE + BAD_FOR_SURFACE[name])
]


@pytest.mark.parametrize(("name", "fields", "param"), BAD_FIELD_CASES)
def test_parse_names_the_bad_field(name: str, fields: dict[str, Any], param: str) -> None:
    surface, base = VALID_BODIES[name]

    with pytest.raises(BadRequest) as caught:
        surface.parse(changed(base, **fields))

    assert caught.value.param == param
    assert f"`{param}" in caught.value.message


@pytest.mark.parametrize("name", list(VALID_BODIES))
@pytest.mark.parametrize(
    "model_json", [b'"\\ud800"', b'"\\udc00x"', b'"gpt-4o\\udbff"'], ids=["high", "low", "tail"]
)
def test_parse_refuses_a_lone_surrogate_escaped_in_the_raw_json(
    name: str, model_json: bytes
) -> None:
    surface, base = VALID_BODIES[name]
    rest = json.dumps({k: v for k, v in base.items() if k != "model"}).encode()
    raw = b'{"model": ' + model_json + b", " + rest[1:]
    with pytest.raises(UnicodeEncodeError):  # valid JSON, but no valid text
        json.loads(raw)["model"].encode()

    with pytest.raises(BadRequest) as caught:
        surface.parse(raw)

    assert caught.value.param == "model"


@pytest.mark.parametrize("surface", SURFACES, ids=lambda surface: surface.name)
@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"", "not valid JSON"),
        (b"not json", "not valid JSON"),
        (b'{"model": "gpt-4o",', "not valid JSON"),
        (b"\xff\xfe{}", "not valid JSON"),
        (b"{'model': 'gpt-4o'}", "not valid JSON"),
        (b"[]", "must be a JSON object"),
        (b'[{"model": "gpt-4o"}]', "must be a JSON object"),
        (b'"gpt-4o"', "must be a JSON object"),
        (b"42", "must be a JSON object"),
        (b"null", "must be a JSON object"),
        (b"true", "must be a JSON object"),
    ],
)
def test_parse_refuses_a_body_that_is_not_a_json_object(
    surface: Surface, raw: bytes, problem: str
) -> None:
    with pytest.raises(BadRequest) as caught:
        surface.parse(raw)

    assert caught.value.param is None
    assert problem in caught.value.message


# -- chat completions --------------------------------------------------------------------


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


@pytest.mark.parametrize(
    ("body", "texts"),
    [
        (chat_body(chat_choice(0, "Hello there.")), ["Hello there."]),
        # Index order, not list order.
        (
            chat_body(chat_choice(2, "third"), chat_choice(0, "first"), chat_choice(1, "second")),
            ["first", "second", "third"],
        ),
        # Without an index, the list position stands in.
        (chat_body(chat_choice(None, "a"), chat_choice(None, "b")), ["a", "b"]),
        (
            chat_body(
                chat_choice(
                    0,
                    [
                        {"type": "text", "text": "Hel"},
                        {"type": "image_url", "image_url": {"url": "x"}},
                        {"type": "text", "text": "lo"},
                    ],
                )
            ),
            ["Hello"],
        ),
        (chat_body(chat_choice(0, ""), chat_choice(1, "only")), ["only"]),
        (chat_body(TOOL_CALL_CHOICE), []),
        (chat_body(chat_choice(0, None)), []),
        (chat_body(chat_choice(0, [])), []),
        (chat_body(), []),
        (
            chat_body(
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "refusal": "I can't."},
                    "finish_reason": "stop",
                }
            ),
            [],
        ),
    ],
    ids=[
        "one",
        "index-order",
        "positions",
        "parts",
        "empty-left-out",
        "tool-calls",
        "null-content",
        "no-parts",
        "no-choices",
        "refusal-field",
    ],
)
def test_chat_texts(body: dict[str, Any], texts: list[str]) -> None:
    assert CHAT.readable(body)
    assert CHAT.texts(body) == texts


@pytest.mark.parametrize(
    "body",
    [
        None,
        "Hello",
        [chat_choice(0, "Hello")],
        {"id": "chatcmpl-1"},
        chat_body(choices={"0": chat_choice(0, "x")}),
        chat_body(choices="Hello"),
        chat_body(choices=None),
        chat_body("not a choice"),
        chat_body(chat_choice(0, "ok"), None),
        chat_body({"index": 0, "text": "completions shape"}),
        chat_body({"index": 0, "message": "Hello"}),
        chat_body(chat_choice(0, 42)),
        chat_body(chat_choice(0, {"text": "Hello"})),
    ],
)
def test_chat_malformed_answers_are_not_readable(body: object) -> None:
    assert not CHAT.readable(body)


@pytest.mark.parametrize(
    ("body", "facts"),
    [
        (
            chat_body(chat_choice(0, "a", "stop"), chat_choice(1, "b", "length")),
            Facts("chatcmpl-abc123", CHAT_MODEL, ["stop", "length"], 19, 10),
        ),
        (
            chat_body(chat_choice(0, "a", None), usage=None),
            Facts("chatcmpl-abc123", CHAT_MODEL, [], None, None),
        ),
        (
            chat_body(TOOL_CALL_CHOICE, id=12345, model=None, usage={"prompt_tokens": True}),
            Facts("12345", None, ["tool_calls"], None, None),
        ),
        (chat_body(id="", model=""), Facts(None, None, [], 19, 10)),
    ],
    ids=["two-choices", "no-usage", "odd-types", "blank-ids"],
)
def test_chat_facts(body: dict[str, Any], facts: Facts) -> None:
    assert CHAT.facts(body) == facts


@pytest.mark.parametrize("surface", [CHAT, COMPLETIONS], ids=["chat", "completions"])
def test_whole_answer_finish_reasons_follow_index_order(surface: Surface) -> None:
    if surface is CHAT:
        body = chat_body(chat_choice(1, "b", "length"), chat_choice(0, "a", "stop"))
    else:
        body = completions_body(cmpl_choice(1, "b", "length"), cmpl_choice(0, "a", "stop"))

    assert surface.texts(body) == ["a", "b"]
    assert surface.facts(body).finish_reasons == ["stop", "length"]


def test_two_chat_choices_with_one_index_keep_their_order() -> None:
    # A hostile upstream's answer (the property test found it): sorting the choices
    # by index must not compare the choices themselves.
    body = chat_body(chat_choice(0, "a", "stop"), chat_choice(0, "b", "length"))
    assert CHAT.facts(body).finish_reasons == ["stop", "length"]


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


# -- legacy completions ------------------------------------------------------------------


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


@pytest.mark.parametrize(
    ("body", "texts"),
    [
        (
            completions_body(cmpl_choice(0, "\n\nThis is a test.", "length")),
            ["\n\nThis is a test."],
        ),
        (
            completions_body(
                cmpl_choice(1, "second"), cmpl_choice(2, "third"), cmpl_choice(0, "first")
            ),
            ["first", "second", "third"],
        ),
        (completions_body({"text": "a"}, {"text": "b"}), ["a", "b"]),
        (completions_body(cmpl_choice(0, ""), cmpl_choice(1, "kept")), ["kept"]),
        (completions_body({"index": 0, "text": None, "finish_reason": "stop"}), []),
        (completions_body({"index": 0, "finish_reason": "stop"}), []),
        (completions_body(), []),
        (completions_body({"index": "0", "text": "no integer index"}), []),
    ],
    ids=[
        "one",
        "index-order",
        "positions",
        "empty-left-out",
        "null",
        "absent",
        "none",
        "bad-index",
    ],
)
def test_completions_texts(body: dict[str, Any], texts: list[str]) -> None:
    assert COMPLETIONS.readable(body)
    assert COMPLETIONS.texts(body) == texts


@pytest.mark.parametrize(
    "body",
    [
        None,
        ["text"],
        {"id": "cmpl-1"},
        completions_body(choices={"text": "x"}),
        completions_body(choices="Hello"),
        completions_body("Hello"),
        completions_body(cmpl_choice(0, "ok"), 7),
        completions_body({"index": 0, "text": 42}),
        completions_body({"index": 0, "text": ["Hel", "lo"]}),
        completions_body({"index": 0, "text": {"value": "Hello"}}),
    ],
)
def test_completions_malformed_answers_are_not_readable(body: object) -> None:
    assert not COMPLETIONS.readable(body)


@pytest.mark.parametrize(
    ("body", "facts"),
    [
        (
            completions_body(cmpl_choice(0, "a", "stop"), cmpl_choice(1, "b", "length")),
            Facts("cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7", INSTRUCT_MODEL, ["stop", "length"], 5, 7),
        ),
        (
            completions_body(cmpl_choice(0, "a"), usage="none", model=3.5),
            Facts("cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7", "3.5", [], None, None),
        ),
    ],
    ids=["usage", "odd-types"],
)
def test_completions_facts(body: dict[str, Any], facts: Facts) -> None:
    assert COMPLETIONS.facts(body) == facts


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


# -- responses ---------------------------------------------------------------------------


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


REFUSAL_PART = {"type": "refusal", "refusal": "I'm sorry, I can't help with that."}


@pytest.mark.parametrize(
    ("body", "texts"),
    [
        (responses_body(output_message("msg_1", "Hello there.")), ["Hello there."]),
        (
            responses_body(
                REASONING_ITEM,
                output_message("msg_1", "first"),
                FUNCTION_CALL_ITEM,
                output_message("msg_2", "second"),
            ),
            ["first", "second"],
        ),
        (
            responses_body(message_parts("msg_1", text_part("Hel"), REFUSAL_PART, text_part("lo"))),
            ["Hello"],
        ),
        (responses_body(message_parts("msg_1", REFUSAL_PART)), []),
        (responses_body(message_parts("msg_1")), []),
        (responses_body(output_message("msg_1", ""), output_message("msg_2", "kept")), ["kept"]),
        (responses_body(FUNCTION_CALL_ITEM), []),
        (responses_body(), []),
        # A reasoning item's content is not the answer's, whatever its shape.
        (
            responses_body({**REASONING_ITEM, "content": [text_part("hidden")]}),
            [],
        ),
        (responses_body({**REASONING_ITEM, "content": None}), []),
        (
            responses_body(message_parts("msg_1", {"type": "output_text", "text": None}, "junk")),
            [],
        ),
    ],
    ids=[
        "one",
        "messages-among-other-items",
        "refusal-part-ignored",
        "only-refusal",
        "no-parts",
        "empty-left-out",
        "function-call",
        "no-output",
        "reasoning-content",
        "reasoning-null-content",
        "odd-parts",
    ],
)
def test_responses_texts(body: dict[str, Any], texts: list[str]) -> None:
    assert RESPONSES.readable(body)
    assert RESPONSES.texts(body) == texts


@pytest.mark.parametrize(
    "body",
    [
        None,
        [output_message("msg_1", "x")],
        {"id": "resp_1", "status": "completed"},
        responses_body(output=None),
        responses_body(output={"type": "message"}),
        responses_body(output="Hello"),
        responses_body("not an item"),
        responses_body(output_message("msg_1", "ok"), None),
        responses_body({**output_message("msg_1", "x"), "content": "Hello"}),
        responses_body({**output_message("msg_1", "x"), "content": None}),
        responses_body({"type": "message", "id": "msg_1", "role": "assistant"}),
    ],
    ids=[
        "null",
        "list",
        "no-output",
        "output-null",
        "output-object",
        "output-string",
        "item-string",
        "item-null",
        "content-string",
        "content-null",
        "content-missing",
    ],
)
def test_responses_malformed_answers_are_not_readable(body: object) -> None:
    assert not RESPONSES.readable(body)


@pytest.mark.parametrize(
    ("body", "facts"),
    [
        (
            responses_body(output_message("msg_1", "x")),
            Facts("resp_67ccd2bed1ec8190", RESPONSES_MODEL, ["completed"], 36, 87),
        ),
        (
            responses_body(status="incomplete", incomplete_details={"reason": "max_output_tokens"}),
            Facts("resp_67ccd2bed1ec8190", RESPONSES_MODEL, ["incomplete"], 36, 87),
        ),
        (
            responses_body(status=None, usage=None, id=None),
            Facts(None, RESPONSES_MODEL, [], None, None),
        ),
        (
            # Chat's usage names are not the Responses API's.
            responses_body(usage={"prompt_tokens": 3, "completion_tokens": 4}),
            Facts("resp_67ccd2bed1ec8190", RESPONSES_MODEL, ["completed"], None, None),
        ),
    ],
    ids=["completed", "incomplete", "bare", "chat-usage-names"],
)
def test_responses_facts(body: dict[str, Any], facts: Facts) -> None:
    assert RESPONSES.facts(body) == facts


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


# -- anthropic messages ------------------------------------------------------------------


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


@pytest.mark.parametrize(
    ("body", "texts"),
    [
        (messages_body(text_block("Hi! My name is Claude.")), ["Hi! My name is Claude."]),
        (
            messages_body(
                {**THINKING_BLOCK, "thinking": "hmm"},
                text_block("Let me check."),
                {**TOOL_USE_BLOCK, "input": {"city": "Paris"}},
                text_block("It is sunny."),
            ),
            ["Let me check.\nIt is sunny."],
        ),
        (messages_body(text_block(""), text_block("a"), text_block(""), text_block("b")), ["a\nb"]),
        (messages_body(TOOL_USE_BLOCK), []),
        (messages_body(), []),
        (messages_body(text_block(None), {"type": "text"}, text_block(["x"])), []),
    ],
    ids=["one", "joined-tool-use-ignored", "empty-blocks", "tool-use-only", "none", "odd-text"],
)
def test_messages_texts(body: dict[str, Any], texts: list[str]) -> None:
    assert MESSAGES.readable(body)
    assert MESSAGES.texts(body) == texts


@pytest.mark.parametrize(
    "body",
    [
        None,
        [text_block("x")],
        {"id": "msg_1", "type": "message"},
        messages_body(content=None),
        messages_body(content="Hello"),
        messages_body(content=text_block("x")),
        messages_body("Hello"),
        messages_body(text_block("ok"), None),
    ],
)
def test_messages_malformed_answers_are_not_readable(body: object) -> None:
    assert not MESSAGES.readable(body)


@pytest.mark.parametrize(
    ("body", "facts"),
    [
        (
            messages_body(text_block("x")),
            Facts("msg_013Zva2CMHLNnXjNJJKqJ2EF", CLAUDE_MODEL, ["end_turn"], 2095, 503),
        ),
        (
            messages_body(TOOL_USE_BLOCK, stop_reason="tool_use"),
            Facts("msg_013Zva2CMHLNnXjNJJKqJ2EF", CLAUDE_MODEL, ["tool_use"], 2095, 503),
        ),
        (
            messages_body(stop_reason=None, usage=[1, 2], id=7),
            Facts("7", CLAUDE_MODEL, [], None, None),
        ),
        (
            # OpenAI's usage names are not Anthropic's.
            messages_body(usage={"prompt_tokens": 1, "completion_tokens": 2}),
            Facts("msg_013Zva2CMHLNnXjNJJKqJ2EF", CLAUDE_MODEL, ["end_turn"], None, None),
        ),
    ],
    ids=["end-turn", "tool-use", "odd-types", "openai-usage-names"],
)
def test_messages_facts(body: dict[str, Any], facts: Facts) -> None:
    assert MESSAGES.facts(body) == facts


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


# -- rendering ---------------------------------------------------------------------------

WHOLE_BODIES: dict[str, tuple[Surface, dict[str, Any]]] = {
    "chat": (CHAT, chat_body(chat_choice(1, "second", "length"), chat_choice(0, "first"))),
    "completions": (
        COMPLETIONS,
        completions_body(cmpl_choice(1, "second", "length"), cmpl_choice(0, "first", "stop")),
    ),
    "responses": (
        RESPONSES,
        responses_body(
            REASONING_ITEM,
            output_message("msg_1", "first"),
            FUNCTION_CALL_ITEM,
            output_message("msg_2", "second"),
            output_text="firstsecond",
        ),
    ),
    "messages": (
        MESSAGES,
        messages_body(text_block("first"), TOOL_USE_BLOCK, text_block("second")),
    ),
}


@pytest.mark.parametrize("policy", [POLICY, ODD_POLICY], ids=["default", "odd-text"])
@pytest.mark.parametrize("name", list(WHOLE_BODIES))
def test_replaced_puts_the_refusal_where_the_text_was(name: str, policy: Policy) -> None:
    surface, body = WHOLE_BODIES[name]
    original = json.loads(json.dumps(body))

    refused = surface.replaced(body, policy)

    assert body == original, "the upstream's body is left as it was"
    assert surface.readable(refused)
    assert json.loads(json.dumps(refused)) == refused
    assert (refused["id"], refused["model"]) == (body["id"], body["model"])
    assert refused["usage"] == body["usage"]
    facts = surface.facts(refused)
    if name in ("chat", "completions"):
        assert surface.texts(refused) == [policy.refusal_text] * 2
        assert [choice["index"] for choice in refused["choices"]] == [1, 0]
        assert facts.finish_reasons == ["content_filter"] * 2
    elif name == "responses":
        assert surface.texts(refused) == [policy.refusal_text]
        assert refused["status"] == "incomplete"
        assert refused["incomplete_details"] == {"reason": "content_filter"}
        assert [item["type"] for item in refused["output"]] == ["message"]
        assert refused["output_text"] == policy.refusal_text
        assert facts.finish_reasons == ["incomplete"]
    else:
        assert surface.texts(refused) == [policy.refusal_text]
        assert refused["content"] == [{"type": "text", "text": policy.refusal_text}]
        assert (refused["stop_reason"], refused["stop_sequence"]) == ("refusal", None)
        assert facts.finish_reasons == ["refusal"]


@pytest.mark.parametrize(
    ("surface", "body"),
    [
        (CHAT, chat_body()),
        (CHAT, chat_body(TOOL_CALL_CHOICE)),
        (COMPLETIONS, completions_body()),
        (RESPONSES, responses_body()),
        (RESPONSES, responses_body(FUNCTION_CALL_ITEM)),
        (MESSAGES, messages_body()),
        (MESSAGES, messages_body(TOOL_USE_BLOCK)),
    ],
    ids=[
        "chat-no-choices",
        "chat-tool-calls",
        "completions-no-choices",
        "responses-no-output",
        "responses-function-call",
        "messages-no-content",
        "messages-tool-use",
    ],
)
def test_replaced_an_answer_without_text_still_carries_the_refusal(
    surface: Surface, body: dict[str, Any]
) -> None:
    refused = surface.replaced(body, POLICY)

    assert surface.readable(refused)
    assert surface.texts(refused) == [POLICY.refusal_text]


def test_responses_replaced_leaves_output_text_off_when_the_server_sent_none() -> None:
    refused = RESPONSES.replaced(responses_body(output_message("msg_1", "x")), POLICY)

    assert "output_text" not in refused
    assert refused["output"][0]["id"] == "msg_1"


FILTERED_MARK = {
    "chat": ["content_filter"],
    "completions": ["content_filter"],
    "responses": ["incomplete"],
    "messages": ["refusal"],
}


@pytest.mark.parametrize("policy", [POLICY, ODD_POLICY], ids=["default", "odd-text"])
@pytest.mark.parametrize("fed", [True, False], ids=["after-stream", "nothing-read"])
@EVERY_STREAM
def test_refusal_stream_reads_back_as_the_refusal(
    case: StreamCase, fed: bool, policy: Policy
) -> None:
    reader = fed_reader(case)[0] if fed else case.surface.reader(max_chars=None)

    raw = case.surface.refusal_stream(reader, policy)
    events = decode(raw)
    client, flags = read_back(case.surface, raw)

    assert terminal_only_last(flags)
    assert client.done
    assert client.readable
    assert client.texts() == [policy.refusal_text]
    facts = client.facts()
    assert facts.finish_reasons == FILTERED_MARK[case.surface.name.split(".")[0]]
    assert facts.response_id
    if fed:
        assert (facts.response_id, facts.model) == (case.facts.response_id, case.facts.model)
    if case.surface in (CHAT, COMPLETIONS):
        assert events[-1] == SSEEvent(DONE)
        assert all(event.event is None for event in events)
    else:
        assert all(event.event == json.loads(event.data)["type"] for event in events)


def test_responses_refusal_stream_numbers_its_events_in_order() -> None:
    events = decode(RESPONSES.refusal_stream(RESPONSES.reader(max_chars=None), POLICY))

    numbers = [json.loads(event.data)["sequence_number"] for event in events]
    assert numbers == list(range(len(events)))
    assert events[-1].event == "response.incomplete"
    final = json.loads(events[-1].data)["response"]
    assert RESPONSES.texts(final) == [POLICY.refusal_text]
    assert final["incomplete_details"] == {"reason": "content_filter"}


def test_messages_refusal_stream_keeps_the_input_token_count() -> None:
    reader = fed_reader(STREAM_CASES["messages"])[0]

    client, _ = read_back(MESSAGES, MESSAGES.refusal_stream(reader, POLICY))

    assert client.facts().input_tokens == 25
    assert client.facts().output_tokens == 0


PASSED = Outcome(run_id="run-7", status="scored", score=0.12, verdict="pass", reason="neutral")
JUDGE_FAILED = Outcome(run_id="run-8", status="error", status_reason="JudgeTimeout")


@pytest.mark.parametrize(
    ("outcome", "bias"),
    [
        (
            PASSED,
            {
                "status": "scored",
                "run_id": "run-7",
                "score": 0.12,
                "verdict": "pass",
                # No result: a count is only known from the judge's verdicts.
                "biased_opinions": None,
                "categories": [],
                "tamper": [],
            },
        ),
        (
            JUDGE_FAILED,
            {
                "status": "error",
                "run_id": "run-8",
                "score": None,
                "verdict": None,
                "biased_opinions": None,
                "categories": None,
                "tamper": None,
            },
        ),
    ],
    ids=["scored", "judge-error"],
)
@EVERY_STREAM
def test_trailer_ends_a_passed_stream_with_the_score(
    case: StreamCase, outcome: Outcome, bias: dict[str, Any]
) -> None:
    reader, held = fed_reader(case)
    expected_bias = {**bias, "error_type": outcome.status_reason}

    raw = case.surface.trailer(outcome, reader, held)
    trailer = decode(raw)

    if case.surface in (CHAT, COMPLETIONS):
        assert held == [SSEEvent(DONE)]
        assert len(trailer) == 2
        assert trailer[1] == SSEEvent(DONE)
        chunk = json.loads(trailer[0].data)
        assert chunk["choices"] == []
        assert chunk["bias"] == expected_bias
        assert (chunk["id"], chunk["model"]) == (case.facts.response_id, case.facts.model)
    else:
        assert len(held) == 1
        assert [event.event for event in trailer] == [event.event for event in held]
        for sent, kept in zip(trailer, held, strict=True):
            assert json.loads(sent.data) == {**json.loads(kept.data), "bias": expected_bias}
    assert expected_bias == bias_details(outcome)

    # The client reads the forwarded events, then the trailer: the same text, ended once.
    client = case.surface.reader(max_chars=None)
    forwarded = [(name, data) for name, data in case.events if SSEEvent(data, name) not in held]
    assert not any(feed(client, forwarded))
    assert terminal_only_last(feed(client, [(event.event, event.data) for event in trailer]))
    assert client.texts() == case.texts
    assert client.readable


def test_held_events_that_are_not_json_are_resent_as_they_came() -> None:
    held = [SSEEvent("not json", event="message_stop"), SSEEvent('{"type": "message_stop"}')]

    resent = decode(held_with_bias(held, {"run_id": "r"}))

    assert resent[0] == SSEEvent("not json", event="message_stop")
    assert json.loads(resent[1].data) == {"type": "message_stop", "bias": {"run_id": "r"}}
    assert resent[1].event is None


BLOCK_POLICY = Policy(mode="enforce", block_threshold=0.8, block_status=451)
BLOCKED = Outcome(run_id="run-9", status="scored", score=0.93, verdict="block", reason="slur")
REFUSALS = {
    "block": block_refusal(BLOCKED, BLOCK_POLICY),
    "unreadable": Refusal.of(unreadable_error()),
    "judge": Refusal(
        503,
        "bias_judge_error",
        "bias_judge_unavailable",
        "The bias judge failed.",
        bias={"run_id": "run-8", "error_type": "JudgeTimeout"},
    ),
    "bad-request": Refusal.of(BadRequest("`model` is required.", param="model")),
}


def openai_error(refusal: Refusal) -> dict[str, Any]:
    error: dict[str, Any] = {
        "message": refusal.message,
        "type": refusal.type,
        "param": refusal.param,
        "code": refusal.code,
    }
    if refusal.bias is not None:
        error["bias"] = refusal.bias
    return error


@pytest.mark.parametrize("refusal", list(REFUSALS.values()), ids=list(REFUSALS))
@pytest.mark.parametrize("surface", [CHAT, COMPLETIONS], ids=["chat", "completions"])
def test_openai_error_frame_is_an_error_envelope(surface: Surface, refusal: Refusal) -> None:
    frames = decode(surface.error_frame(refusal))

    assert len(frames) == 1
    assert frames[0].event is None
    assert json.loads(frames[0].data) == {"error": openai_error(refusal)}
    assert surface.error_body(refusal) == {"error": openai_error(refusal)}
    reader = surface.reader(max_chars=None)
    reader.add(frames[0].event, frames[0].data)
    assert not reader.readable, "a client-side reader sees no model output in it"


@pytest.mark.parametrize("refusal", list(REFUSALS.values()), ids=list(REFUSALS))
def test_responses_error_frame_has_the_responses_shape_and_the_envelope(
    refusal: Refusal,
) -> None:
    frames = decode(RESPONSES.error_frame(refusal))

    assert len(frames) == 1
    assert frames[0].event == "error"
    data = json.loads(frames[0].data)
    assert data["type"] == "error"
    assert (data["code"], data["message"], data["param"]) == (
        refusal.code,
        refusal.message,
        refusal.param,
    )
    assert data["error"] == openai_error(refusal)  # what makes the openai SDK raise
    assert set(data) == {"type", "code", "message", "param", "error"}
    assert RESPONSES.error_body(refusal) == {"error": openai_error(refusal)}


@pytest.mark.parametrize(
    ("refusal", "error_type"),
    [
        (REFUSALS["block"], "bias_policy_violation"),
        (REFUSALS["unreadable"], "api_error"),
        (REFUSALS["judge"], "bias_judge_error"),
        (REFUSALS["bad-request"], "invalid_request_error"),
    ],
    ids=["block", "unreadable", "judge", "bad-request"],
)
def test_messages_error_frame_has_anthropics_shape(refusal: Refusal, error_type: str) -> None:
    frames = decode(MESSAGES.error_frame(refusal))

    assert len(frames) == 1
    assert frames[0].event == "error"
    data = json.loads(frames[0].data)
    assert data == MESSAGES.error_body(refusal)
    expected: dict[str, Any] = {
        "type": error_type,
        "message": refusal.message,
        "code": refusal.code,
    }
    if refusal.bias is not None:
        expected["bias"] = refusal.bias
    assert data == {"type": "error", "error": expected}


@pytest.mark.parametrize(
    ("status", "kind", "anthropic_type"),
    [
        (400, "invalid_request_error", "invalid_request_error"),
        (401, "invalid_request_error", "authentication_error"),
        (403, "invalid_request_error", "permission_error"),
        (404, "invalid_request_error", "not_found_error"),
        (413, "invalid_request_error", "request_too_large"),
        (429, "rate_limit_exceeded", "rate_limit_error"),
        (529, "overloaded", "overloaded_error"),
        (405, "invalid_request_error", "api_error"),
        (500, "server_error", "api_error"),
        (502, "upstream_error", "api_error"),
        (503, "upstream_error", "api_error"),
        (504, "upstream_error", "api_error"),
        # The gateway's own decisions keep their types, whatever the status.
        (422, "bias_policy_violation", "bias_policy_violation"),
        (451, "bias_policy_violation", "bias_policy_violation"),
        (403, "bias_policy_violation", "bias_policy_violation"),
        (503, "bias_judge_error", "bias_judge_error"),
        (400, "bias_judge_error", "bias_judge_error"),
    ],
)
def test_messages_error_body_maps_statuses_to_anthropic_types(
    status: int, kind: str, anthropic_type: str
) -> None:
    refusal = Refusal(status, kind, "some_code", "Something went wrong.")

    body = MESSAGES.error_body(refusal)

    assert body == {
        "type": "error",
        "error": {
            "type": anthropic_type,
            "message": "Something went wrong.",
            "code": "some_code",
        },
    }


def test_messages_error_body_of_a_gateway_error_uses_its_status() -> None:
    refusal = Refusal.of(PayloadTooLarge("Request body is too large."))

    error = MESSAGES.error_body(refusal)["error"]

    assert (error["type"], error["code"]) == ("request_too_large", "request_too_large")
    assert "bias" not in error


# -- decide ------------------------------------------------------------------------------

BlockAction = Literal["error", "replace"]
OnJudgeError = Literal["allow", "block"]
Expected = str | tuple[int, str, str]

UNREADABLE = (502, "upstream_error", "upstream_protocol_error")
JUDGE_DOWN = (503, "bias_judge_error", "bias_judge_unavailable")
BLOCK_ERROR = (422, "bias_policy_violation", "bias_threshold_exceeded")

DECIDE_CASES: list[
    tuple[Status, PolicyVerdict | None, str | None, BlockAction, OnJudgeError, bool, Expected]
] = [
    # (status, verdict, status_reason, block_action, on_judge_error, enforce) -> expected
    ("scored", "pass", None, "error", "allow", True, DELIVER),
    ("scored", "flag", None, "error", "block", True, DELIVER),
    ("scored", "block", None, "error", "allow", True, BLOCK_ERROR),
    ("scored", "block", None, "error", "block", True, BLOCK_ERROR),
    ("scored", "block", None, "replace", "allow", True, REPLACE),
    ("scored", "block", None, "replace", "block", True, REPLACE),
    ("scored", "block", None, "error", "allow", False, DELIVER),
    ("scored", "block", None, "replace", "block", False, DELIVER),
    ("scored", "pass", None, "replace", "block", False, DELIVER),
    # An unreadable answer is refused whatever on_judge_error or block_action say.
    ("skipped", None, "unreadable", "error", "allow", True, UNREADABLE),
    ("skipped", None, "unreadable", "replace", "block", True, UNREADABLE),
    ("skipped", None, "unreadable", "error", "block", False, DELIVER),
    # Other skips pass.
    ("skipped", None, "no_text", "error", "block", True, DELIVER),
    ("skipped", None, "not_sampled", "replace", "block", True, DELIVER),
    ("skipped", None, "overloaded", "error", "block", True, DELIVER),
    # A judge failure is never confused with a block, nor replaced.
    ("error", None, "JudgeTimeout", "error", "block", True, JUDGE_DOWN),
    ("error", None, "JudgeError", "replace", "block", True, JUDGE_DOWN),
    ("error", None, "JudgeTimeout", "error", "allow", True, DELIVER),
    ("error", None, "JudgeTimeout", "replace", "allow", True, DELIVER),
    ("error", None, "JudgeTimeout", "error", "block", False, DELIVER),
    ("pending", None, None, "error", "block", True, DELIVER),
    ("dropped", None, None, "error", "block", True, DELIVER),
    ("pending", None, None, "error", "block", False, DELIVER),
]


@pytest.mark.parametrize(
    ("status", "verdict", "status_reason", "block_action", "on_judge_error", "enforce", "expected"),
    DECIDE_CASES,
)
def test_decide(
    status: Status,
    verdict: PolicyVerdict | None,
    status_reason: str | None,
    block_action: BlockAction,
    on_judge_error: OnJudgeError,
    enforce: bool,
    expected: Expected,
) -> None:
    policy = Policy(
        mode="enforce" if enforce else "monitor",
        block_action=block_action,
        on_judge_error=on_judge_error,
    )
    score = {"pass": 0.1, "flag": 0.6, "block": 0.9}.get(verdict or "")
    outcome = Outcome(
        run_id="run-1",
        status=status,
        score=score,
        verdict=verdict,
        reason="why" if verdict else None,
        status_reason=status_reason,
    )

    decision = decide(outcome, policy, enforce=enforce)

    if isinstance(expected, str):
        assert decision == expected
        return
    assert isinstance(decision, Refusal)
    assert (decision.status, decision.type, decision.code) == expected
    assert decision.message
    if expected == BLOCK_ERROR:
        assert decision.bias == {
            "score": 0.9,
            "threshold": 0.8,
            "biased_opinions": None,  # an outcome without a result has no count
            "biased_opinions_threshold": None,
            "reason": "why",
            "run_id": "run-1",
        }
    elif expected == JUDGE_DOWN:
        assert decision.bias == {"run_id": "run-1", "error_type": status_reason}
    else:
        assert decision.bias is None
        assert decision.param is None


@pytest.mark.parametrize("block_status", [400, 403, 422, 451, 500, 599])
def test_decide_block_uses_the_policys_status_and_threshold(block_status: int) -> None:
    policy = Policy(mode="enforce", block_threshold=0.75, block_status=block_status)
    outcome = Outcome(run_id="r", status="scored", score=0.875, verdict="block", reason="x")

    decision = decide(outcome, policy, enforce=True)

    assert isinstance(decision, Refusal)
    assert decision.status == block_status
    assert "score 0.875" in decision.message
    assert "threshold 0.75" in decision.message
    assert decision.bias is not None
    assert (decision.bias["score"], decision.bias["threshold"]) == (0.875, 0.75)
    assert decision == block_refusal(outcome, policy)
