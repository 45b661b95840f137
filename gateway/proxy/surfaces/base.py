"""What a surface (one model API the gateway scores) must say; the pipeline does the rest.

A surface knows its own wire format and nothing else: how to read a request
(model, stream flag), where the model's text sits in an answer and in stream
events, and how to write a refusal, a replacement and an error frame in its
own shape. Routing, the upstream call, scoring, decisions, storage and
telemetry are shared (`gateway.proxy.pipeline`). Surfaces are pure code.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gateway.config import Policy
from gateway.domain import Api
from gateway.errors import BadRequest, envelope
from gateway.proxy.decisions import Refusal
from gateway.scoring.outcome import Outcome
from gateway.wire.codec import loads, with_field
from gateway.wire.rebuild import Rebuilt, StreamError
from gateway.wire.sse import SSEEvent, encode_event
from gateway.wire.tools import ToolArgument
from guard.outputs import valid_text

__all__ = [
    "Facts",
    "StreamReader",
    "Surface",
    "SurfaceRequest",
    "content_text",
    "held_with_bias",
    "id_text",
    "json_int",
    "openai_error_body",
    "openai_error_status",
    "parse_object",
    "require_messages",
    "require_model",
    "require_stream_flag",
]


@dataclass(frozen=True, slots=True)
class SurfaceRequest:
    """A checked request body: the model asked for, whether it streams, the body as sent."""

    model: str
    stream: bool
    body: dict[str, Any]
    raw: bytes

    def upstream_body(self, model: str | None) -> bytes:
        """The body as received, with only the model alias rewritten."""
        if model is None or model == self.model:
            return self.raw
        try:
            return with_field(self.raw, "model", model)
        except ValueError as exc:
            raise BadRequest(f"Request body cannot be forwarded: {exc}") from exc


@dataclass(slots=True)
class Facts:
    """What telemetry reports about an answer, from a body or a stream."""

    response_id: str | None = None
    model: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None


class StreamReader(ABC):
    """Reads the text out of one surface's stream events as they pass. Pure code.

    `readable` is False once an event arrived that is not this surface's (not
    JSON, an `error` event): an enforcing gateway may not take such a stream
    for one without text. `done` is True once the stream's last event came.
    """

    def __init__(self, *, max_chars: int | None = None) -> None:
        self.max_chars = max_chars
        self.truncated = False
        self.unreadable = 0
        self.done = False

    @property
    def readable(self) -> bool:
        return not self.unreadable

    def add(self, name: str | None, data: str) -> bool:
        """Take one event (its `event:` name and `data:`); True for the stream's last event,
        which a live enforcing stream holds back until the text is judged."""
        event = self.decode(data)
        if event is None:
            return self.done
        return self.take(name, event)

    def decode(self, data: str) -> dict[str, Any] | None:
        try:
            event = loads(data)
        except ValueError:
            self.unreadable += 1
            return None
        if not isinstance(event, dict) or "error" in event or event.get("type") == "error":
            self.unreadable += 1
            return None
        return event

    @abstractmethod
    def take(self, name: str | None, event: dict[str, Any]) -> bool:
        """A decoded event; returns what `add` returns."""

    @abstractmethod
    def texts(self) -> list[str]:
        """The texts so far, one per choice or output message; empty ones left out."""

    @abstractmethod
    def facts(self) -> Facts: ...

    def has_tool_calls(self) -> bool:
        """Whether a tool call has begun in the stream (`gateway.wire.tools`)."""
        return False

    def tool_arguments(self) -> list[ToolArgument]:
        """The string values of the stream's tool-call arguments so far."""
        return []

    def clip(self, kept: int, text: str) -> str:
        """`text` cut so a text that already has `kept` characters stays within `max_chars`."""
        if self.max_chars is not None and kept + len(text) > self.max_chars:
            self.truncated = True
            return text[: max(0, self.max_chars - kept)]
        return text


