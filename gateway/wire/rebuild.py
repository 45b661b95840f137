"""Whole answers rebuilt from their streams, one function per model API. Pure code.

Each takes a whole SSE body, as an upstream streamed it, and returns the answer
the same request without `stream` would have had, or the `StreamError` the
stream carried instead. A stream that ends before its last event, or holds an
event no answer of its API has, raises `Unfinished`: no answer can be rebuilt.

What a stream never says cannot be rebuilt; each function's docstring names it.

>>> body = (b'data: {"id": "c1", "created": 1, "model": "m", "choices": [{"index": 0, '
...         b'"delta": {"content": "Hi"}, "finish_reason": "stop"}]}\\n\\ndata: [DONE]\\n\\n')
>>> chat_answer(body)["choices"][0]["message"]["content"]
'Hi'
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.wire.accumulate import ChunkAccumulator, chunk_extras, merge_logprobs
from gateway.wire.codec import loads
from gateway.wire.sse import DONE, SSEDecoder

__all__ = [
    "Rebuilt",
    "StreamError",
    "Unfinished",
    "chat_answer",
    "completion_answer",
    "message_answer",
    "response_answer",
]


class Unfinished(ValueError):
    """A stream no whole answer can be rebuilt from (cut short, or not this API's)."""


@dataclass(frozen=True, slots=True)
class StreamError:
    """An error event where the answer should have gone on: its data, as sent."""

    body: dict[str, Any]


Rebuilt = dict[str, Any] | StreamError


def _events(body: bytes) -> Iterator[tuple[str | None, Any]]:
    """Each event's name and its JSON data (`[DONE]` as the string); anything else that
    is not a JSON object raises `Unfinished`."""
    decoder = SSEDecoder()
    for event in [*decoder.feed(body), *decoder.flush()]:
        if event.data == DONE:
            yield event.event, DONE
            continue
        try:
            data = loads(event.data)
        except ValueError as exc:
            raise Unfinished(f"an event is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise Unfinished("an event is not a JSON object")
        yield event.event, data


def _openai_error(data: Mapping[str, Any]) -> StreamError | None:
    """Chat and legacy Completions streams fail with an `{"error": ...}` event."""
    return StreamError(dict(data)) if "error" in data else None


def chat_answer(body: bytes) -> Rebuilt:
    """A `chat.completion` from its `chat.completion.chunk`s (`ChunkAccumulator`).

    Not rebuilt: `usage` when the stream did not include it, and OpenAI's
    `annotations: []` on each message, which its streams do not send."""
    read = _choice_chunks(body)
    if isinstance(read, StreamError):
        return read
    chunks, done = read
    accumulator = ChunkAccumulator()
    for data in chunks:
        accumulator.add(data)
    completion = accumulator.as_completion()
    _check_finished(done, completion["choices"])
    return completion


def _choice_chunks(body: bytes) -> tuple[list[Mapping[str, Any]], bool] | StreamError:
    """A choice API's chunks in order and whether `[DONE]` ended them, or its error event."""
    chunks: list[Mapping[str, Any]] = []
    done = False
    for _, data in _events(body):
        if data == DONE:
            done = True
            continue
        error = _openai_error(data)
        if error is not None:
            return error
        if not isinstance(data.get("choices"), list):
            raise Unfinished("a chunk has no `choices`")
        chunks.append(data)
    return chunks, done


def _check_finished(done: bool, choices: list[dict[str, Any]]) -> None:
    """A choice stream ends with `[DONE]`; without it, every choice must have ended."""
    if not choices:
        raise Unfinished("the stream holds no choice")
    if not done and any(choice.get("finish_reason") is None for choice in choices):
        raise Unfinished("the stream ended before its last chunk")


@dataclass(slots=True)
class _TextChoice:
    text: list[str] = field(default_factory=list)
    logprobs: dict[str, Any] | None = None
    logprobs_seen: bool = False
    finish_reason: Any = None


def completion_answer(body: bytes) -> Rebuilt:
    """A legacy `text_completion` from its stream: each choice's `text` and `logprobs`
    joined, its last `finish_reason`, the chunks' other fields (`system_fingerprint`).

    Not rebuilt: `usage` when the stream did not include it."""
    choices: dict[int, _TextChoice] = {}
    head: dict[str, Any] = {}
    first: Mapping[str, Any] | None = None
    last: Mapping[str, Any] | None = None
    usage: Any = None
    read = _choice_chunks(body)
    if isinstance(read, StreamError):
        return read
    chunks, done = read
    for data in chunks:
        first, last = first or data, data
        for name in ("id", "object", "created", "model"):
            if not head.get(name) and data.get(name):
                head[name] = data[name]
        if isinstance(data.get("usage"), Mapping):
            usage = dict(data["usage"])
        for position, raw in enumerate(data["choices"]):
            if isinstance(raw, Mapping):
                _add_text_choice(choices, position, raw)
    completion: dict[str, Any] = {
        "id": head.get("id"),
        "object": head.get("object", "text_completion"),
        "created": head.get("created"),
        "model": head.get("model"),
        "choices": [_text_choice(index, state) for index, state in sorted(choices.items())],
        **chunk_extras(first, last),
    }
    if usage is not None:
        completion["usage"] = usage
    _check_finished(done, completion["choices"])
    return completion


def _add_text_choice(
    choices: dict[int, _TextChoice], position: int, raw: Mapping[str, Any]
) -> None:
    index = raw.get("index", position)
    if not isinstance(index, int) or isinstance(index, bool):
        raise Unfinished("a choice has no integer `index`")
    state = choices.setdefault(index, _TextChoice())
    if isinstance(raw.get("text"), str):
        state.text.append(raw["text"])
    if "logprobs" in raw:
        state.logprobs_seen = True
        if isinstance(raw["logprobs"], Mapping):
            state.logprobs = merge_logprobs(state.logprobs, raw["logprobs"])
    if raw.get("finish_reason") is not None:
        state.finish_reason = raw["finish_reason"]


def _text_choice(index: int, state: _TextChoice) -> dict[str, Any]:
    choice: dict[str, Any] = {"text": "".join(state.text), "index": index}
    if state.logprobs_seen:
        choice["logprobs"] = state.logprobs
    choice["finish_reason"] = state.finish_reason
    return choice


_RESPONSE_ENDS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def response_answer(body: bytes) -> Rebuilt:
    """A Responses API `response`: the one its terminal event (`response.completed`,
    `.incomplete` or `.failed`) carries, which is the whole answer. A server that
    sends it without `output` gets the items of its `response.output_item.done`
    events, in output order."""
    items: dict[int, Any] = {}
    for name, data in _events(body):
        if data == DONE:  # some compatible servers end with it; it adds nothing
            continue
        kind = data.get("type", name)
        if kind == "error":
            return StreamError(dict(data))
        if kind == "response.output_item.done" and isinstance(data.get("output_index"), int):
            items[data["output_index"]] = data.get("item")
        if kind in _RESPONSE_ENDS:
            response = data.get("response")
            if not isinstance(response, Mapping):
                raise Unfinished(f"`{kind}` carries no response")
            whole = copy.deepcopy(dict(response))
            if not whole.get("output") and items:
                whole["output"] = [item for _, item in sorted(items.items())]
            return whole
    raise Unfinished("the stream ended before its terminal event")


def message_answer(body: bytes) -> Rebuilt:
    """An Anthropic `message`: the one `message_start` opens, its content blocks as
    their deltas build them (text, tool input JSON, thinking and its signature,
    citations), and the `stop_reason`, `stop_sequence` and cumulative `usage` of
    `message_delta`, as the anthropic SDK's own accumulator rebuilds it."""
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    inputs: dict[int, list[str]] = {}
    for name, data in _events(body):
        kind = data.get("type", name) if isinstance(data, Mapping) else None
        if kind == "error":
            return StreamError(dict(data))
        if kind == "message_start":
            if not isinstance(data.get("message"), Mapping):
                raise Unfinished("`message_start` carries no message")
            message = copy.deepcopy(dict(data["message"]))
        elif message is None:
            if kind == "ping":
                continue
            raise Unfinished(f"`{kind}` came before `message_start`")
        elif kind == "content_block_start":
            blocks[_block_index(data)] = copy.deepcopy(dict(data.get("content_block") or {}))
        elif kind == "content_block_delta":
            index = _block_index(data)
            if index not in blocks:
                raise Unfinished(f"a delta of block {index}, which never started")
            _add_block_delta(blocks[index], inputs.setdefault(index, []), data.get("delta"))
        elif kind == "content_block_stop":
            _end_block(blocks.get(_block_index(data)), inputs.pop(_block_index(data), []))
        elif kind == "message_delta":
            _add_message_delta(message, data)
        elif kind == "message_stop":
            message["content"] = [block for _, block in sorted(blocks.items())]
            return message
    raise Unfinished("the stream ended before `message_stop`")


def _block_index(data: Mapping[str, Any]) -> int:
    index = data.get("index")
    if not isinstance(index, int) or isinstance(index, bool):
        raise Unfinished("a content block event has no integer `index`")
    return index


def _add_block_delta(block: dict[str, Any], json_parts: list[str], delta: object) -> None:
    if not isinstance(delta, Mapping):
        raise Unfinished("a `content_block_delta` carries no delta")
    kind = delta.get("type")
    if kind == "input_json_delta":
        json_parts.append(str(delta.get("partial_json") or ""))
    elif kind == "signature_delta":
        block["signature"] = delta.get("signature")
    elif kind == "citations_delta":
        block["citations"] = [*(block.get("citations") or []), delta.get("citation")]
    else:
        # text_delta, thinking_delta, and any later kind: its string fields join the
        # block's fields of the same name (`text_delta` carries `text`).
        for name, value in delta.items():
            if name != "type" and isinstance(value, str):
                block[name] = str(block.get(name) or "") + value


def _end_block(block: dict[str, Any] | None, json_parts: list[str]) -> None:
    if block is None or not json_parts:
        return
    text = "".join(json_parts)
    if text:
        try:
            block["input"] = json.loads(text)
        except ValueError as exc:
            raise Unfinished(f"a tool input is not JSON: {exc}") from None


def _add_message_delta(message: dict[str, Any], data: Mapping[str, Any]) -> None:
    delta = data.get("delta")
    if isinstance(delta, Mapping):
        message.update(delta)
    usage = data.get("usage")
    if isinstance(usage, Mapping):
        # Cumulative counts: each replaces the one before; a count left out keeps it.
        kept = message.get("usage")
        merged = dict(kept) if isinstance(kept, Mapping) else {}
        merged.update({name: value for name, value in usage.items() if value is not None})
        message["usage"] = merged
