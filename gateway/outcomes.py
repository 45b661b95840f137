"""What a scoring is about (`ScoreRequest`) and what it came to (`Outcome`). Pure data."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext

from gateway.config import Policy
from gateway.policy import Verdict
from guard import BiasResult

__all__ = ["Outcome", "OutcomeStatus", "ReasonStatus", "ScoreRequest"]

OutcomeStatus = Literal["pending", "scored", "error", "skipped", "dropped"]
# Where the explanation of a score stands: `pending` while a deferred one is
# generated, `done`, `off` (not asked for), `error` (the judge failed it),
# `skipped` (too many waiting) or `dropped` (the gateway stopped first).
ReasonStatus = Literal["pending", "done", "off", "error", "skipped", "dropped"]


@dataclass(slots=True)
class ScoreRequest:
    """What is known about the request whose response is being scored."""

    run_id: str
    policy: Policy
    mode: str
    model: str | None = None
    key_name: str | None = None
    stream: bool = False
    partial: bool = False
    truncated: bool = False  # the judged text was cut at `judge.max_text_chars`
    request_id: str | None = None
    response_id: str | None = None
    prompt: str | None = None  # set only when content capture is on
    chat_span: SpanContext | None = None
    created_at: float = field(default_factory=time.time)
    holds_room: bool = False  # a place in the queue is reserved for it (`Scoring.admit`)

    def chat_context(self) -> Context | None:
        if self.chat_span is None:
            return None
        return trace.set_span_in_context(NonRecordingSpan(self.chat_span))


@dataclass(slots=True)
class Outcome:
    run_id: str
    status: OutcomeStatus
    score: float | None = None
    verdict: Verdict | None = None
    reason: str | None = None
    status_reason: str | None = None  # skip reason, or the judge error's type
    result: BiasResult | None = None
    judge_ms: float | None = None
    cached: bool = False  # the verdicts came from the content-hash cache
    reason_status: ReasonStatus | None = None  # for scored outcomes
    text_index: int = 0  # which of the request's texts (choices) decided the score
