"""The bias scorer: preprocess, analyze, score, generate reason."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from opentelemetry import trace

from guard.bias.prompts import (
    ANALYZE_SCHEMA,
    EXTRACT_SCHEMA,
    SYSTEM_PROMPT,
    analyze_prompt,
    extract_prompt,
    reason_prompt,
)
from guard.bias.score import bias_score, is_biased
from guard.errors import JudgeError
from guard.judge import Judge, Message, Usage, resolve_judge
from guard.outputs import assistant_text
from guard.parsing import unwrap_reason
from guard.result import (
    AnalyzeStepResult,
    BiasResult,
    JudgeUsage,
    PreprocessStepResult,
    Verdict,
)
from guard.structured import ask_json

__all__ = ["BiasScorer", "create_bias_scorer"]

T = TypeVar("T")
_STEP_SPANS = {
    "preprocess": "extract opinions",
    "analyze": "analyze",
    "generate_reason": "generate reason",
}
_EMPTY_REASON = "The score is 0 because the output is empty, so it holds nothing to judge."
_tracer = trace.get_tracer("guard")


class BiasScorer:
    """Scores a text for bias with a judge LLM. Build it with `create_bias_scorer`."""

    id = "bias-scorer"
    name = "Bias Scorer"

    def __init__(
        self,
        judge: Judge,
        *,
        scale: float = 1,
        include_reason: bool = True,
        judge_whole_text_when_no_opinions: bool = True,
        trace_evaluation: bool = True,
    ) -> None:
        if scale <= 0:
            raise ValueError(f"scale must be > 0, got {scale}")
        self.judge = judge
        self.scale = scale
        self.include_reason = include_reason
        self.judge_whole_text_when_no_opinions = judge_whole_text_when_no_opinions
        # An application that wraps runs in its own evaluation span (the gateway does)
        # turns this off; the step and judge spans then nest under its span.
        self.trace_evaluation = trace_evaluation

    def __repr__(self) -> str:
        return f"BiasScorer(judge={self.judge!r}, scale={self.scale})"

    async def run(
        self, input: Any = None, output: Any = None, run_id: str | None = None
    ) -> BiasResult:
        """Score `output` (a string, chat completion, message list or `{"text": ...}`).

        `input` is accepted for symmetry with other scorers; bias is judged on
        the output alone. Raises a `JudgeError` naming the failed step.
        """
        del input  # the bias rubric reads only the output
        text = assistant_text(output)
        run = _Run(self.judge)
        evaluation = (
            _tracer.start_as_current_span(
                "evaluation bias", attributes={"gen_ai.evaluation.name": "bias"}
            )
            if self.trace_evaluation
            else contextlib.nullcontext()
        )
        with evaluation as span:
            opinions: list[str] = []
            extract = None
            if text.strip():
                extract = extract_prompt(text)
                found = await run.step("preprocess", self._ask_opinions(run, extract))
                opinions = found.opinions

            verdicts: list[Verdict] = []
            analyze = None
            to_judge = opinions
            if not opinions and text.strip() and self.judge_whole_text_when_no_opinions:
                # Mastra's behaviour: with no opinions, the whole text is one opinion,
                # which catches bias stated as fact.
                to_judge = [text]
            if to_judge:
                analyze = analyze_prompt(text, to_judge)
                verdicts = await run.step("analyze", self._ask_verdicts(run, analyze))

            score = bias_score((verdict.result for verdict in verdicts), self.scale)

            reason = None
            reason_request = None
            if self.include_reason and not text.strip():
                reason = _EMPTY_REASON
            elif self.include_reason:
                reason_request = reason_prompt(
                    text, score, self.scale, [verdict.reason for verdict in verdicts]
                )
                reason = await run.step("generate_reason", self._ask_reason(run, reason_request))
            if span is not None:
                span.set_attribute("gen_ai.evaluation.score.value", score)
                span.set_attribute("bias.scale", self.scale)
                span.set_attribute("bias.opinions.count", len(opinions))
                span.set_attribute(
                    "bias.biased.count", sum(is_biased(verdict.result) for verdict in verdicts)
                )

        return BiasResult(
            run_id=run_id or str(uuid.uuid4()),
            preprocess_step_result=PreprocessStepResult(opinions=opinions),
            preprocess_prompt=extract,
            analyze_step_result=AnalyzeStepResult(results=verdicts),
            analyze_prompt=analyze,
            score=score,
            reason=reason,
            generate_reason_prompt=reason_request,
            scale=self.scale,
            judge_model=self.judge.model,
            judge_calls=run.calls,
            durations_ms=run.durations_ms,
            usage=JudgeUsage(
                prompt_tokens=run.usage.prompt_tokens,
                completion_tokens=run.usage.completion_tokens,
            ),
        )

    def run_sync(
        self, input: Any = None, output: Any = None, run_id: str | None = None
    ) -> BiasResult:
        """The blocking twin of `run`, for scripts and notebooks without a running loop."""

        async def run_and_close() -> BiasResult:
            try:
                return await self.run(input=input, output=output, run_id=run_id)
            finally:
                await self.judge.aclose()

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(run_and_close())
        raise RuntimeError("run_sync() was called inside an event loop; use `await run()`")

    async def _ask_opinions(self, run: _Run, prompt: str) -> PreprocessStepResult:
        reply = await ask_json(self.judge, _messages(prompt), EXTRACT_SCHEMA, PreprocessStepResult)
        run.record(reply.usage, reply.calls)
        return reply.value

    async def _ask_verdicts(self, run: _Run, prompt: str) -> list[Verdict]:
        reply = await ask_json(self.judge, _messages(prompt), ANALYZE_SCHEMA, AnalyzeStepResult)
        run.record(reply.usage, reply.calls)
        return reply.value.results

    async def _ask_reason(self, run: _Run, prompt: str) -> str:
        reply = await self.judge.complete(_messages(prompt))
        run.record(reply.usage, 1)
        return unwrap_reason(reply.text)


def create_bias_scorer(
    model: str | Judge,
    *,
    scale: float = 1,
    include_reason: bool = True,
    judge_whole_text_when_no_opinions: bool = True,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 2,
) -> BiasScorer:
    """Build a bias scorer, the Python twin of Mastra's `createBiasScorer`.

    >>> scorer = create_bias_scorer("gpt-4o-mini", base_url="http://localhost:8000/v1")
    >>> result = scorer.run_sync(output="Engineers from the north are lazy.")  # doctest: +SKIP
    >>> result.score  # doctest: +SKIP
    1.0
    """
    judge = resolve_judge(
        model, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
    )
    return BiasScorer(
        judge,
        scale=scale,
        include_reason=include_reason,
        judge_whole_text_when_no_opinions=judge_whole_text_when_no_opinions,
    )


class _Run:
    """Per-run bookkeeping: step timings, judge calls and token usage."""

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.calls = 0
        self.usage = Usage()
        self.durations_ms: dict[str, float] = {}

    def record(self, usage: Usage, calls: int) -> None:
        self.usage = self.usage + usage
        self.calls += calls

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


def _messages(prompt: str) -> list[Message]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
