"""One response's judgement: the verdicts (through the score cache), then its explanation.

The gateway's `BiasScorer` never explains by itself (`reason="off"`): the
verdicts decide the response, and the explanation is asked for separately,
inline or deferred (`judge.reason`), with `BiasScorer.explain`. Both go
through the content-hash cache, so an identical text is judged once and
explained once, even when many copies arrive while the judge is at work.
The cache is keyed on the raw text: the judged view and the tamper findings are
a pure function of it, so a cached result carries the same marks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import structlog

from gateway.observability.metrics import Metrics
from gateway.scoring.batching import Batcher, BatchPlan
from gateway.scoring.cache import ScoreCache, cache_key, explanation_key
from gateway.scoring.merge import marks
from gateway.scoring.outcome import Outcome
from gateway.scoring.policy import rank, verdict_for, with_tamper
from gateway.scoring.request import ScoreRequest
from gateway.scoring.windows import WindowPart
from guard import BiasResult, BiasScorer, JudgeError, Usage
from guard.outputs import valid_text

__all__ = ["Judging"]

log = structlog.get_logger("gateway.scoring")
_NO_COST = {
    "judge_calls": 0,
    "durations_ms": {},
    "usage": Usage(),
    "calls_by_step": {},
    "usage_by_step": {},
}


class Judging:
    def __init__(
        self,
        scorer: BiasScorer,
        *,
        cache: ScoreCache | None,
        capture_content: bool,
        metrics: Metrics,
        batch: BatchPlan | None = None,
    ) -> None:
        self.scorer = scorer
        self.cache = cache
        self.capture_content = capture_content
        self.metrics = metrics
        self.batch = batch
        # Monitored answers only (`gateway.scoring.batching`); enforce never waits for one.
        usable = batch is not None and scorer.pipeline == "single"
        self.batcher = Batcher(scorer, batch, metrics=metrics) if usable and batch else None

    def with_scorer(
        self, scorer: BiasScorer, *, batch: BatchPlan | None, cache: bool = True
    ) -> Judging:
        """The same judging (cache included, unless not `cache`) with another scorer and
        batch plan."""
        return Judging(
            scorer,
            cache=self.cache if cache else None,
            capture_content=self.capture_content,
            metrics=self.metrics,
            batch=batch,
        )

    async def close(self) -> None:
        if self.batcher is not None:
            await self.batcher.close()

    async def verdicts(self, request: ScoreRequest, texts: list[str]) -> Outcome:
        """Judge every text (choice); the worst verdict, then the worst score, decides.
        Never raises."""
        started = time.perf_counter()
        try:
            batched = request.mode == "monitor"
            runs = await asyncio.gather(
                *(self._run_one(text, request.run_id, batched) for text in texts)
            )
        except Exception as exc:
            outcome = self._failed(request, exc)
        else:
            results = [result for result, _ in runs]
            verdicts = [
                verdict_for(result.score, result.biased_count, request.policy) for result in results
            ]
            worst_index = max(
                range(len(results)), key=lambda index: (rank(verdicts[index]), results[index].score)
            )
            worst = results[worst_index]
            if len(results) > 1:
                # A tamper in any choice is the answer's, whichever choice scored worst.
                worst = worst.model_copy(update=marks(results))
            outcome = Outcome(
                request.run_id,
                "scored",
                score=worst.score,
                verdict=with_tamper(verdicts[worst_index], worst.tamper, request.policy.on_tamper),
                reason=worst.reason,
                result=worst,
                cached=runs[worst_index][1],
                text_index=worst_index,
                reason_status="done" if worst.reason is not None else None,
            )
        outcome.judge_ms = round((time.perf_counter() - started) * 1000, 3)
        return outcome

    async def window(self, run_id: str, parts: Sequence[WindowPart]) -> list[BiasResult]:
        """One result per part of a window of a streamed answer, each judged with its
        context, uncached (a window's text is seldom seen twice). Raises `JudgeError`
        (or a bug's exception)."""
        scorer = self.scorer
        return list(
            await asyncio.gather(
                *(
                    scorer.run(
                        output=valid_text(part.text),
                        context=valid_text(part.context),
                        run_id=run_id,
                    )
                    for part in parts
                )
            )
        )

    async def explain(self, outcome: Outcome, text: str) -> BiasResult | None:
        """Add the explanation to a scored outcome; returns what the judge newly did.

        The returned result carries the reason step's cost (for metrics), or is
        None when the explanation came from the cache or a run already under way.
        Judge failures leave `reason_status="error"`.
        """
        base = outcome.result
        assert base is not None
        try:
            if self.cache is None:
                explained, reused = await self.scorer.explain(base, text), False
            else:
                key = cache_key(self.scorer, text)
                explained, reused = await self.cache.get_or_run(
                    explanation_key(key), lambda: self._explain_for_cache(base, text, key)
                )
        except Exception as exc:
            if not isinstance(exc, JudgeError):
                log.exception("explaining a score failed unexpectedly", run_id=outcome.run_id)
            log.warning(
                "bias explanation failed", run_id=outcome.run_id, error_type=type(exc).__name__
            )
            outcome.reason_status = "error"
            return None
        if reused:
            # Someone else's explanation of the same text: this run paid nothing for it.
            explained = base.model_copy(
                update={
                    "reason": explained.reason,
                    "generate_reason_prompt": explained.generate_reason_prompt,
                }
            )
        outcome.result = explained.model_copy(update={"run_id": outcome.run_id})
        outcome.reason = explained.reason
        outcome.reason_status = "done"
        return None if reused else explained

    async def _explain_for_cache(self, base: BiasResult, text: str, key: str) -> BiasResult:
        explained = await self.scorer.explain(base, text)
        if self.cache is not None:
            # Later hits on the verdicts get the explanation with them.
            self.cache.put(key, self._for_cache(explained.model_copy(update=_NO_COST)))
        return explained

    def _failed(self, request: ScoreRequest, exc: Exception) -> Outcome:
        if not isinstance(exc, JudgeError):
            # A bug, not a judge failure; the response is decided like one, never a 500.
            log.exception("scoring failed unexpectedly", run_id=request.run_id)
        outcome = Outcome(
            request.run_id,
            "error",
            status_reason=type(exc).__name__ if isinstance(exc, JudgeError) else "internal",
            error=str(exc),
        )
        log.error(
            "bias judge failed; response passed unscored"
            if request.policy.on_judge_error == "allow" or request.mode == "monitor"
            else "bias judge failed; response blocked",
            run_id=request.run_id,
            error_type=outcome.status_reason,
            error=str(exc),
        )
        return outcome

    async def _run_one(self, text: str, run_id: str, batched: bool) -> tuple[BiasResult, bool]:
        if self.cache is None:
            return await self._judge(text, run_id, batched), False
        result, cached = await self.cache.get_or_run(
            cache_key(self.scorer, text), lambda: self._run_for_cache(text, run_id, batched)
        )
        self.metrics.cache_lookups.labels("hit" if cached else "miss").inc()
        if not cached:
            return result, False
        # The verdicts are reused; the run is this request's, and it cost no judge call.
        return result.model_copy(update={"run_id": run_id, **_NO_COST}), True

    async def _run_for_cache(self, text: str, run_id: str, batched: bool) -> BiasResult:
        return self._for_cache(await self._judge(text, run_id, batched))

    async def _judge(self, text: str, run_id: str, batched: bool) -> BiasResult:
        if batched and self.batcher is not None and self.batcher.fits(text):
            return await self.batcher.run(text, run_id)
        return await self.scorer.run(output=text, run_id=run_id)

    def _for_cache(self, result: BiasResult) -> BiasResult:
        if self.capture_content:
            return result
        # The prompts embed the text and are most of a result's size; without
        # content capture they are never stored, so the cache does not keep them either.
        return result.model_copy(
            update={
                "preprocess_prompt": None,
                "analyze_prompt": None,
                "generate_reason_prompt": None,
            }
        )
