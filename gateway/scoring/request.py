"""What a scoring is about: `ScoreRequest`, and its durable form for a scorer elsewhere.

Pure data; what a scoring came to is `gateway.scoring.outcome.Outcome`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext

from gateway.config import Policy, Settings
from gateway.domain import APIS, Api, Mode
from gateway.store import ScoreRecord
from gateway.wire.tools import ToolArgument, with_tool_lines
from gateway.work.payload import WorkPayload
from guard.outputs import valid_text

__all__ = [
    "ScoreRequest",
    "as_judged",
    "job_from",
    "stored_job",
    "with_tool_arguments",
    "work_for",
]


@dataclass(frozen=True, slots=True)
class ScoreRequest:
    """What is known about the request whose response is being scored. A value: what is
    learnt later (the response's id, a cut) makes a new one (`dataclasses.replace`)."""

    run_id: str
    policy: Policy
    mode: Mode
    policy_name: str = "default"  # the key under `policies`, for a scorer elsewhere
    model: str | None = None
    api: Api = "chat.completions"  # the API the scored text came through
    key_name: str | None = None
    stream: bool = False
    partial: bool = False
    truncated: bool = False  # the judged text was cut at `judge.max_text_chars`
    request_id: str | None = None
    response_id: str | None = None
    prompt: str | None = None  # set only when content capture is on
    chat_span: SpanContext | None = None
    created_at: float = field(default_factory=time.time)
    # The share of its key's responses scored when it came, while overload shed the
    # rest (`gateway.scoring.shedding`); None when all were.
    sample_rate: float | None = None
    # The tool-call arguments judged with the answer's text (`judge_tool_arguments`).
    tool_arguments: tuple[ToolArgument, ...] = ()

    def chat_context(self) -> Context | None:
        if self.chat_span is None:
            return None
        return trace.set_span_in_context(NonRecordingSpan(self.chat_span))


def as_judged(
    request: ScoreRequest, texts: list[str], limit: int | None
) -> tuple[ScoreRequest, list[str]]:
    """The texts as the judge will see them (valid Unicode, at most `limit` characters
    each), and the request, marked `truncated` when they were cut."""
    if limit is not None and any(len(text) > limit for text in texts):
        request = replace(request, truncated=True)
        texts = [text[:limit] for text in texts]
    return request, [valid_text(text) for text in texts]


def with_tool_arguments(
    request: ScoreRequest, texts: list[str], arguments: Sequence[ToolArgument]
) -> tuple[ScoreRequest, list[str]]:
    """An answer's texts with its tool-call arguments' lines after them, and the request
    that knows those arguments (for the record), when its policy judges them
    (`judge_tool_arguments`); otherwise both as they are."""
    if not request.policy.judge_tool_arguments or not arguments:
        return request, texts
    return replace(request, tool_arguments=tuple(arguments)), with_tool_lines(texts, arguments)


def work_for(request: ScoreRequest, texts: list[str]) -> dict[str, Any]:
    """The work a pending record carries for `request`, whose judged `texts` these are."""
    return WorkPayload(
        texts, request.policy_name, request.chat_span, request.tool_arguments
    ).encode()


def job_from(record: ScoreRecord, settings: Settings) -> tuple[ScoreRequest, list[str]]:
    """The job and texts a claimed record holds, under `settings`' policies (a policy
    this process does not define falls back to its default one). Raises `WorkError`."""
    work = WorkPayload.decode(record.work, record.run_id)
    job = stored_job(record, settings, policy=work.policy, chat_span=work.trace)
    return replace(job, tool_arguments=work.tool_arguments), work.texts


def stored_job(
    record: ScoreRecord,
    settings: Settings,
    *,
    policy: str | None = None,
    chat_span: SpanContext | None = None,
) -> ScoreRequest:
    """The job a record's stored facts describe (a monitor job)."""
    name = policy if policy in settings.policies else settings.default_policy
    assert name is not None
    return ScoreRequest(
        run_id=record.run_id,
        policy=settings.policies[name],
        policy_name=name,
        mode="monitor",
        model=record.model,
        api=record.api if record.api in APIS else "chat.completions",
        key_name=record.key_name,
        stream=record.stream,
        partial=record.partial,
        truncated=record.truncated,
        request_id=record.request_id,
        response_id=record.response_id,
        prompt=record.prompt,
        chat_span=chat_span,
        created_at=record.created_at,
        sample_rate=record.sample_rate,
    )
