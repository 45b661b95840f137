"""The parts every scoring process builds from its settings: the judge, the score
cache and `Scoring`, and `scoring_runtime`, which starts them with the store,
the HTTP client and the claimer and stops them in order. The gateway
(`gateway.server.app`) and the scorer process (`gateway.server.scorer`) each run theirs from
here, so both judge, drain and shut down alike.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import structlog
from pydantic import SecretStr

from gateway.config import Settings
from gateway.observability.metrics import Metrics
from gateway.observability.traces import Telemetry
from gateway.scoring.cache import ScoreCache
from gateway.scoring.judge_client import AiohttpJudge
from gateway.scoring.service import Scoring
from gateway.store import CacheEntry, Store, open_store
from gateway.upstream.client import Upstream
from gateway.work.claims import Claimer
from guard import BiasScorer, Judge, LiteLLMJudge
from guard.limits import JudgeLimiter

__all__ = ["ScoringRuntime", "build_judge", "build_scoring", "score_cache", "scoring_runtime"]

log = structlog.get_logger("gateway.app")


def build_judge(settings: Settings, upstream: Upstream, metrics: Metrics | None = None) -> Judge:
    """The judge from settings: litellm for `provider/model` without a base_url, else direct
    over the gateway's own aiohttp pool. Its calls share one limiter (`guard.limits`)."""
    judge = settings.judge
    limiter = JudgeLimiter(
        max_concurrency=judge.max_concurrency,
        requests_per_minute=judge.max_requests_per_minute,
        tokens_per_minute=judge.max_tokens_per_minute,
        on_rate_limited=(lambda _: metrics.judge_rate_limited.inc()) if metrics else None,
        on_wait=metrics.judge_wait_seconds.inc if metrics else None,
    )
    built: LiteLLMJudge | AiohttpJudge
    if "/" in judge.model and judge.base_url is None:
        built = LiteLLMJudge(
            judge.model,
            api_key=_secret(judge.api_key),
            timeout=judge.timeout,
            max_retries=judge.max_retries,
            limiter=limiter,
        )
    else:
        built = AiohttpJudge(
            upstream,
            base_url=settings.judge_base_url(),
            model=judge.model,
            api_key=_secret(settings.judge_api_key()),
            timeout=judge.timeout,
            max_retries=judge.max_retries,
            limiter=limiter,
        )
    built.rate_limit_wait = judge.rate_limit_wait
    return built


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


async def build_scoring(
    settings: Settings,
    store: Store,
    judge: Judge,
    telemetry: Telemetry,
    metrics: Metrics,
    *,
    scorer_process: bool = False,
) -> Scoring:
    """`Scoring` as `settings` ask, with guard's scorer for the judge."""
    scorer = BiasScorer(
        judge,
        scale=settings.judge.scale,
        reason="off",  # Scoring asks for the explanation itself: inline or deferred
        pipeline=settings.judge.pipeline,
        judge_whole_text_when_no_opinions=settings.judge.judge_whole_text_when_no_opinions,
        trace_evaluation=False,  # Scoring opens the evaluation span, with the gateway's facts
        categories=settings.judge.bias_categories(),
        reason_language=settings.judge.reason_language,
    )
    return Scoring(
        scorer,
        store,
        settings,
        telemetry=telemetry,
        metrics=metrics,
        cache=await score_cache(settings, store),
        scorer_process=scorer_process,
    )


async def score_cache(settings: Settings, store: Store) -> ScoreCache | None:
    """The content-hash cache. With `cache_persist`, loaded from and saved to the store;
    on PostgreSQL always, and shared: a miss here asks the database, so a text any
    replica judged is not judged again."""
    size = settings.judge.cache_size
    if not size:
        return None
    if not (settings.judge.cache_persist or store.shared):
        return ScoreCache(size)
    store.keep_cache(size)
    cache = ScoreCache(
        size,
        on_add=lambda key, entry: store.put_cache(CacheEntry(key, entry)),
        lookup=store.cache_get if store.shared else None,
    )
    cache.preload((entry.key, entry.result) for entry in await store.cached(size))
    if len(cache):
        log.info("score cache loaded from the store", entries=len(cache))
    return cache


@dataclass(frozen=True, slots=True)
class ScoringRuntime:
    telemetry: Telemetry
    store: Store
    upstream: Upstream
    judge: Judge
    scoring: Scoring
    claimer: Claimer


@contextlib.asynccontextmanager
async def scoring_runtime(
    settings: Settings,
    metrics: Metrics,
    *,
    judge: Judge | None = None,
    upstream: Upstream | None = None,
    telemetry: Telemetry | None = None,
    sweep_pending: bool,
    pull: bool,
    scorer_process: bool = False,
    idle_wait: float | None = None,
) -> AsyncIterator[ScoringRuntime]:
    """Open the store, start the client, the judge, `Scoring` and its `Claimer`; on
    exit stop claiming, drain (`queue.drain_deadline`) and close them, in that order.
    Injected parts (`judge`, `upstream`, `telemetry`) are used, not built. `idle_wait`:
    how often the `Claimer` looks for work on a store that does not announce it."""
    tracing = telemetry or Telemetry.from_settings(settings.telemetry)
    tracing.install_global()
    store = open_store(
        settings.store,
        on_dropped=lambda reason, count: metrics.store_dropped.labels(reason).inc(count),
    )
    await store.open(sweep_pending=sweep_pending)
    client = upstream or Upstream()
    await client.start()
    bias_judge = judge or build_judge(settings, client, metrics)
    scoring = await build_scoring(
        settings, store, bias_judge, tracing, metrics, scorer_process=scorer_process
    )
    scoring.start()
    if store.notifies:  # work is announced: no need to look for it more often
        idle_wait = None
    claimer = Claimer(store, scoring, settings, metrics=metrics, pull=pull, idle_wait=idle_wait)
    claimer.start()
    try:
        yield ScoringRuntime(tracing, store, client, bias_judge, scoring, claimer)
    finally:
        await claimer.stop()
        await scoring.drain(settings.queue.drain_deadline)
        await bias_judge.aclose()
        await client.close()
        await store.close()
        if telemetry is None:
            tracing.shutdown()
        metrics.mark_process_dead()
