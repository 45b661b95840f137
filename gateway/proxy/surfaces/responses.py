"""`POST /v1/responses`: OpenAI's Responses API.

The judged texts are the `output_text` parts of each output message, one text
per message. A stream is a sequence of named events (`response.created`, …,
`response.output_text.delta`, …, `response.completed`); the text is assembled
from the deltas, and the terminal event (`response.completed`, `.incomplete`
or `.failed`) is the one a live enforcing stream holds back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from gateway.config import Policy
from gateway.errors import BadRequest
from gateway.proxy.decisions import Refusal, bias_details
from gateway.proxy.surfaces.base import (
    Facts,
    StreamReader,
    Surface,
    SurfaceRequest,
    held_with_bias,
    json_int,
    openai_error_body,
    parse_object,
    require_model,
    require_stream_flag,
    usage_facts,
)
from gateway.scoring.outcome import Outcome
from gateway.wire.parts import TextParts
from gateway.wire.rebuild import Rebuilt, response_answer
from gateway.wire.sse import SSEEvent, encode_event
from gateway.wire.tools import ResponseToolCalls, ToolArgument, response_tool_arguments

__all__ = ["Responses", "ResponsesReader"]

TERMINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})
# The events that build a tool call (`gateway.wire.tools.ResponseToolCalls`).
_CALL_EVENTS = (
    "response.output_item.",
    "response.function_call_arguments.",
    "response.custom_tool_call_input.",
)


def _output_texts(output: object) -> list[str]:
    if not isinstance(output, list):
        return []
    texts = []
    for item in output:
        if not isinstance(item, Mapping) or item.get("type") != "message":
            continue
        content = item.get("content")
        parts = content if isinstance(content, list) else []
        text = "".join(
            part["text"]
            for part in parts
            if isinstance(part, Mapping)
            and part.get("type") == "output_text"
            and isinstance(part.get("text"), str)
        )
        if text:
            texts.append(text)
    return texts


class ResponsesReader(StreamReader):
    def __init__(self, *, max_chars: int | None = None) -> None:
        super().__init__(max_chars=max_chars)
        self._deltas: dict[int, TextParts] = {}
        self._chars: dict[int, int] = {}
        self._done_texts: dict[
            int, str
        ] = {}  # from `output_text.done`, for servers that skip deltas
        self._facts = Facts()
        self._calls = ResponseToolCalls()
        self.sequence = 0  # the last sequence number seen

    def take(self, name: str | None, event: dict[str, Any]) -> bool:
        kind = event.get("type")
        if not isinstance(kind, str):
            self.unreadable += 1
            return False
        sequence = json_int(event.get("sequence_number"))
        if sequence is not None:
            self.sequence = max(self.sequence, sequence)
        response = event.get("response")
        if isinstance(response, Mapping):
            self._learn(response)
        index = json_int(event.get("output_index"))
        if kind == "response.output_text.delta" and index is not None:
            delta = event.get("delta")
            if isinstance(delta, str) and delta:
                kept = self._chars.get(index, 0)
                delta = self.clip(kept, delta)
                parts = self._deltas.get(index)
                if parts is None:
                    parts = self._deltas[index] = TextParts()
                parts.append(delta)
                self._chars[index] = kept + len(delta)
        elif (
            kind == "response.output_text.done"
            and index is not None
            and isinstance(event.get("text"), str)
            and index not in self._deltas  # only for a text that came without deltas
        ):
            # Cut here, so `truncated` is known before the texts are read.
            self._done_texts[index] = self.clip(0, event["text"])
        elif kind.startswith(_CALL_EVENTS):
            self._calls.take(kind, index, event)
        if kind in TERMINAL_EVENTS:
            self.done = True
            return True
        return False

    def _learn(self, response: Mapping[str, Any]) -> None:
        learned = usage_facts(response, "status")
        facts = self._facts
        facts.response_id = facts.response_id or learned.response_id
        facts.model = facts.model or learned.model
        facts.finish_reasons = learned.finish_reasons or facts.finish_reasons
        if learned.input_tokens is not None:
            facts.input_tokens = learned.input_tokens
        if learned.output_tokens is not None:
            facts.output_tokens = learned.output_tokens

    def texts(self) -> list[str]:
        indexes = sorted({*self._deltas, *self._done_texts})
        texts = []
        for index in indexes:
            parts = self._deltas.get(index)
            text = parts.text() if parts else self._done_texts.get(index, "")
            if text:
                texts.append(text)
        return texts

    def facts(self) -> Facts:
        return self._facts

    def has_tool_calls(self) -> bool:
        return self._calls.started

    def tool_arguments(self) -> list[ToolArgument]:
        return self._calls.arguments()


class Responses(Surface):
    name = "responses"
    route = "/v1/responses"
    upstream_path = "/responses"
    rebuilds = True

    def rebuild(self, body: bytes) -> Rebuilt:
        return response_answer(body)

    def parse(self, raw: bytes) -> SurfaceRequest:
        body = parse_object(raw)
        model = require_model(body)
        if "input" in body and not isinstance(body["input"], str | list):
            raise BadRequest("`input` must be a string or an array of items.", param="input")
        if body.get("background") is True:
            # The answer would come later from GET /v1/responses/{id}, which is not scored.
            raise BadRequest(
                "`background: true` is not supported: its answer could not be scored.",
                param="background",
            )
        return SurfaceRequest(model, require_stream_flag(body), body, raw)

    def input_messages(self, body: Mapping[str, Any]) -> object:
        return body.get("input")

    def readable(self, body: object) -> bool:
        if not isinstance(body, Mapping) or not isinstance(body.get("output"), list):
            return False
        for item in body["output"]:
            if not isinstance(item, Mapping):
                return False
            if item.get("type") == "message" and not isinstance(item.get("content"), list):
                return False
        return True

    def texts(self, body: Mapping[str, Any]) -> list[str]:
        return _output_texts(body.get("output"))

    def facts(self, body: Mapping[str, Any]) -> Facts:
        return usage_facts(body, "status")

    def tool_arguments(self, body: Mapping[str, Any]) -> list[ToolArgument]:
        return response_tool_arguments(body)

    def reader(self, *, max_chars: int | None) -> ResponsesReader:
        return ResponsesReader(max_chars=max_chars)

    def replaced(self, body: Mapping[str, Any], policy: Policy) -> dict[str, Any]:
        refused = dict(body)
        first = next((item for item in body.get("output") or [] if isinstance(item, Mapping)), {})
        refused.update(
            status="incomplete",
            incomplete_details={"reason": "content_filter"},
            output=[_message(str(first.get("id") or "msg_refused"), policy.refusal_text)],
        )
        if "output_text" in refused:  # a convenience field some servers add
            refused["output_text"] = policy.refusal_text
        return refused

    def refusal_stream(self, reader: StreamReader, policy: Policy) -> bytes:
        facts = reader.facts()
        response_id = facts.response_id or "resp_refused"
        item_id = "msg_refused"
        text = policy.refusal_text
        shell = {
            "id": response_id,
            "object": "response",
            "created_at": int(time.time()),
            "model": facts.model,
            "status": "in_progress",
            "output": [],
            "error": None,
            "incomplete_details": None,
        }
        done = {
            **shell,
            "status": "incomplete",
            "incomplete_details": {"reason": "content_filter"},
            "output": [_message(item_id, text)],
        }
        part = {"type": "output_text", "text": "", "annotations": []}
        at = {"item_id": item_id, "output_index": 0, "content_index": 0}
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"response": shell}),
            ("response.in_progress", {"response": shell}),
            (
                "response.output_item.added",
                {"output_index": 0, "item": {**_message(item_id, ""), "content": []}},
            ),
            ("response.content_part.added", {**at, "part": part}),
            ("response.output_text.delta", {**at, "delta": text, "logprobs": []}),
            ("response.output_text.done", {**at, "text": text, "logprobs": []}),
            ("response.content_part.done", {**at, "part": {**part, "text": text}}),
            ("response.output_item.done", {"output_index": 0, "item": _message(item_id, text)}),
            ("response.incomplete", {"response": done}),
        ]
        return b"".join(
            _event(kind, {"type": kind, **fields, "sequence_number": number})
            for number, (kind, fields) in enumerate(events)
        )

    def trailer(self, outcome: Outcome, reader: StreamReader, held: list[SSEEvent]) -> bytes:
        """The held-back terminal event, with a `bias` object added (SDKs keep extra fields)."""
        return held_with_bias(held, bias_details(outcome))

    def error_frame(self, refusal: Refusal) -> bytes:
        """An `error` event in the Responses shape, also carrying the OpenAI envelope's
        `error`, which is what makes the openai SDK raise mid-stream."""
        body = {
            "type": "error",
            "code": refusal.code,
            "message": refusal.message,
            "param": refusal.param,
            **openai_error_body(refusal),
        }
        return _event("error", body)


def _message(item_id: str, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "status": "completed" if text else "in_progress",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _event(kind: str, body: dict[str, Any]) -> bytes:
    return encode_event(json.dumps(body), event=kind)