class Surface(ABC):
    """One model API: its route, its upstream path and its wire format."""

    name: ClassVar[Api]  # the store's `api` value, e.g. "responses"
    route: ClassVar[str]  # the gateway's path, e.g. "/v1/responses"
    upstream_path: ClassVar[str]  # appended to the upstream's base URL
    operation: ClassVar[str] = "chat"  # gen_ai.operation.name of the upstream call
    forwarded_headers: ClassVar[tuple[str, ...]] = ("openai-organization", "openai-project")

    @abstractmethod
    def parse(self, raw: bytes) -> SurfaceRequest:
        """Check a request body; raise `BadRequest` naming the field at fault."""

    @abstractmethod
    def input_messages(self, body: Mapping[str, Any]) -> object:
        """The request's input, for span attributes under content capture."""

    def prompt_text(self, body: Mapping[str, Any]) -> str:
        """The request's input as text, for the store under content capture."""
        value = self.input_messages(body)
        return valid_text(value if isinstance(value, str) else _joined_text(value))

    @abstractmethod
    def readable(self, body: object) -> bool:
        """Whether a whole answer has this surface's shape (anything else is refused)."""

    @abstractmethod
    def texts(self, body: Mapping[str, Any]) -> list[str]:
        """The texts of a readable answer, one per choice or output message."""

    @abstractmethod
    def facts(self, body: Mapping[str, Any]) -> Facts: ...

    def tool_arguments(self, body: Mapping[str, Any]) -> list[ToolArgument]:
        """The string values of a readable answer's tool-call arguments."""
        return []

    @abstractmethod
    def reader(self, *, max_chars: int | None) -> StreamReader: ...

    @abstractmethod
    def replaced(self, body: Mapping[str, Any], policy: Policy) -> dict[str, Any]:
        """A whole answer with the refusal text in place of the model's."""

    @abstractmethod
    def refusal_stream(self, reader: StreamReader, policy: Policy) -> bytes:
        """A whole stream carrying the refusal text, for a buffered stream replaced."""

    @abstractmethod
    def trailer(self, outcome: Outcome, reader: StreamReader, held: list[SSEEvent]) -> bytes:
        """The end of a live stream that passed: the score, then the held-back last event."""

    # Whether a whole answer can be rebuilt from this surface's stream (`rebuild`), and
    # whether a stream includes its usage only when `stream_options` asks (the choice
    # APIs; Responses and Messages send it in their last events anyway).
    rebuilds: ClassVar[bool] = False
    usage_option: ClassVar[bool] = False

    def stream_request(self, parsed: SurfaceRequest, model: str | None) -> bytes | None:
        """The request for this whole answer as a stream with its usage (`prejudge:
        stream`), or None when it is asked for whole. A request naming `stream_options`
        goes as it is, so that the upstream answers it as it would have."""
        if not self.rebuilds or parsed.stream or "stream_options" in parsed.body:
            return None
        try:
            raw = with_field(parsed.upstream_body(model), "stream", True)
            if self.usage_option:
                raw = with_field(raw, "stream_options", {"include_usage": True})
        except (ValueError, BadRequest):
            return None  # too deep to re-encode: sent as it came, and answered as it is
        return raw

    def rebuild(self, body: bytes) -> Rebuilt:
        """The whole answer a streamed `body` rebuilds (`gateway.wire.rebuild`); raises
        `Unfinished` when it cannot."""
        raise NotImplementedError(f"{self.name} answers are not rebuilt from streams")

    def stream_error(self, error: StreamError) -> tuple[int, dict[str, Any]]:
        """The status and body the upstream answers a whole request with, for the error
        event that ended its stream: OpenAI's `{"error": ...}` envelope."""
        inner = error.body.get("error")
        if not isinstance(inner, Mapping):  # the Responses API's flat `error` event
            code = error.body.get("code")
            message = inner if isinstance(inner, str) else error.body.get("message")
            inner = {
                "message": message,
                "type": code if isinstance(code, str) and code else "server_error",
                "param": error.body.get("param"),
                "code": error.body.get("code"),
            }
        return openai_error_status(inner), {"error": dict(inner)}

    def error_body(self, refusal: Refusal) -> dict[str, Any]:
        return openai_error_body(refusal)

    def error_frame(self, refusal: Refusal) -> bytes:
        """The SSE event that ends a live stream with an error; SDKs raise on it."""
        return encode_event(json.dumps(self.error_body(refusal)))


