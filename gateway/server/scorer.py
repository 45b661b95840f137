"""`bias-gateway scorer`: a process that only scores, on any host that reaches the store.

It claims pending monitor work from the store (`gateway.work.claims`), judges it
with the judge of its own config, at that config's `judge.limits.max_concurrency`,
and records the outcome, as a gateway scoring in process would. Its small HTTP
port serves `/healthz`, `/readyz` (the store answers) and `/metrics`.

Gateways set `queue.scorer: external` to leave their monitor work to scorers;
any number of scorers share it, each holding a lease on what it works on. On
SIGTERM a scorer stops claiming, finishes what it holds for up to
`queue.drain_deadline` seconds and gives the rest back. On SIGHUP it reads its
config again and judges new work with the judge settings there
(`gateway.server.reload`); what it holds finishes on the judge it started with.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass

import structlog
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.config import Settings
from gateway.observability.metrics import CONTENT_TYPE_LATEST, Metrics
from gateway.observability.traces import Telemetry
from gateway.runtime.lifecycle import build_scorer, scoring_runtime
from gateway.scoring.service import Scoring
from gateway.server.health import healthz, readiness
from gateway.server.reload import HangupLatch, Reloader, ReloadResult, ServedFrom
from gateway.store import Store
from gateway.upstream.client import Upstream
from gateway.work.claims import Claimer
from guard import Judge

__all__ = ["ScorerState", "create_scorer_app"]

log = structlog.get_logger("gateway.scorer")

# An external scorer on a store that announces no new work (SQLite) looks this often.
_UNANNOUNCED_IDLE_WAIT = 0.1


@dataclass
class ScorerState:
    settings: Settings
    store: Store
    scoring: Scoring
    claimer: Claimer
    metrics: Metrics
    ready: bool = False


def create_scorer_app(
    settings: Settings,
    *,
    judge: Judge | None = None,
    upstream: Upstream | None = None,
    telemetry: Telemetry | None = None,
    served: ServedFrom | None = None,
    hangup: HangupLatch | None = None,
) -> Starlette:
    """The scorer process's app: scoring in its lifespan, health and metrics as routes.
    With `served` and `hangup` (as `bias-gateway scorer` passes), SIGHUP reloads."""
    metrics = Metrics.for_settings(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with scoring_runtime(
            settings,
            metrics,
            judge=judge,
            upstream=upstream,
            telemetry=telemetry,
            # Never sweeps: the gateways on this store own its pending records' fate.
            sweep_pending=False,
            pull=True,
            scorer_process=True,
            idle_wait=_UNANNOUNCED_IDLE_WAIT,  # unless the store notifies
        ) as runtime:
            scoring = runtime.scoring
            state = ScorerState(
                settings, runtime.store, scoring, runtime.claimer, metrics, ready=True
            )
            app.state.scorer = state
            log.info(
                "bias scorer ready",
                worker=scoring.worker,
                store=runtime.store.describe(),
                judge_model=settings.judge.model,
                concurrency=settings.judge.limits.concurrency_bound,
                lease_seconds=settings.queue.lease_seconds,
            )

            def apply(new: Settings) -> None:
                scoring.reconfigure(build_scorer(new, runtime.judges.for_settings(new)), new)
                state.settings = new

            reloader = Reloader(
                served,
                running=lambda: state.settings,
                apply=apply,
                announce=_announce_reload,
                metrics=metrics,
            )
            if hangup is not None:
                reloader.listen(asyncio.get_running_loop(), hangup)
            try:
                yield
            finally:
                reloader.active = False
                state.ready = False

    return Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", _readyz, methods=["GET"]),
            Route("/metrics", _metrics, methods=["GET"]),
        ],
        lifespan=lifespan,
    )


def _announce_reload(settings: Settings, result: ReloadResult) -> None:
    judge = settings.judge
    log.info(
        "bias scorer config reloaded",
        pid=os.getpid(),
        changed=result.changed,
        needs_restart=result.needs_restart,
        judge_model=judge.model,
        judge_endpoint=settings.judge_base_url(),
    )


def _state(request: Request) -> ScorerState:
    state: ScorerState = request.app.state.scorer
    return state


async def _readyz(request: Request) -> Response:
    state = _state(request)
    scoring = state.scoring
    facts = {
        "worker": scoring.worker,
        "in_flight": scoring.in_flight,
        "queue_depth": scoring.queue_depth,
        "claimed": state.claimer.claimed,
    }
    return await readiness(state.ready, state.store, facts)


async def _metrics(request: Request) -> Response:
    """Prometheus text format. Only on the scorer's own port, which holds no model text."""
    state = _state(request)
    state.scoring.update_gauges()
    return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
