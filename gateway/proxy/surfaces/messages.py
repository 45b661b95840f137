"""`POST /v1/messages`: Anthropic's Messages API, for the `anthropic` SDK and its tools.

The judged text is the answer's `text` content blocks, joined. A stream is
named events (`message_start`, `content_block_start`, `content_block_delta`
with `text_delta`, …, `message_delta`, `message_stop`); `message_stop` is the
event a live enforcing stream holds back. Errors take Anthropic's shape,
`{"type": "error", "error": {"type", "message"}}`, so the SDK raises.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gateway.config import Policy
from gateway.proxy.decisions import Refusal, bias_details
from gateway.proxy.surfaces.base import (
    Facts,
    StreamReader,
    Surface,
    SurfaceRequest,
    held_with_bias,
    id_text,
    json_int,
    parse_object,
    require_messages,
    require_model,
    require_stream_flag,
    usage_facts,
)
from gateway.scoring.outcome import Outcome
from gateway.wire.parts import TextParts
from gateway.wire.rebuild import Rebuilt, StreamError, message_answer
from gateway.wire.sse import SSEEvent, encode_event
from gateway.wire.tools import MessageToolCalls, ToolArgument, message_tool_arguments

__all__ = ["Messages", "MessagesReader", "anthropic_error_type"]

# Anthropic's error types by HTTP status (https://docs.anthropic.com/en/api/errors).
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
# The gateway's own decisions keep their names on every surface.
_OWN_TYPES = frozenset({"bias_policy_violation", "bias_judge_error"})
_STATUSES = {kind: status for status, kind in _ERROR_TYPES.items()} | {"api_error": 500}


def anthropic_error_type(refusal: Refusal) -> str:
    if refusal.type in _OWN_TYPES:
        return refusal.type
    return _ERROR_TYPES.get(refusal.status, "api_error")


def _text_of(content: object) -> str:
    blocks = content if isinstance(content, list) else []
    return "\n".join(
        block["text"]
        for block in blocks
        if isinstance(block, Mapping)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and block["text"]
    )


class MessagesReader(StreamReader):
    def __init__(self, *, max_chars: int | None = None) -> None:
        super().__init__(max_chars=max_chars)
        self._blocks: dict[int, TextParts] = {}
        self._chars = 0
        self._facts = Facts()
        self._calls = MessageToolCalls()

    def take(self, name: str | None, event: dict[str, Any]) -> bool:
        kind = event.get("type")
        if not isinstance(kind, str):
            self.unreadable += 1
            return False
        facts = self._facts
        if kind == "message_start" and isinstance(event.get("message"), Mapping):
            message = event["message"]
            facts.response_id = id_text(message.get("id"))
            facts.model = id_text(message.get("model"))
            self._usage(message.get("usage"))
        elif kind == "content_block_start":
            block = event.get("content_block")
            if isinstance(block, Mapping) and block.get("type") == "text":
                self._text(event.get("index"), block.get("text"))
            self._calls.take(kind, json_int(event.get("index")), event)
        elif kind == "content_block_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping) and delta.get("type") == "text_delta":
                self._text(event.get("index"), delta.get("text"))
            else:
                self._calls.take(kind, json_int(event.get("index")), event)
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping) and isinstance(delta.get("stop_reason"), str):
                facts.finish_reasons = [delta["stop_reason"]]
            self._usage(event.get("usage"))
        elif kind == "message_stop":
            self.done = True
            return True
        return False

    def _text(self, index: object, text: object) -> None:
        position = json_int(index)
        if position is None or not isinstance(text, str) or not text:
            return
        # The blocks are joined with "\n", which counts towards `max_chars` too.
        separator = 1 if self._blocks and position not in self._blocks else 0
        text = self.clip(self._chars + separator, text)
        if not text:
            return
        parts = self._blocks.get(position)
        if parts is None:
            parts = self._blocks[position] = TextParts()
        parts.append(text)
        self._chars += separator + len(text)

    def _usage(self, usage: object) -> None:
        if not isinstance(usage, Mapping):
            return
        if json_int(usage.get("input_tokens")) is not None:
            self._facts.input_tokens = usage["input_tokens"]
        if json_int(usage.get("output_tokens")) is not None:
            self._facts.output_tokens = usage["output_tokens"]

    def texts(self) -> list[str]:
        text = "\n".join(parts.text() for _, parts in sorted(self._blocks.items()))
        return [text] if text else []

    def facts(self) -> Facts:
        return self._facts

    def has_tool_calls(self) -> bool:
        return self._calls.started

    def tool_arguments(self) -> list[ToolArgument]:
        return self._calls.arguments()


class Messages(Surface):
    name = "messages"
    route = "/v1/messages"
    upstream_path = "/v1/messages"  # Anthropic's base URL has no /v1
    forwarded_headers = ("anthropic-version", "anthropic-beta")
    rebuilds = True

    def rebuild(self, body: bytes) -> Rebuilt:
        return message_answer(body)

    def stream_error(self, error: StreamError) -> tuple[int, dict[str, Any]]:
        """An `error` event is the body of the same error answered whole; its type gives
        the status (an `overloaded_error` is Anthropic's 529)."""
        inner = error.body.get("error")
        kind = inner.get("type") if isinstance(inner, Mapping) else None
        return _STATUSES.get(str(kind), 500), error.body

    def parse(self, raw: bytes) -> SurfaceRequest:
        body = parse_object(raw)
        model = require_model(body)
        require_messages(body)
        return SurfaceRequest(model, require_stream_flag(body), body, raw)

    def input_messages(self, body: Mapping[str, Any]) -> object:
        return body.get("messages")

    def readable(self, body: object) -> bool:
        if not isinstance(body, Mapping) or not isinstance(body.get("content"), list):
            return False
        return all(isinstance(block, Mapping) for block in body["content"])

    def texts(self, body: Mapping[str, Any]) -> list[str]:
        text = _text_of(body.get("content"))
        return [text] if text else []

    def facts(self, body: Mapping[str, Any]) -> Facts:
        return usage_facts(body, "stop_reason")

    def tool_arguments(self, body: Mapping[str, Any]) -> list[ToolArgument]:
        return message_tool_arguments(body)

    def reader(self, *, max_chars: int | None) -> MessagesReader:
        return MessagesReader(max_chars=max_chars)

    def replaced(self, body: Mapping[str, Any], policy: Policy) -> dict[str, Any]:
        refused = dict(body)
        refused.update(
            content=[{"type": "text", "text": policy.refusal_text}],
            stop_reason="refusal",
            stop_sequence=None,
        )
        return refused

    def refusal_stream(self, reader: StreamReader, policy: Policy) -> bytes:
        facts = reader.facts()
        message: dict[str, Any] = {
            "id": facts.response_id or "msg_refused",
            "type": "message",
            "role": "assistant",
            "model": facts.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": facts.input_tokens or 0, "output_tokens": 0},
        }
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": message},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": policy.refusal_text},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "refusal", "stop_sequence": None},
                "usage": {"output_tokens": 0},
            },
            {"type": "message_stop"},
        ]
        return b"".join(encode_event(json.dumps(event), event=event["type"]) for event in events)

    def trailer(self, outcome: Outcome, reader: StreamReader, held: list[SSEEvent]) -> bytes:
        """The held-back `message_stop`, with a `bias` object added (the SDK keeps extras)."""
        return held_with_bias(held, bias_details(outcome))

    def error_body(self, refusal: Refusal) -> dict[str, Any]:
        error: dict[str, Any] = {
            "type": anthropic_error_type(refusal),
            "message": refusal.message,
            "code": refusal.code,
            **refusal.extra(),
        }
        return {"type": "error", "error": error}

    def error_frame(self, refusal: Refusal) -> bytes:
        return encode_event(json.dumps(self.error_body(refusal)), event="error")
