"""The parts every scoring process builds from its settings: the judge, the score
cache and `Scoring`, and `scoring_runtime`, which starts them with the store,
the HTTP client and the claimer and stops them in order. The gateway
(`gateway.server.app`) and the scorer process (`gateway.server.scorer`) each run theirs from
here, so both judge, drain and shut down alike. `Judges` hands a reloaded config
its judge (`gateway.runtime.reconfigure`).
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
from guard.limits import AdaptiveLimit, JudgeLimiter

__all__ = [
    "Judges",
    "ScoringRuntime",
    "build_judge",
    "build_scorer",
    "build_scoring",
    "score_cache",
    "scoring_runtime",
]

log = structlog.get_logger("gateway.app")


def build_judge(
    settings: Settings,
    upstream: Upstream,
    metrics: Metrics | None = None,
    *,
    limiter: JudgeLimiter | None = None,
) -> Judge:
    """The judge from settings: litellm for `provider/model` without a base_url, else direct
    over the gateway's own aiohttp pool. Its calls share one limiter (`guard.limits`):
    `limiter` when given (a reloaded judge keeps its predecessor's), else a new one."""
    judge = settings.judge
    if limiter is None:
        limits = judge.limits
        auto = limits.max_concurrency == "auto"
        limiter = JudgeLimiter(
            max_concurrency=limits.concurrency_bound,
            adaptive=(
                AdaptiveLimit(start=limits.concurrency_start, ceiling=limits.concurrency_ceiling)
                if auto
                else None
            ),
            max_pause=limits.max_pause,
            requests_per_minute=limits.max_requests_per_minute,
            tokens_per_minute=limits.max_tokens_per_minute,
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
            max_tokens=judge.max_tokens,
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
            max_tokens=judge.max_tokens,
        )
    built.rate_limit_wait = judge.limits.rate_limit_wait
    return built


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


def _judge_identity(settings: Settings) -> tuple[object, ...]:
    """Everything `build_judge` reads, bar the limiter's settings."""
    judge = settings.judge
    return (
        judge.model,
        judge.base_url,
        _secret(judge.api_key),
        settings.judge_base_url(),
        _secret(settings.judge_api_key()),
        judge.timeout,
        judge.max_retries,
        judge.limits.rate_limit_wait,
    )


class Judges:
    """The judge new scoring work is given, and every judge this process built.

    A reload whose judge settings changed gets a new judge, while work in flight
    finishes on the one it started with; all of them are closed when the process
    stops. Every judge shares the first one's limiter, so `judge.limits.max_concurrency`
    and the budgets bound the calls of old and new together. An injected judge
    (tests) is kept whatever the settings say: it was not built from them.
    """

    def __init__(
        self,
        settings: Settings,
        upstream: Upstream,
        metrics: Metrics,
        *,
        injected: Judge | None = None,
    ) -> None:
        self._upstream = upstream
        self._metrics = metrics
        self.injected = injected is not None
        self.current = injected or build_judge(settings, upstream, metrics)
        self._identity = _judge_identity(settings)
        self._all = [self.current]

    def for_settings(self, settings: Settings) -> Judge:
        """The judge for `settings`: the current one when they do not change it."""
        identity = _judge_identity(settings)
        if self.injected or identity == self._identity:
            return self.current
        limiter = getattr(self.current, "limiter", None)
        judge = build_judge(
            settings,
            self._upstream,
            self._metrics,
            limiter=limiter if isinstance(limiter, JudgeLimiter) else None,
        )
        self.current, self._identity = judge, identity
        self._all.append(judge)
        return judge

    async def aclose(self) -> None:
        for judge in self._all:
            await judge.aclose()


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
    return Scoring(
        build_scorer(settings, judge),
        store,
        settings,
        telemetry=telemetry,
        metrics=metrics,
        cache=await score_cache(settings, store),
        scorer_process=scorer_process,
    )


def build_scorer(settings: Settings, judge: Judge) -> BiasScorer:
    """guard's scorer as `settings.judge` shapes it, asking `judge`."""
    return BiasScorer(
        judge,
        scale=settings.judge.scale,
        reason="off",  # Scoring asks for the explanation itself: inline or deferred
        pipeline=settings.judge.pipeline,
        judge_whole_text_when_no_opinions=settings.judge.judge_whole_text_when_no_opinions,
        trace_evaluation=False,  # Scoring opens the evaluation span, with the gateway's facts
        categories=settings.judge.bias_categories(),
        reason_language=settings.judge.explanations.language,
    )


async def score_cache(settings: Settings, store: Store) -> ScoreCache | None:
    """The content-hash cache. With `judge.cache.persist`, loaded from and saved to the store;
    on PostgreSQL always, and shared: a miss here asks the database, so a text any
    replica judged is not judged again."""
    size = settings.judge.cache.size
    if not size:
        return None
    if not (settings.judge.cache.persist or store.shared):
        return ScoreCache(size)
    store.keep_cache(size)
    cache = ScoreCache(
        size,
        on_add=lambda key, entry: store.put_cache(CacheEntry(key, entry)),
        lookup=store.cache_get if store.shared else None,
        # `review` keeps texts in records only: a cache entry is not for review.
        keep_text=settings.store.capture_content is True,
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
    judges: Judges
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
    judges = Judges(settings, client, metrics, injected=judge)
    scoring = await build_scoring(
        settings, store, judges.current, tracing, metrics, scorer_process=scorer_process
    )
    scoring.start()
    if store.notifies:  # work is announced: no need to look for it more often
        idle_wait = None
    claimer = Claimer(store, scoring, settings, metrics=metrics, pull=pull, idle_wait=idle_wait)
    claimer.start()
    try:
        yield ScoringRuntime(tracing, store, client, judges, scoring, claimer)
    finally:
        await claimer.stop()
        await scoring.drain(settings.queue.drain_deadline)
        await judges.aclose()
        await client.close()
        await store.close()
        if telemetry is None:
            tracing.shutdown()
        metrics.mark_process_dead()
