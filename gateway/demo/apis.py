"""How a model answers, API by API: pure functions building bodies and stream events.

Each model API the gateway scores is a `Surface` here: its non-stream answer, its
stream and its error body, built from the request body and the answer's texts. The
demo model (`gateway.demo.server`) and the tests' fake upstream
(`testkit/fake_openai.py`) both word their answers with these; the tests check
them against the official `openai` and `anthropic` SDKs.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

Body = dict[str, Any]


class Frame(NamedTuple):
    """Bytes of a stream; `piece` marks those carrying answer text, which faults count."""

    data: bytes
    piece: bool = False


@dataclass(frozen=True)
class Surface:
    """One model API: `render(body, texts)`, `stream(body, pieces per text)`, `error(type, msg)`."""

    render: Callable[[Body, list[str]], Body]
    stream: Callable[[Body, list[list[str]]], Iterator[Frame]]
    error: Callable[[str, str], Body]
    server_error: str  # the error type of a scripted failure
    honours_n: bool = False  # answers `n` choices of one text, as the chat API does


def split(text: str, parts: int) -> list[str]:
    """`text` in about `parts` pieces; an empty text is still one (empty) piece."""
    size = max(1, -(-len(text) // max(1, parts)))
    return [text[start : start + size] for start in range(0, len(text), size)] or [""]


def tokens(chars: int) -> int:
    """Roughly four characters a token, never zero: what usage figures need to look real."""
    return max(1, chars // 4)


def text_chars(value: Any) -> int:
    """Characters of the text in a prompt, whichever shape it has (string, parts, messages)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(text_chars(item) for item in value)
    if isinstance(value, dict):
        return sum(text_chars(value.get(key)) for key in ("content", "text"))
    return 0


def _data(payload: Body) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _event(payload: Body) -> bytes:
    """A named SSE event, named after its `type` as both OpenAI and Anthropic do."""
    return f"event: {payload['type']}\n".encode() + _data(payload)


def _hex_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


# -- OpenAI Chat Completions (the stream only: the server builds the rest) ----------


def chat_stream(body: Body, pieces: list[str]) -> Iterator[Frame]:
    """One choice streamed in `pieces`."""
    return chat_choices_stream(body, [pieces])


def chat_choices_stream(body: Body, pieces: list[list[str]]) -> Iterator[Frame]:
    """A choice per list of pieces (`n` > 1), their chunks taking turns as OpenAI's do."""
    completion_id = f"chatcmpl-{uuid.uuid4().hex[:12]}"

    def frame(index: int, delta: Body, finish: str | None) -> bytes:
        chunk = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": 1,
            "model": body.get("model"),
            "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
        }
        return _data(chunk)

    for index in range(len(pieces)):
        yield Frame(frame(index, {"role": "assistant", "content": ""}, None))
    for step in range(max((len(text) for text in pieces), default=0)):
        for index, text in enumerate(pieces):
            if step < len(text):
                yield Frame(frame(index, {"content": text[step]}, None), piece=True)
    for index in range(len(pieces)):
        yield Frame(frame(index, {}, "stop"))
    if _includes_usage(body):
        whole = chat_completion(body, ["".join(text) for text in pieces])
        chunk = {**whole, "id": completion_id, "object": "chat.completion.chunk", "created": 1}
        yield Frame(_data({**chunk, "choices": []}))
    yield Frame(b"data: [DONE]\n\n")


def _includes_usage(body: Body) -> bool:
    """Whether a stream ends with a usage chunk: `stream_options.include_usage`, as OpenAI's
    chat and legacy Completions streams do."""
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def chat_completion(body: Body, texts: list[str], *, prompt_chars: int | None = None) -> Body:
    """A `chat.completion` with one choice per text."""
    asked = tokens(text_chars(body.get("messages")) if prompt_chars is None else prompt_chars)
    answered = tokens(text_chars(texts))
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model"),
        "choices": [
            {
                "index": index,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
            for index, text in enumerate(texts)
        ],
        "usage": {
            "prompt_tokens": asked,
            "completion_tokens": answered,
            "total_tokens": asked + answered,
        },
    }


def openai_error(kind: str, message: str) -> Body:
    return {"error": {"message": message, "type": kind, "code": None}}


# -- OpenAI legacy Completions ---------------------------------------------------


def completion(body: Body, texts: list[str]) -> Body:
    prompt, answer = tokens(text_chars(body.get("prompt"))), tokens(text_chars(texts))
    return {
        "id": f"cmpl-{uuid.uuid4().hex[:24]}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": body.get("model"),
        "choices": [
            {"text": text, "index": index, "logprobs": None, "finish_reason": "stop"}
            for index, text in enumerate(texts)
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": answer,
            "total_tokens": prompt + answer,
        },
    }


def completion_stream(body: Body, pieces: list[list[str]]) -> Iterator[Frame]:
    head = {
        "id": f"cmpl-{uuid.uuid4().hex[:24]}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": body.get("model"),
    }

    def chunk(index: int, text: str, finish: str | None) -> bytes:
        choice = {"text": text, "index": index, "logprobs": None, "finish_reason": finish}
        return _data({**head, "choices": [choice]})

    for index, text_pieces in enumerate(pieces):
        for piece in text_pieces:
            yield Frame(chunk(index, piece, None), piece=True)
    for index in range(len(pieces)):
        yield Frame(chunk(index, "", "stop"))
    if _includes_usage(body):
        usage = completion(body, ["".join(text) for text in pieces])["usage"]
        yield Frame(_data({**head, "choices": [], "usage": usage}))
    yield Frame(b"data: [DONE]\n\n")


