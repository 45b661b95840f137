"""What an outcome leaves behind: the store record, metrics, the evaluation event, the log line.

`Scoring` decides when and how a response is judged; `Recorder` writes down
what came of it, in one place, so a deferred explanation that lands later
updates the same record, event and log line a scoring without one writes at
once.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import structlog

from gateway.config import ReviewSettings
from gateway.observability.metrics import Metrics
from gateway.observability.traces import Telemetry
from gateway.scoring.cache import without_text
from gateway.scoring.outcome import Outcome
from gateway.scoring.request import ScoreRequest
from gateway.store import ScoreRecord, Store
from gateway.store.reviews import review_rank
from gateway.wire.tools import ToolArgument, opinion_sources
from guard import BiasResult

__all__ = ["Recorder", "cost_of"]

log = structlog.get_logger("gateway.scoring")
_PROMPTS = ("preprocessPrompt", "analyzePrompt", "generateReasonPrompt")


def cost_of(result: BiasResult | None) -> tuple[int, int]:
    """Judge calls and tokens a result cost (0, 0 for a cached one)."""
    if result is None:
        return 0, 0
    return result.judge_calls, result.usage.total_tokens


class Recorder:
    def __init__(
        self,
        store: Store,
        *,
        telemetry: Telemetry,
        metrics: Metrics,
        capture_content: bool | Literal["review"],
        scale: float,
        review: ReviewSettings | None = None,
    ) -> None:
        self.store = store
        self.telemetry = telemetry
        self.metrics = metrics
        self.capture_content = capture_content
        self.scale = scale
        self.review = review or ReviewSettings()  # a reload replaces it

    def review_rank(self, request: ScoreRequest, outcome: Outcome) -> int | None:
        """The record's place in the review queue (`gateway.store.reviews.review_rank`)."""
        policy, review = request.policy, self.review
        return review_rank(
            request.run_id,
            outcome.verdict if outcome.status == "scored" else None,
            outcome.score,
            flag=policy.flag_threshold,
            block=policy.block_threshold,
            borderline=review.borderline,
            sample_passes=review.sample_passes,
        )

    def store_outcome(
        self,
        request: ScoreRequest,
        outcome: Outcome,
        texts: list[str],
        *,
        work: dict[str, Any] | None = None,
        lease: tuple[str, float] | None = None,
        attempts: int = 0,
    ) -> None:
        """Store what `outcome` says of `request`. A pending record may carry `work` and
        a `lease` (worker, until); a final one carries neither, which erases them."""
        rank = self.review_rank(request, outcome)
        # One predicate: with `review`, the text of what the queue offers, of no other.
        capture = self.capture_content is True or (
            self.capture_content == "review" and rank is not None
        )
        calls, tokens = cost_of(outcome.result)
        self.store.submit(
            ScoreRecord(
                run_id=request.run_id,
                status=outcome.status,
                created_at=request.created_at,
                model=request.model,
                api=request.api,
                key_name=request.key_name,
                mode=request.mode,
                stream=request.stream,
                partial=request.partial,
                truncated=request.truncated,
                score=outcome.score,
                verdict=outcome.verdict,
                # A record's `reason` is the explanation (it quotes the text: kept with
                # the text only), or for an error what went wrong.
                reason=outcome.error
                if outcome.error is not None
                else _kept(outcome.reason, capture),
                reason_status=outcome.reason_status,
                status_reason=outcome.status_reason,
                judge_calls=calls if outcome.result is not None else None,
                judge_tokens=tokens if outcome.result is not None else None,
                result=_stored_result(
                    outcome.result,
                    capture,
                    cached=outcome.cached,
                    windows=outcome.windows,
                    tool_arguments=request.tool_arguments,
                ),
                response_id=request.response_id,
                request_id=request.request_id,
                prompt=request.prompt if capture else None,
                completion="\n\n".join(texts) if capture and texts else None,
                updated_at=time.time(),
                categories=outcome.result.categories if outcome.result is not None else None,
                trace_id=_trace_id(request),
                sample_rate=request.sample_rate,
                biased_opinions=outcome.biased_opinions,
                tamper=_tamper(outcome.tamper, capture),
                normalised=outcome.normalised if outcome.result is not None else None,
                review_rank=rank,
                work=work,
                attempts=attempts,
                leased_by=lease[0] if lease else None,
                lease_until=lease[1] if lease else None,
            )
        )

    def finish(self, request: ScoreRequest, outcome: Outcome, texts: list[str]) -> None:
        """The final word on a scoring: record, evaluation event and `bias score` line."""
        self.store_outcome(request, outcome, texts)
        self.telemetry.emit_evaluation(self.attributes(request, outcome), request.chat_context())
        result = outcome.result
        calls, tokens = cost_of(result)
        log.info(
            "bias score",
            run_id=request.run_id,
            status=outcome.status,
            score=outcome.score,
            biased_opinions=outcome.biased_opinions,
            verdict=outcome.verdict,
            reason_status=outcome.reason_status,
            judge_ms=outcome.judge_ms,
            judge_calls=calls if result else None,
            judge_tokens=tokens if result else None,
            calls_by_step=result.calls_by_step if result else None,
            tokens_by_step=(
                {step: usage.total_tokens for step, usage in result.usage_by_step.items()}
                if result
                else None
            ),
            cached=outcome.cached,
            tamper=outcome.tamper_kinds or None,
        )

    def attributes(self, request: ScoreRequest, outcome: Outcome) -> dict[str, Any]:
        """The evaluation span's and event's attributes."""
        attributes: dict[str, Any] = {
            "gen_ai.evaluation.name": "bias",
            "gen_ai.evaluation.score.label": outcome.verdict or outcome.status,
            # The result's own: a reload may have changed the scale since it was judged.
            "bias.scale": outcome.result.scale if outcome.result is not None else self.scale,
            "bias.run_id": request.run_id,
            "bias.api": request.api,
        }
        if request.response_id:
            attributes["gen_ai.response.id"] = request.response_id
        if outcome.score is not None:
            attributes["gen_ai.evaluation.score.value"] = outcome.score
        if outcome.result is not None:
            attributes["bias.opinions.count"] = len(outcome.result.preprocess_step_result.opinions)
            attributes["bias.biased.count"] = outcome.result.biased_count
            calls, tokens = cost_of(outcome.result)
            attributes["bias.judge.calls"] = calls
            attributes["bias.judge.tokens"] = tokens
            attributes["bias.categories"] = outcome.result.categories
            attributes["bias.tamper"] = outcome.tamper_kinds
            attributes["bias.normalised"] = outcome.normalised
        if outcome.status == "error" and outcome.status_reason:
            attributes["error.type"] = outcome.status_reason
        if self.telemetry.capture_content and outcome.status == "scored" and outcome.reason:
            attributes["gen_ai.evaluation.explanation"] = outcome.reason
        return attributes

    def observe_score(self, request: ScoreRequest, outcome: Outcome) -> None:
        metrics = self.metrics
        if outcome.status == "error":
            metrics.judge_errors.labels(outcome.status_reason or "unknown").inc()
            return
        if outcome.score is None or outcome.result is None:
            return
        model = metrics.model(request.model)
        metrics.bias_score.labels(model).observe(outcome.score)
        metrics.verdicts.labels(model, outcome.verdict or "none").inc()
        metrics.key_verdicts.labels(request.key_name or "-", outcome.verdict or "none").inc()
        for verdict in outcome.result.analyze_step_result.results:
            for category in verdict.categories:
                metrics.category_opinions.labels(category).inc()
        for kind in outcome.tamper_kinds:
            metrics.tamper.labels(kind).inc()
        if not outcome.cached:
            self.observe_cost(outcome.result, steps=None)

    def observe_cost(self, result: BiasResult, *, steps: set[str] | None) -> None:
        """Judge time, calls and tokens of `result`'s steps (all, or only `steps`)."""
        metrics = self.metrics
        judge_model = result.judge_model
        for step, milliseconds in result.durations_ms.items():
            if steps is not None and step not in steps:
                continue
            metrics.judge_seconds.labels(step).observe(milliseconds / 1000)
            metrics.operation_seconds.labels("chat", judge_model, "judge").observe(
                milliseconds / 1000
            )
        for step, calls in result.calls_by_step.items():
            if steps is None or step in steps:
                metrics.judge_calls.labels(step).inc(calls)
        for step, usage in result.usage_by_step.items():
            if steps is not None and step not in steps:
                continue
            metrics.judge_tokens.labels(step, "input").inc(usage.prompt_tokens)
            metrics.judge_tokens.labels(step, "output").inc(usage.completion_tokens)
            metrics.token_usage.labels("input", judge_model, "judge").observe(usage.prompt_tokens)
            metrics.token_usage.labels("output", judge_model, "judge").observe(
                usage.completion_tokens
            )


