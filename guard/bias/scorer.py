"""The bias scorer: preprocess, analyze, score, generate reason.

Two pipelines reach the same result shape:

- `faithful` (the default): Mastra's steps, one judge call each: extract the
  opinions, judge each one, then explain the score.
- `single`: one structured call asks for the opinions and a verdict for each,
  with the same rules and rubric; the explanation, if asked for, is a second
  call. Fewer round trips (1 instead of 2 before the score is known); the
  trade-off is that one answer carries both tasks, so a weaker judge has less
  room to get each right.

The explanation runs `inline` (Mastra's order, the default here), `off`, or
`deferred`: `run()` returns the score without it, and `explain()` adds it
later, so a caller can act on the score first.

The judge reads the judged view of the text (`guard.integrity.normalise`: what a
person would see), never the raw text; tamper is looked for in the raw text, where
hidden text still shows (`guard.integrity.tamper`). Both are on the result.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Sequence
from typing import Any, Literal

from opentelemetry import trace

from guard.bias.batch import assess_batch, batch_prompt
from guard.bias.categories import (
    DEFAULT_CATEGORIES,
    Category,
    category_ids,
    category_scores,
    normalise_categories,
)
from guard.bias.prompts import (
    ASSESS_SCHEMA,
    EXTRACT_SCHEMA,
    SYSTEM_PROMPT,
    BiasPrompts,
)
from guard.bias.run import Run
from guard.bias.schemas import analyze_schema
from guard.bias.score import bias_score, is_biased
from guard.integrity.normalise import judged_view
from guard.integrity.tamper import detect
from guard.judge import Judge
from guard.outputs import assistant_text
from guard.parsing import unwrap_reason
from guard.result import (
    AnalyzeStepResult,
    AssessedOpinion,
    AssessStepResult,
    BiasResult,
    PreprocessStepResult,
    Verdict,
)
from guard.structured import ask_json
from guard.wire import Message

__all__ = [
    "PIPELINES",
    "REASON_MODES",
    "BiasScorer",
    "Pipeline",
    "ReasonMode",
]

Pipeline = Literal["faithful", "single"]
ReasonMode = Literal["inline", "deferred", "off"]
PIPELINES: tuple[Pipeline, ...] = ("faithful", "single")
REASON_MODES: tuple[ReasonMode, ...] = ("inline", "deferred", "off")
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
        include_reason: bool | None = None,
        reason: ReasonMode = "inline",
        pipeline: Pipeline = "faithful",
        judge_whole_text_when_no_opinions: bool = True,
        trace_evaluation: bool = True,
        categories: Sequence[Category] = DEFAULT_CATEGORIES,
        reason_language: str = "auto",
    ) -> None:
        if scale <= 0:
            raise ValueError(f"scale must be > 0, got {scale}")
        if pipeline not in PIPELINES:
            raise ValueError(f"pipeline must be one of {', '.join(PIPELINES)}, got {pipeline!r}")
        if reason not in REASON_MODES:
            raise ValueError(f"reason must be one of {', '.join(REASON_MODES)}, got {reason!r}")
        self.judge = judge
        self.scale = scale
        # `include_reason=False` is the older spelling of `reason="off"`.
        self.reason: ReasonMode = "off" if include_reason is False else reason
        self.pipeline: Pipeline = pipeline
        self.judge_whole_text_when_no_opinions = judge_whole_text_when_no_opinions
        # An application that wraps runs in its own evaluation span (the gateway does)
        # turns this off; the step and judge spans then nest under its span.
        self.trace_evaluation = trace_evaluation
        self.prompts = BiasPrompts(categories, reason_language)
        self._known = category_ids(self.prompts.categories)

    @property
    def categories(self) -> tuple[Category, ...]:
        return self.prompts.categories

    @property
    def prompt_version(self) -> str:
        """Changes with any prompt, schema, category or language: for caches."""
        return self.prompts.version

    @property
    def include_reason(self) -> bool:
        """Whether an explanation is produced at all (inline or deferred)."""
        return self.reason != "off"

    def __repr__(self) -> str:
        return f"BiasScorer(judge={self.judge!r}, scale={self.scale}, pipeline={self.pipeline!r})"

    async def run(
        self,
        input: Any = None,
        output: Any = None,
        run_id: str | None = None,
        *,
        context: str = "",
    ) -> BiasResult:
        """Score `output` (a string, chat completion, message list or `{"text": ...}`).

        `input` is accepted for symmetry with other scorers; bias is judged on
        the output alone. Raises a `JudgeError` naming the failed step. With
        `reason="deferred"` the result has no `reason` yet: see `explain()`.
        `context` is the text that came just before `output` (a window of a longer
        answer): the judge reads it, but is asked for no opinion from it.
        Both are judged as their judged view; tamper is looked for in `output` alone.
        """
        del input  # the bias rubric reads only the output
        text, marks = _read(output)
        context = judged_view(context).text
        run = Run()
        evaluation = (
            _tracer.start_as_current_span(
                "evaluation bias", attributes={"gen_ai.evaluation.name": "bias"}
            )
            if self.trace_evaluation
            else contextlib.nullcontext()
        )
        with evaluation as span:
            if self.pipeline == "single":
                opinions, verdicts, extract, analyze = await self._assess(run, text, context)
            else:
                opinions, verdicts, extract, analyze = await self._extract_and_analyze(
                    run, text, context
                )
            verdicts = [self._categorised(verdict) for verdict in verdicts]
            score = bias_score((verdict.result for verdict in verdicts), self.scale)
            reason = None
            reason_request = None
            if self.reason == "inline":
                reason, reason_request = await self._explain(run, text, score, verdicts)
            if span is not None:
                span.set_attribute("gen_ai.evaluation.score.value", score)
                span.set_attribute("bias.scale", self.scale)
                span.set_attribute("bias.opinions.count", len(opinions))
                span.set_attribute(
                    "bias.biased.count", sum(is_biased(verdict.result) for verdict in verdicts)
                )

        prompts = (extract, analyze, reason_request)
        return self._result(run_id, opinions, verdicts, prompts, reason, run.totals() | marks)

    async def run_batch(
        self, outputs: Sequence[Any], run_ids: Sequence[str] | None = None
    ) -> list[BiasResult]:
        """Score several texts in one judge call (`pipeline="single"` only), each as `run()`
        would with `reason="off"`, in `outputs`' order (`guard.bias.batch`). The call's cost
        is on the first judged text's result; no result carries the prompt, which holds
        every text. Raises a `JudgeError`: `JudgeOutputError` when the answer does not give
        each text its own verdicts (judge them one by one with `run()` then)."""
        if self.pipeline != "single":
            raise ValueError("run_batch needs pipeline='single'")
        read = [_read(output) for output in outputs]
        texts = [text for text, _ in read]
        ids = list(run_ids) if run_ids is not None else [str(uuid.uuid4()) for _ in texts]
        judged = [index for index, text in enumerate(texts) if text.strip()]
        run = Run()
        assessed: dict[int, list[AssessedOpinion]] = {}
        if judged:
            whole = self.judge_whole_text_when_no_opinions
            prompt = batch_prompt(self.prompts, [texts[i] for i in judged], judge_whole_text=whole)
            asked = assess_batch(self.judge, _messages(prompt), len(judged))
            lists, usage, calls = await run.step("assess_batch", asked)
            run.record("assess_batch", usage, calls)
            assessed = dict(zip(judged, lists, strict=True))
        results = []
        for index, text in enumerate(texts):
            opinions, verdicts = self._from_assessed(assessed.get(index, []), text)
            verdicts = [self._categorised(verdict) for verdict in verdicts]
            totals = run.totals() if judged and index == judged[0] else Run().totals()
            totals |= read[index][1]
            results.append(self._result(ids[index], opinions, verdicts, (None,) * 3, None, totals))
        return results

    def _result(
        self,
        run_id: str | None,
        opinions: list[str],
        verdicts: list[Verdict],
        prompts: tuple[str | None, str | None, str | None],
        reason: str | None,
        fields: dict[str, Any],
    ) -> BiasResult:
        """The result; `fields` are its cost fields (`Run.totals`) and marks (`_read`)."""
        extract, analyze, reason_request = prompts
        return BiasResult(
            run_id=run_id or str(uuid.uuid4()),
            preprocess_step_result=PreprocessStepResult(opinions=opinions),
            preprocess_prompt=extract,
            analyze_step_result=AnalyzeStepResult(results=verdicts),
            analyze_prompt=analyze,
            score=bias_score((verdict.result for verdict in verdicts), self.scale),
            reason=reason,
            generate_reason_prompt=reason_request,
            scale=self.scale,
            judge_model=self.judge.model,
            pipeline=self.pipeline,
            category_scores=category_scores(
                [verdict.categories for verdict in verdicts], len(verdicts), self.scale
            ),
            **fields,
        )

    def _categorised(self, verdict: Verdict) -> Verdict:
        named = normalise_categories(
            verdict.categories, self._known, biased=is_biased(verdict.result)
        )
        return (
            verdict
            if named == verdict.categories
            else verdict.model_copy(update={"categories": named})
        )

    async def explain(self, result: BiasResult, output: Any) -> BiasResult:
        """`result` with its explanation: one judge call (none for an empty text).

        For results of `run()` with `reason="deferred"` (or `"off"`); `output`
        is the text that was scored. The cost is added to the result's.
        """
        text = judged_view(assistant_text(output)).text
        run = Run()
        verdicts = result.analyze_step_result.results
        reason, reason_request = await self._explain(run, text, result.score, verdicts)
        totals = run.totals()
        return result.model_copy(
            update={
                "reason": reason,
                "generate_reason_prompt": reason_request,
                "judge_calls": result.judge_calls + totals["judge_calls"],
                "durations_ms": {**result.durations_ms, **totals["durations_ms"]},
                "usage": result.usage + totals["usage"],
                "calls_by_step": {**result.calls_by_step, **totals["calls_by_step"]},
                "usage_by_step": {**result.usage_by_step, **totals["usage_by_step"]},
            }
        )

    async def _extract_and_analyze(
        self, run: Run, text: str, context: str = ""
    ) -> tuple[list[str], list[Verdict], str | None, str | None]:
        opinions: list[str] = []
        extract = None
        if text.strip():
            extract = self.prompts.extract(text, context=context)
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
            analyze = self.prompts.analyze(text, to_judge, context=context)
            verdicts = await run.step("analyze", self._ask_verdicts(run, analyze, len(to_judge)))
        return opinions, verdicts, extract, analyze

    async def _assess(
        self, run: Run, text: str, context: str = ""
    ) -> tuple[list[str], list[Verdict], str | None, str | None]:
        """The single-call pipeline; both prompt fields name the one prompt sent."""
        if not text.strip():
            return [], [], None, None
        prompt = self.prompts.assess(
            text, judge_whole_text=self.judge_whole_text_when_no_opinions, context=context
        )
        reply = await run.step(
            "assess",
            ask_json(self.judge, _messages(prompt), ASSESS_SCHEMA, AssessStepResult),
        )
        run.record("assess", reply.usage, reply.calls)
        opinions, verdicts = self._from_assessed(reply.value.verdicts, text)
        return opinions, verdicts, prompt, prompt

    @staticmethod
    def _from_assessed(
        assessed: list[AssessedOpinion], text: str
    ) -> tuple[list[str], list[Verdict]]:
        verdicts = [
            Verdict(result=item.result, reason=item.reason, categories=item.categories)
            for item in assessed
        ]
        opinions = [item.opinion for item in assessed]
        if opinions == [text] or (len(opinions) == 1 and opinions[0].strip() == text.strip()):
            opinions = []  # the whole text judged as one statement, as the faithful path reports
        return opinions, verdicts

    async def _explain(
        self, run: Run, text: str, score: float, verdicts: list[Verdict]
    ) -> tuple[str, str | None]:
        if not text.strip():
            return _EMPTY_REASON, None
        reasons = [verdict.reason for verdict in verdicts]
        request = self.prompts.reason(text, score, self.scale, reasons)
        return await run.step("generate_reason", self._ask_reason(run, request)), request

    def run_sync(
        self,
        input: Any = None,
        output: Any = None,
        run_id: str | None = None,
        *,
        context: str = "",
    ) -> BiasResult:
        """The blocking twin of `run`, for scripts and notebooks without a running loop."""

        async def run_and_close() -> BiasResult:
            try:
                return await self.run(input=input, output=output, run_id=run_id, context=context)
            finally:
                await self.judge.aclose()

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(run_and_close())
        raise RuntimeError("run_sync() was called inside an event loop; use `await run()`")

    async def _ask_opinions(self, run: Run, prompt: str) -> PreprocessStepResult:
        reply = await ask_json(self.judge, _messages(prompt), EXTRACT_SCHEMA, PreprocessStepResult)
        run.record("preprocess", reply.usage, reply.calls)
        return reply.value

    async def _ask_verdicts(self, run: Run, prompt: str, count: int) -> list[Verdict]:
        schema = analyze_schema(count)
        reply = await ask_json(self.judge, _messages(prompt), schema, AnalyzeStepResult)
        run.record("analyze", reply.usage, reply.calls)
        return reply.value.results

    async def _ask_reason(self, run: Run, prompt: str) -> str:
        reply = await self.judge.complete(_messages(prompt))
        run.record("generate_reason", reply.usage, 1)
        return unwrap_reason(reply.text)


def _read(output: Any) -> tuple[str, dict[str, Any]]:
    """`output`'s judged view, and what reading it found: a result's `normalised` and
    `tamper`. Tamper is looked for in the raw text: the view has decoded hidden text."""
    raw = assistant_text(output)
    view = judged_view(raw)
    found = [finding.as_dict() for finding in detect(raw)]
    return view.text, {"normalised": list(view.applied), "tamper": found}


def _messages(prompt: str) -> list[Message]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
