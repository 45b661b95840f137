"""The scoring side of an answer judged in windows: `WindowJudge`.

`WindowJudge.judge` has the scoring service judge one window (each of its texts,
with its context) as it judges a whole enforced answer: in enforce's lane, with
the key's weight, within the enforce deadline (`Scoring.judge_window`). `add`
merges the results in window order (`gateway.scoring.merge`) and says whether the
answer up to that window blocks. `conclude` turns the merged result into the
answer's `Outcome` and has the service explain and record it once, as it records
a whole answer (`Scoring.conclude`, `gateway.scoring.evaluation`).
"""

from __future__ import annotations

import time
from typing import Any

import structlog

from gateway.domain import PolicyVerdict
from gateway.scoring.merge import AnswerMerge, PrefixRule
from gateway.scoring.outcome import Outcome
from gateway.scoring.policy import with_tamper
from gateway.scoring.request import ScoreRequest
from gateway.scoring.service import Scoring
from gateway.scoring.windows import Window
from guard import BiasResult, JudgeError

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
    """The windows of one enforced answer: judged, merged, and concluded into its outcome.

    `blocked`: the answer up to a judged window blocks; `failure`: a window's
    judgement failed. After either, further results are not merged.
    """

    def __init__(self, scoring: Scoring, request: ScoreRequest) -> None:
        policy = request.policy
        self.scoring = scoring
        self.request = request
        self.manner = scoring.manner()  # as it is now, should a reload come
        self.merge = AnswerMerge(self.manner.judging.scorer.scale)
        self.rule = PrefixRule.of(
            policy, policy.windows.min_opinions, tamper_blocks=policy.on_tamper == "block"
        )
        self.entries: list[dict[str, Any]] = []  # the record's `windows`
        self.judge_ms = 0.0
        self.blocked = False
        self.failure: Outcome | None = None

    @property
    def refused(self) -> bool:
        """A prefix blocked, or a window's judgement failed under `on_judge_error: block`."""
        return self.blocked or (
            self.failure is not None and self.request.policy.on_judge_error == "block"
        )

    @property
    def open(self) -> bool:
        """Whether results are still merged: nothing blocked or failed yet."""
        return self.failure is None and not self.blocked

    async def judge(self, window: Window) -> tuple[list[BiasResult], float]:
        """One result per text of `window`, and the milliseconds judging it took. Raises
        `JudgeError` (or a bug's exception)."""
        started = time.perf_counter()
        results = await self.scoring.judge_window(self.request, window.parts, self.manner.judging)
        return results, (time.perf_counter() - started) * 1000

    def add(self, window: Window, results: list[BiasResult], ms: float) -> None:
        """Merge the next window's results; `blocked` says whether its prefix blocks."""
        self.judge_ms += ms
        self.merge.add(window.parts, results)
        on_tamper = self.request.policy.on_tamper
        verdict = with_tamper(self.rule.verdict(self.merge), self.merge.tamper, on_tamper)
        self.blocked = verdict == "block"
        self.entries.append(window_entry(window, self.merge, verdict, results, ms))

    def fail(self, exc: BaseException) -> None:
        """A window's judgement failed: the answer's outcome is the failure (`conclude`)."""
        reason = type(exc).__name__ if isinstance(exc, JudgeError) else "internal"
        log.error(
            "bias judge failed on a window of the answer",
            run_id=self.request.run_id,
            error_type=reason,
            error=str(exc),
            on_judge_error=self.request.policy.on_judge_error,
        )
        self.failure = Outcome(self.request.run_id, "error", status_reason=reason, error=str(exc))

    async def conclude(self, request: ScoreRequest, texts: list[str]) -> Outcome:
        """The answer's outcome from its windows, explained and recorded. `request` is the
        answer's as its stream ended (its response id, truncation, partial)."""
        return await self.scoring.conclude(request, texts, self._verdicts(request), self.manner)

    async def _verdicts(self, request: ScoreRequest) -> Outcome:
        """The merged verdicts. A prefix that blocked makes the answer's verdict `block`,
        whatever the whole text scores."""
        policy = request.policy
        if self.failure is not None:
            outcome = self.failure
        else:
            scorer = self.manner.judging.scorer
            result = self.merge.result(request.run_id, scorer.judge.model, scorer.pipeline)
            # Every text by the policy's rules (`verdict_for`), as a whole answer is decided.
            verdict = PrefixRule.of(policy, min_opinions=1).verdict(self.merge)
            verdict = with_tamper(verdict, result.tamper, policy.on_tamper)
            outcome = Outcome(
                request.run_id,
                "scored",
                score=result.score,
                verdict="block" if self.blocked else verdict,
                result=result,
                text_index=self.merge.worst[0],
            )
        outcome.windows = self.entries
        outcome.judge_ms = round(self.judge_ms, 3)
        return outcome
