"""One scorer run's bookkeeping: a span per step, its time, and judge calls and tokens.

The cost fields of a `BiasResult` (`judge_calls`, `durations_ms`, `usage`,
`calls_by_step`, `usage_by_step`) come from here; a failed step's `JudgeError`
is named after the step.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from opentelemetry import trace

from guard.errors import JudgeError
from guard.wire import Usage

__all__ = ["Run"]

T = TypeVar("T")
_STEP_SPANS = {
    "preprocess": "extract opinions",
    "analyze": "analyze",
    "assess": "assess opinions",
    "assess_batch": "assess opinions of several texts",
    "generate_reason": "generate reason",
}
_tracer = trace.get_tracer("guard")


class Run:
    """Per-run bookkeeping: step timings, and judge calls and tokens per step."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.usage: dict[str, Usage] = {}
        self.durations_ms: dict[str, float] = {}

    def record(self, step: str, usage: Usage, calls: int) -> None:
        self.usage[step] = self.usage.get(step, Usage()) + usage
        self.calls[step] = self.calls.get(step, 0) + calls

    def totals(self) -> dict[str, Any]:
        """The result's cost fields."""
        return {
            "judge_calls": sum(self.calls.values()),
            "durations_ms": dict(self.durations_ms),
            "usage": sum(self.usage.values(), Usage()),
            "calls_by_step": dict(self.calls),
            "usage_by_step": dict(self.usage),
        }

    async def step(self, name: str, work: Awaitable[T]) -> T:
        started = time.perf_counter()
        span_name = _STEP_SPANS[name]
        attributes = {"bias.step": name}
        with _tracer.start_as_current_span(span_name, attributes=attributes), _name_failures(name):
            try:
                return await work
            finally:
                self.durations_ms[name] = round((time.perf_counter() - started) * 1000, 3)


@contextmanager
def _name_failures(step: str) -> Iterator[None]:
    try:
        yield
    except JudgeError as exc:
        exc.step = step
        raise
