"""What a scoring is about: `ScoreRequest`. Pure data; what it came to is `decisions.Outcome`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext

from gateway.config import Policy

__all__ = ["ScoreRequest"]


@dataclass(slots=True)
class ScoreRequest:
    """What is known about the request whose response is being scored."""

    run_id: str
    policy: Policy
    mode: str
    policy_name: str = "default"  # the key under `policies`, for a scorer elsewhere
    model: str | None = None
    api: str = "chat.completions"  # the surface the response came from (`gateway.surfaces`)
    key_name: str | None = None
    stream: bool = False
    partial: bool = False
    truncated: bool = False  # the judged text was cut at `judge.max_text_chars`
    request_id: str | None = None
    response_id: str | None = None
    prompt: str | None = None  # set only when content capture is on
    chat_span: SpanContext | None = None
    created_at: float = field(default_factory=time.time)
    holds_room: bool = False  # a place in the queue is reserved (`Scoring.reservation`)

    def chat_context(self) -> Context | None:
        if self.chat_span is None:
            return None
        return trace.set_span_in_context(NonRecordingSpan(self.chat_span))
