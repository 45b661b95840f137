"""Durable monitor work: what a pending record holds so that any process can score it.

A monitored response is stored `pending` with its `work`: the texts as the
judge will see them, the name of the policy it follows, the trace context of
its request and the tool-call arguments among the texts (for the record's
`toolArguments` and `opinionSources`). Whoever scores it (the gateway that took the request, or a
`bias-gateway scorer` process) holds a lease on the record (`leased_by`,
`lease_until`) and renews it while it works. The final write erases the work; a
final status, once written, is never overwritten (`dialect.upsert_sql`).

A process that dies leaves its leases to lapse; then another takes the work
(`attempts` counts the claims, `queue.max_attempts` bounds them). A graceful
stop gives its leases back at once (`Store.release`), unspent. On SQLite a
restarting gateway takes back every lease (`SQLiteStore.open`).

`WorkPayload` is pure; `gateway.work.claims` does the claiming, and
`gateway.scoring.request` turns a claimed record back into a scoring request.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import SpanContext, TraceFlags

from gateway.wire.tools import ToolArgument

__all__ = ["WORK_VERSION", "WorkError", "WorkPayload", "worker_id"]

WORK_VERSION = 1


class WorkError(ValueError):
    """A record's work cannot be read (a newer gateway's, or damaged)."""


def worker_id() -> str:
    """This process's name on its leases: host, pid and a random part (a pid is reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True, slots=True)
class WorkPayload:
    """What a pending record carries: the judged texts, its policy's name, its trace, the
    tool-call arguments judged among the texts."""

    texts: list[str]
    policy: str | None = None
    trace: SpanContext | None = None
    tool_arguments: tuple[ToolArgument, ...] = ()

    def encode(self) -> dict[str, Any]:
        """The stored form (`ScoreRecord.work`)."""
        work: dict[str, Any] = {"v": WORK_VERSION, "texts": self.texts, "policy": self.policy}
        if self.tool_arguments:
            work["tool_arguments"] = [
                [argument.tool, argument.argument, argument.value]
                for argument in self.tool_arguments
            ]
        span = self.trace
        if span is not None and span.is_valid:
            work["trace"] = {
                "trace_id": f"{span.trace_id:032x}",
                "span_id": f"{span.span_id:016x}",
                "flags": int(span.trace_flags),
            }
        return work

    @classmethod
    def decode(cls, work: object, run_id: str) -> WorkPayload:
        """Read a stored payload; `WorkError` names what is wrong with it."""
        if not isinstance(work, dict) or work.get("v") != WORK_VERSION:
            raise WorkError(f"run {run_id}: unreadable work (version {_version(work)})")
        texts = work.get("texts")
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise WorkError(f"run {run_id}: work holds no texts")
        name = work.get("policy")
        return cls(
            texts,
            name if isinstance(name, str) else None,
            span_of(work.get("trace")),
            _tool_arguments(work.get("tool_arguments")),
        )


def _tool_arguments(stored: object) -> tuple[ToolArgument, ...]:
    """The stored `[tool, argument, value]` triples. Like a damaged trace, damaged ones
    are left out, not fatal: the texts still hold their lines, and are judged."""
    if not isinstance(stored, list) or not all(
        isinstance(item, list) and len(item) == 3 and all(isinstance(part, str) for part in item)
        for item in stored
    ):
        return ()
    return tuple(ToolArgument(*item) for item in stored)


def _version(work: object) -> object:
    return work.get("v") if isinstance(work, dict) else None


def span_of(trace: object) -> SpanContext | None:
    """The remote span a stored trace dict names, or None when it names none."""
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