def held_with_bias(held: list[SSEEvent], details: dict[str, Any]) -> bytes:
    """Held-back events re-sent with a `bias` object added; SDKs keep unknown fields."""
    frames = []
    for event in held:
        try:
            data = with_field(event.data.encode(), "bias", details).decode()
        except ValueError:
            data = event.data
        frames.append(encode_event(data, event=event.event))
    return b"".join(frames)


def openai_error_body(refusal: Refusal) -> dict[str, Any]:
    return envelope(
        refusal.message,
        type=refusal.type,
        code=refusal.code,
        param=refusal.param,
        **refusal.extra(),
    )


# The HTTP status an OpenAI error of this `type` (or `code`) comes with; a stream's
# error event carries none (https://platform.openai.com/docs/guides/error-codes).
_OPENAI_STATUSES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "invalid_api_key": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "model_not_found": 404,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "tokens": 429,
    "requests": 429,
    "server_error": 500,
    "service_unavailable": 503,
}


def openai_error_status(error: Mapping[str, Any]) -> int:
    """The status of an OpenAI error object, by its type then its code; 500 unknown."""
    for name in ("type", "code"):
        status = _OPENAI_STATUSES.get(str(error.get(name)))
        if status is not None:
            return status
    return 500


def parse_object(raw: bytes) -> dict[str, Any]:
    try:
        body = loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"Request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequest("Request body must be a JSON object.")
    return body


def require_model(body: Mapping[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("`model` is required and must be a non-empty string.", param="model")
    if valid_text(model) != model:
        # A lone surrogate, escaped in valid JSON: no upstream has such a model, and the
        # name would go on into metric labels, log lines and the store.
        raise BadRequest("`model` must be valid Unicode text.", param="model")
    return model


def require_messages(body: Mapping[str, Any]) -> None:
    """`messages`: a non-empty array of objects (chat completions and Anthropic alike)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("`messages` is required and must be a non-empty array.", param="messages")
    if not all(isinstance(message, dict) for message in messages):
        raise BadRequest("Each entry of `messages` must be an object.", param="messages")


def require_stream_flag(body: Mapping[str, Any]) -> bool:
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise BadRequest("`stream` must be a boolean.", param="stream")
    return bool(stream)


def usage_facts(body: Mapping[str, Any], finish: str) -> Facts:
    """The facts of an answer whose `usage` counts `input_tokens` and `output_tokens`
    and whose `finish` field says why it ended (Responses' `status`, Messages'
    `stop_reason`)."""
    usage = body.get("usage") if isinstance(body.get("usage"), Mapping) else {}
    assert isinstance(usage, Mapping)
    reason = body.get(finish)
    return Facts(
        response_id=id_text(body.get("id")),
        model=id_text(body.get("model")),
        finish_reasons=[reason] if isinstance(reason, str) else [],
        input_tokens=json_int(usage.get("input_tokens")),
        output_tokens=json_int(usage.get("output_tokens")),
    )


def id_text(value: object) -> str | None:
    """An answer's `id` (or `model`) as text: numbers are spelled out, other types dropped."""
    if isinstance(value, str):
        return valid_text(value) or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def json_int(value: object) -> int | None:
    # bool is a subclass of int, but JSON's true is no number here.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _joined_text(value: object) -> str:
    """`role: text` lines of a message list; only text, since `str()` of a hostile nested
    list would recurse without bound."""
    if not isinstance(value, list):
        return ""
    lines = []
    for message in value:
        if isinstance(message, dict):
            lines.append(f"{message.get('role')}: {content_text(message.get('content'))}")
        elif isinstance(message, str):
            lines.append(message)
    return "\n\n".join(lines)


def content_text(content: object, *, separator: str = "") -> str:
    """The text of a message's `content`: a string, or the `text` of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return separator.join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""