def _stored_result(
    result: BiasResult | None,
    capture_content: bool,
    *,
    cached: bool,
    windows: list[dict[str, Any]] | None = None,
    tool_arguments: tuple[ToolArgument, ...] = (),
) -> dict[str, object] | None:
    if result is None:
        return None
    # Without content capture the record keeps what decided the answer and none of the
    # words it was judged on: no prompts, opinions, reasons or excerpts (`without_text`).
    if capture_content:
        data = result.to_json_dict()
    else:
        data = without_text(result).to_json_dict()
        for key in _PROMPTS:  # None without the text: left out, as a field never had
            data.pop(key, None)
    data["cached"] = cached
    if windows is not None:
        data["windows"] = windows
    if tool_arguments:
        # Which judged lines were tool-call arguments, and which opinions came from them.
        data["toolArguments"] = [
            {"tool": argument.tool, "argument": argument.argument} for argument in tool_arguments
        ]
        opinions = result.preprocess_step_result.opinions
        data["opinionSources"] = opinion_sources(opinions, tool_arguments)
    return data


def _kept(text: str | None, capture_content: bool) -> str | None:
    return text if capture_content else None


def _tamper(findings: list[dict[str, str]], capture_content: bool) -> list[dict[str, str]] | None:
    """The tamper findings to store (None when there are none): without content capture,
    their kinds with the excerpts emptied, as the score cache keeps them."""
    if not findings:
        return None
    return findings if capture_content else [{**finding, "excerpt": ""} for finding in findings]


def _trace_id(request: ScoreRequest) -> str | None:
    span = request.chat_span
    return f"{span.trace_id:032x}" if span is not None and span.is_valid else None
