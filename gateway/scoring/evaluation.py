"""An answer's evaluation: the one path from its verdicts to its record, whether the
answer was judged whole or in windows (`gateway.scoring.window_judge`).

`Evaluations.evaluate` opens the `evaluation bias` span (for a monitor job, in the
chat span's context and linked to it), asks for the verdicts inside it, explains
them as `judge.reason` says, and records the outcome, or stores the score now and
defers its explanation (`gateway.scoring.reasons`). The lane its judge calls go
in is the caller's to enter (`gateway.scoring.lanes`); `Scoring` does.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Literal

from opentelemetry import trace
from opentelemetry.trace import Link

from gateway.domain import ReasonMode
from gateway.observability.traces import Telemetry
from gateway.scoring.judging import Judging
from gateway.scoring.outcome import Outcome
from gateway.scoring.policy import explained_for
from gateway.scoring.reasons import DeferredReasons, explain
from gateway.scoring.recording import Recorder
from gateway.scoring.request import ScoreRequest

__all__ = ["Evaluations", "Manner"]


@dataclass(frozen=True, slots=True)
class Manner:
    """How an answer is judged and explained, taken when its judging starts: a reload
    meanwhile leaves the answer to finish as it began."""

    judging: Judging
    reason: ReasonMode
    reason_for: Literal["all", "flagged"]


class Evaluations:
    """Turns verdicts into a recorded outcome, explained as the answer's `Manner` says."""

    def __init__(self, recorder: Recorder, reasons: DeferredReasons, telemetry: Telemetry) -> None:
        self.recorder = recorder
        self.reasons = reasons
        self.telemetry = telemetry

    async def evaluate(
        self,
        request: ScoreRequest,
        texts: list[str],
        verdicts: Awaitable[Outcome],
        manner: Manner,
        *,
        in_request: bool,
        explanation_in_judge_ms: bool = False,
    ) -> Outcome:
        """Await `verdicts`, explain, record. A `deferred` explanation is deferred only
        `in_request`: a background job has no response waiting, so it explains at once,
        which spares the record a write and the loop a task. With
        `explanation_in_judge_ms` (an answer judged in windows, whose `judge_ms` holds
        its windows' time), the time spent here is added to the outcome's `judge_ms`."""
        reason = manner.reason
        explain_now = reason == "inline" or (reason == "deferred" and not in_request)
        monitor = request.mode == "monitor" and request.chat_span is not None
        started = time.perf_counter()
        with self.telemetry.tracer.start_as_current_span(
            "evaluation bias",
            context=request.chat_context() if monitor else None,
            links=[Link(request.chat_span)] if monitor and request.chat_span else None,
            attributes={"gen_ai.evaluation.name": "bias", "bias.run_id": request.run_id},
        ) as span:
            outcome = await verdicts
            self.recorder.observe_score(request, outcome)
            if outcome.status == "scored" and outcome.reason_status is None:
                if reason != "off" and not explained_for(manner.reason_for, outcome.verdict):
                    outcome.reason_status = "not_needed"
                elif explain_now:
                    await explain(outcome, texts, manner.judging, self.recorder)
                elif reason == "off":
                    outcome.reason_status = "off"
            span.set_attributes(self.recorder.attributes(request, outcome))
            if outcome.status == "error":
                span.set_status(trace.Status(trace.StatusCode.ERROR, outcome.status_reason))
        if explanation_in_judge_ms:
            spent = round((time.perf_counter() - started) * 1000, 3)
            outcome.judge_ms = (outcome.judge_ms or 0.0) + spent
        if outcome.status == "scored" and outcome.reason_status is None:
            # The score goes out now, the reason later.
            self.reasons.defer(request, outcome, texts, manner.judging)
        else:
            self.recorder.finish(request, outcome, texts)
        return outcome
