"""Judging an answer's windows, and the one record their merged result makes.

`WindowJudge.judge` runs the scorer on one window (each of its texts, with its
context), within the enforce deadline; `WindowJudge.conclude` turns the merged
result (`gateway.scoring.merge`) into the answer's `Outcome`, explains it as
`judge.reason` says, and records it once, as `Scoring.score` records a whole
answer: the store, metrics, the evaluation span and event, the log line.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog
from opentelemetry import trace

from gateway.domain import PolicyVerdict
from gateway.scoring.merge import AnswerMerge, PrefixRule
from gateway.scoring.outcome import Outcome
from gateway.scoring.policy import explained_for, with_tamper
from gateway.scoring.request import ScoreRequest
from gateway.scoring.service import Scoring
from gateway.scoring.windows import Window
from guard import BiasResult, JudgeError, limits
from guard.outputs import valid_text

__all__ = ["WindowJudge", "window_entry"]

log = structlog.get_logger("gateway.scoring")


def window_entry(
    window: Window, merge: AnswerMerge, verdict: PolicyVerdict, results: list[BiasResult], ms: float
) -> dict[str, Any]:
    """What the record says of one judged window: where it lies, the score of the answer
    up to its end and the verdict on that prefix, and what judging it cost."""
    return {
        "start": window.start,
        "end": window.end,
        "score": merge.score,
        "biased_opinions": merge.biased,
        "verdict": verdict,
        "judge_ms": round(ms, 3),
        "judge_calls": sum(result.judge_calls for result in results),
        "judge_tokens": sum(result.usage.total_tokens for result in results),
    }


class WindowJudge:
    """The scoring side of one answer judged in windows."""

    def __init__(self, scoring: Scoring, request: ScoreRequest) -> None:
        self.scoring = scoring
        self.request = request
        self.judging = scoring.judging  # as it is now, should a reload come

    async def judge(self, window: Window) -> list[BiasResult]:
        """One result per text of `window`. Raises `JudgeError` (or a bug's exception)."""
        scorer = self.judging.scorer
        with limits.deadline(self.scoring.enforce_deadline):
            return list(
                await asyncio.gather(
                    *(
                        scorer.run(
                            output=valid_text(part.text),
                            context=valid_text(part.context),
                            run_id=self.request.run_id,
                        )
                        for part in window.parts
                    )
                )
            )

    def failed(self, exc: BaseException) -> Outcome:
        """The outcome of a window whose judgement failed (recorded by `conclude`)."""
        reason = type(exc).__name__ if isinstance(exc, JudgeError) else "internal"
        log.error(
            "bias judge failed on a window of the answer",
            run_id=self.request.run_id,
            error_type=reason,
            error=str(exc),
            on_judge_error=self.request.policy.on_judge_error,
        )
        return Outcome(self.request.run_id, "error", status_reason=reason, error=str(exc))

    async def conclude(
        self,
        request: ScoreRequest,
        merge: AnswerMerge,
        texts: list[str],
        *,
        blocked: bool,
        windows: list[dict[str, Any]],
        judge_ms: float,
        failure: Outcome | None = None,
    ) -> Outcome:
        """The answer's outcome from its windows, explained and recorded. A prefix that
        blocked makes the answer's verdict `block`, whatever the whole text scores."""
        scoring = self.scoring
        policy = request.policy
        if failure is not None:
            outcome = failure
        else:
            scorer = self.judging.scorer
            result = merge.result(request.run_id, scorer.judge.model, scorer.pipeline)
            # Every text by the policy's rules (`verdict_for`), as a whole answer is decided.
            verdict = PrefixRule.of(policy, min_opinions=1).verdict(merge)
            verdict = with_tamper(verdict, result.tamper, policy.on_tamper)
            outcome = Outcome(
                request.run_id,
                "scored",
                score=result.score,
                verdict="block" if blocked else verdict,
                result=result,
                text_index=merge.worst[0],
            )
        outcome.windows = windows
        outcome.judge_ms = round(judge_ms, 3)
        started = time.perf_counter()
        with scoring.telemetry.tracer.start_as_current_span(
            "evaluation bias",
            attributes={"gen_ai.evaluation.name": "bias", "bias.run_id": request.run_id},
        ) as span:
            scoring.recorder.observe_score(request, outcome)
            deferred = await self._explain(outcome, texts)
            span.set_attributes(scoring.recorder.attributes(request, outcome))
            if outcome.status == "error":
                span.set_status(trace.Status(trace.StatusCode.ERROR, outcome.status_reason))
        outcome.judge_ms += round((time.perf_counter() - started) * 1000, 3)
        if deferred:
            scoring.reasons.defer(request, outcome, texts, self.judging)
        else:
            scoring.recorder.finish(request, outcome, texts)
        return outcome

    async def _explain(self, outcome: Outcome, texts: list[str]) -> bool:
        """Explain now, or say that the explanation is deferred (True)."""
        scoring = self.scoring
        if outcome.status != "scored" or not texts:
            return False
        reason = scoring.reason
        if reason == "off":
            outcome.reason_status = "off"
            return False
        if not explained_for(scoring.reason_for, outcome.verdict):
            outcome.reason_status = "not_needed"
            return False
        if reason == "deferred":
            return True
        text = texts[min(outcome.text_index, len(texts) - 1)]
        new = await self.judging.explain(outcome, text)
        if new is not None:
            scoring.recorder.observe_cost(new, steps={"generate_reason"})
        return False