CHAT = Surface(chat_completion, chat_choices_stream, openai_error, "server_error", honours_n=True)
COMPLETIONS = Surface(completion, completion_stream, openai_error, "server_error", honours_n=True)


# -- OpenAI Responses ------------------------------------------------------------


def _output_text(text: str) -> Body:
    return {"type": "output_text", "text": text, "annotations": []}


def _message_item(item_id: str, texts: list[str], status: str) -> Body:
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": [_output_text(text) for text in texts],
    }


def _response(
    body: Body, response_id: str, created: int, output: list[Body], texts: list[str] | None
) -> Body:
    """A Response object; `texts` None: still in progress, so no usage yet."""
    usage = None
    if texts is not None:
        prompt = text_chars(body.get("input")) + text_chars(body.get("instructions"))
        asked, answered = tokens(prompt), tokens(text_chars(texts))
        usage = {
            # The SDK installed here declares cache_write_tokens; real answers carry it too.
            "input_tokens": asked,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": answered,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": asked + answered,
        }
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": "in_progress" if texts is None else "completed",
        "model": body.get("model"),
        "output": output,
        "usage": usage,
        "error": None,
        "incomplete_details": None,
        # Echoed from the request, as the real API does; its defaults otherwise.
        "instructions": body.get("instructions"),
        "metadata": body.get("metadata") or {},
        "parallel_tool_calls": True,
        "temperature": body.get("temperature", 1.0),
        "tool_choice": "auto",
        "tools": [],
        "top_p": body.get("top_p", 1.0),
    }


def response(body: Body, texts: list[str]) -> Body:
    output = [_message_item(_hex_id("msg_"), [text], "completed") for text in texts]
    return _response(body, _hex_id("resp_"), int(time.time()), output, texts)


def response_stream(body: Body, pieces: list[list[str]]) -> Iterator[Frame]:
    """The Responses event stream: lifecycle events around one output message per text."""
    response_id, created = _hex_id("resp_"), int(time.time())
    numbers = itertools.count()

    def event(kind: str, *, piece: bool = False, **fields: Any) -> Frame:
        payload = {"type": kind, "sequence_number": next(numbers), **fields}
        return Frame(_event(payload), piece)

    started = _response(body, response_id, created, [], None)
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    done: list[Body] = []
    for output_index, text_pieces in enumerate(pieces):
        text, item_id = "".join(text_pieces), _hex_id("msg_")
        at: Body = {"item_id": item_id, "output_index": output_index, "content_index": 0}
        yield event(
            "response.output_item.added",
            output_index=output_index,
            item=_message_item(item_id, [], "in_progress"),
        )
        yield event("response.content_part.added", **at, part=_output_text(""))
        for piece in text_pieces:
            yield event("response.output_text.delta", **at, piece=True, delta=piece, logprobs=[])
        yield event("response.output_text.done", **at, text=text, logprobs=[])
        yield event("response.content_part.done", **at, part=_output_text(text))
        done.append(_message_item(item_id, [text], "completed"))
        yield event("response.output_item.done", output_index=output_index, item=done[-1])
    texts = ["".join(text_pieces) for text_pieces in pieces]
    yield event("response.completed", response=_response(body, response_id, created, done, texts))


RESPONSES = Surface(response, response_stream, openai_error, "server_error")


# -- Anthropic Messages ----------------------------------------------------------


def anthropic_error(kind: str, message: str) -> Body:
    return {"type": "error", "error": {"type": kind, "message": message}}


def message_input_tokens(body: Body) -> int:
    return tokens(text_chars(body.get("messages")) + text_chars(body.get("system")))


def _message(body: Body, content: list[Body], stop: str | None, usage: Body) -> Body:
    return {
        "id": _hex_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def message(body: Body, texts: list[str]) -> Body:
    usage = {
        "input_tokens": message_input_tokens(body),
        "output_tokens": tokens(text_chars(texts)),
    }
    content = [{"type": "text", "text": text} for text in texts]
    return _message(body, content, "end_turn", usage)


def message_stream(body: Body, pieces: list[list[str]]) -> Iterator[Frame]:
    """The Messages event stream: one text block per text, a ping after the first start."""
    usage = {"input_tokens": message_input_tokens(body), "output_tokens": 1}
    yield Frame(_event({"type": "message_start", "message": _message(body, [], None, usage)}))
    for index, text_pieces in enumerate(pieces):
        block = {"type": "text", "text": ""}
        yield Frame(_event({"type": "content_block_start", "index": index, "content_block": block}))
        if index == 0:
            yield Frame(_event({"type": "ping"}))
        for piece in text_pieces:
            delta = {"type": "text_delta", "text": piece}
            yield Frame(
                _event({"type": "content_block_delta", "index": index, "delta": delta}), True
            )
        yield Frame(_event({"type": "content_block_stop", "index": index}))
    answered = tokens(sum(len(piece) for text_pieces in pieces for piece in text_pieces))
    yield Frame(
        _event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": answered},
            }
        )
    )
    yield Frame(_event({"type": "message_stop"}))


MESSAGES = Surface(message, message_stream, anthropic_error, "api_error")
