"""Durable monitor work: what a pending record holds so that any process can score it.

A monitored response is stored `pending` with its `work`: the texts as the
judge will see them, the name of the policy it follows and the trace context of
its request. Whoever scores it (the gateway that took the request, or a
`bias-gateway scorer` process) holds a lease on the record (`leased_by`,
`lease_until`) and renews it while it works. The final write erases the work; a
final status, once written, is never overwritten (`records.upsert_sql`).

A process that dies leaves its leases to lapse; then another takes the work
(`attempts` counts the claims, `queue.max_attempts` bounds them). A graceful
stop gives its leases back at once (`Store.release`), unspent. On SQLite a
restarting gateway takes back every lease (`SQLiteStore.start`).

`work_for` and `job_from` are pure; `gateway.claims` does the claiming.
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any

from opentelemetry.trace import SpanContext, TraceFlags

from gateway.config import Settings
from gateway.jobs import ScoreRequest
from gateway.store import ScoreRecord

__all__ = ["WORK_VERSION", "WorkError", "job_from", "stored_job", "work_for", "worker_id"]

WORK_VERSION = 1


class WorkError(ValueError):
    """A record's work cannot be read (a newer gateway's, or damaged)."""


def worker_id() -> str:
    """This process's name on its leases: host, pid and a random part (a pid is reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def work_for(request: ScoreRequest, texts: list[str]) -> dict[str, Any]:
    """The work a pending record carries for `request`, whose judged `texts` these are."""
    work: dict[str, Any] = {"v": WORK_VERSION, "texts": texts, "policy": request.policy_name}
    span = request.chat_span
    if span is not None and span.is_valid:
        work["trace"] = {
            "trace_id": f"{span.trace_id:032x}",
            "span_id": f"{span.span_id:016x}",
            "flags": int(span.trace_flags),
        }
    return work


def job_from(record: ScoreRecord, settings: Settings) -> tuple[ScoreRequest, list[str]]:
    """The job and texts a claimed record holds, under `settings`' policies (a policy
    this process does not define falls back to its default one)."""
    work = record.work
    if not isinstance(work, dict) or work.get("v") != WORK_VERSION:
        raise WorkError(f"run {record.run_id}: unreadable work (version {_version(work)})")
    texts = work.get("texts")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise WorkError(f"run {record.run_id}: work holds no texts")
    name = work.get("policy")
    job = stored_job(
        record, settings, policy=name if isinstance(name, str) else None, trace=work.get("trace")
    )
    return job, texts


def stored_job(
    record: ScoreRecord, settings: Settings, *, policy: str | None = None, trace: object = None
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
        api=record.api or "chat.completions",
        key_name=record.key_name,
        stream=record.stream,
        partial=record.partial,
        truncated=record.truncated,
        request_id=record.request_id,
        response_id=record.response_id,
        prompt=record.prompt,
        chat_span=_span(trace),
        created_at=record.created_at,
    )


def _version(work: object) -> object:
    return work.get("v") if isinstance(work, dict) else None


def _span(trace: object) -> SpanContext | None:
    if not isinstance(trace, dict):
        return None
    try:
        context = SpanContext(
            trace_id=int(trace["trace_id"], 16),
            span_id=int(trace["span_id"], 16),
            is_remote=True,
            trace_flags=TraceFlags(int(trace.get("flags", 0))),
        )
    except (KeyError, TypeError, ValueError):
        return None
    return context if context.is_valid else None
