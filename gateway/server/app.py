"""The Starlette application: `create_app(settings)` and its lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import cast

import structlog
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.api.canary import review_canary
from gateway.api.probe import probe_findings
from gateway.api.reviews import review_agreement, review_export, review_post, review_queue
from gateway.api.search import score_list, score_lookup, score_stats
from gateway.api.ui import ui_routes
from gateway.api.whatif import score_whatif
from gateway.config import Settings, load_settings, settings_from_env
from gateway.errors import GatewayError, StoreUnavailable, envelope, error_response
from gateway.observability.access import AccessLog, call_state
from gateway.observability.metrics import Metrics
from gateway.observability.traces import Telemetry
from gateway.proxy.bias_score import bias_score
from gateway.proxy.moderations import moderations
from gateway.proxy.passthrough import list_models, passthrough
from gateway.proxy.paths import PathGuard
from gateway.proxy.pipeline import ScoredEndpoint
from gateway.proxy.surfaces import SURFACES
from gateway.runtime.lifecycle import build_judge, scoring_runtime
from gateway.runtime.reconfigure import reconfigured
from gateway.runtime.resources import Gateway
from gateway.server.canary import JudgeCanary
from gateway.server.health import healthz, metrics_endpoint, readyz
from gateway.server.reload import HangupLatch, Reloader, ReloadResult, ServedFrom, admin_reload
from gateway.server.startup import log_reloaded
from gateway.store import StoreError
from gateway.store.retention import Retention
from gateway.upstream.client import Upstream
from guard import Judge

__all__ = ["ServeOptions", "app_from_environment", "build_judge", "create_app", "serve_app"]

log = structlog.get_logger("gateway.app")

CONFIG_ENV = "BIAS_GATEWAY_CONFIG"
LOG_LEVEL_ENV = "BIAS_GATEWAY_LOG_LEVEL"
CLIENT_CLOSED_REQUEST = 499


def create_app(
    settings: Settings,
    *,
    judge: Judge | None = None,
    upstream: Upstream | None = None,
    telemetry: Telemetry | None = None,
    freeze_gc: bool = False,
    sweep_pending: bool = True,
    served: ServedFrom | None = None,
    hangup: HangupLatch | None = None,
) -> Starlette:
    """Build the gateway app. Tests inject a `judge`, an `upstream` or `telemetry` here.

    `sweep_pending` marks the store's rows a previous run left pending as dropped at
    startup; `bias-gateway serve` passes False, having swept once before its workers start.
    `served`: where `settings` came from, read again by `POST /admin/reload`; with
    `hangup` (the latch `serve_app` installs in the main thread) SIGHUP reloads too.
    """
    metrics = Metrics.for_settings(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with scoring_runtime(
            settings,
            metrics,
            judge=judge,
            upstream=upstream,
            telemetry=telemetry,
            sweep_pending=sweep_pending,
            # Scoring here: also take work a stopped process left. External: only keep
            # the leases on this gateway's streams in flight.
            pull=settings.queue.scorer == "in_process",
        ) as runtime:
            store = runtime.store
            retention = None
            if settings.store.retention_days > 0:
                retention = Retention(store, settings.store.retention_days, metrics=metrics)
                retention.start()
            state = Gateway.build(
                settings,
                upstream=runtime.upstream,
                store=store,
                scoring=runtime.scoring,
                telemetry=runtime.telemetry,
                metrics=metrics,
            )
            for old, new in settings.old_keys():
                log.warning("an old config key, read as before", key=old, use=new or "nothing")
            if state.auth.open:
                log.warning(
                    "no gateway API keys configured: the gateway is open to anyone who can reach it"
                )
            app.state.gateway = state
            canary = JudgeCanary(store, metrics)

            def apply(new: Settings) -> None:
                app.state.gateway = reconfigured(app.state.gateway, new, runtime.judges)
                canary.check(runtime.scoring)  # a changed judge is checked against the labels

            reloader = Reloader(
                served,
                running=lambda: cast(Gateway, app.state.gateway).settings,
                apply=apply,
                announce=functools.partial(_announce_reload, served),
                metrics=metrics,
            )
            app.state.reloader = reloader
            if freeze_gc:
                _freeze_startup_objects()
            state.ready = True
            await canary.start(runtime.scoring)
            if hangup is not None:
                reloader.listen(asyncio.get_running_loop(), hangup)
            try:
                yield
            finally:
                reloader.active = False
                app.state.gateway.ready = False
                await canary.stop()
                await app.state.gateway.probe.aclose()
                if retention is not None:
                    await retention.stop()

    return Starlette(
        routes=[
            *(
                Route(surface.route, ScoredEndpoint(surface), methods=["POST"])
                for surface in SURFACES
            ),
            Route("/v1/moderations", moderations, methods=["POST"]),
            Route("/v1/bias/score", bias_score, methods=["POST"]),
            Route("/v1/models", list_models, methods=["GET"]),
            Route("/v1/bias/scores", score_list, methods=["GET"]),
            Route("/v1/bias/stats", score_stats, methods=["GET"]),
            Route("/v1/bias/whatif", score_whatif, methods=["GET"]),
            Route("/v1/bias/probe/findings", probe_findings, methods=["GET"]),
            Route("/v1/bias/scores/{run_id}", score_lookup, methods=["GET"]),
            Route("/v1/bias/scores/{run_id}/review", review_post, methods=["POST"]),
            Route("/v1/bias/reviews/queue", review_queue, methods=["GET"]),
            Route("/v1/bias/reviews/agreement", review_agreement, methods=["GET"]),
            Route("/v1/bias/reviews/export", review_export, methods=["GET"]),
            Route("/v1/bias/reviews/canary", review_canary, methods=["GET"]),
            Route(
                "/v1/{path:path}",
                passthrough,
                methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            ),
            *ui_routes(),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics_endpoint, methods=["GET"]),
            Route("/admin/reload", admin_reload, methods=["POST"]),
        ],
        middleware=[Middleware(AccessLog, metrics=metrics), Middleware(PathGuard)],
        exception_handlers={
            ClientDisconnect: _client_disconnect,
            GatewayError: _gateway_error,
            StoreError: _store_error,
            HTTPException: _http_error,
            Exception: _unexpected_error,
        },
        lifespan=lifespan,
    )


def _announce_reload(served: ServedFrom | None, settings: Settings, result: ReloadResult) -> None:
    if served is not None:
        log_reloaded(settings, served, changed=result.changed, needs_restart=result.needs_restart)


async def _gateway_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, GatewayError)
    return error_response(exc)


async def _store_error(request: Request, exc: Exception) -> Response:
    """A lookup or search while the store is away: 503, said plainly (no traceback)."""
    log.warning("score store read failed", path=request.url.path, error=str(exc))
    message = "The score store is unavailable; try again shortly."
    return error_response(StoreUnavailable(message), {"retry-after": "5"})


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = "not_found" if exc.status_code == 404 else None
    body = envelope(str(exc.detail), type="invalid_request_error", code=code)
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


async def _client_disconnect(request: Request, exc: Exception) -> Response:
    """The client left before its request body was in (or sent one HTTP could not frame).

    Nobody is there to read an answer; the access line records status 499,
    nginx's "client closed request", and no traceback.
    """
    call_state(request.scope).client_disconnected = True
    return Response(status_code=CLIENT_CLOSED_REQUEST)


async def _unexpected_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error", path=request.url.path)
    body = envelope(
        "The gateway hit an internal error.", type="server_error", code="internal_error"
    )
    return JSONResponse(body, status_code=500)


@dataclass(frozen=True)
class ServeOptions:
    """What `bias-gateway serve` hands each worker's app, as objects.

    Workers are spawned processes that unpickle their uvicorn config, so this and
    everything in it must pickle (`Settings` does, `SecretStr` values included).
    """

    settings: Settings
    log_level: str = "INFO"
    # True when the caller already marked a previous run's pending rows dropped.
    swept: bool = False
    # Where the settings came from, for reloads (SIGHUP, POST /admin/reload).
    served: ServedFrom | None = None
    # One process, no workers: the latch the CLI installed before it opened the store.
    hangup: HangupLatch | None = None


def serve_app(options: ServeOptions) -> Starlette:
    """The uvicorn factory `bias-gateway serve` runs, one call per worker process.

    The CLI passes `functools.partial(serve_app, options)`: a top-level function and
    picklable options, so uvicorn can hand it to spawned workers.
    """
    from gateway.observability.logs import configure_logging

    configure_logging(level=options.log_level)
    # Here in the main thread, before the app starts: a SIGHUP while it starts is kept.
    hangup = options.hangup or HangupLatch.install()
    return create_app(
        options.settings,
        freeze_gc=True,
        sweep_pending=not options.swept,
        served=options.served,
        hangup=hangup,
    )


def app_from_environment() -> Starlette:
    """A uvicorn factory for running uvicorn yourself:
    `uvicorn gateway.server.app:app_from_environment --factory`.

    Settings come from the YAML file named by `$BIAS_GATEWAY_CONFIG`, else from the
    environment variables alone; `$BIAS_GATEWAY_LOG_LEVEL` sets the log level (INFO).
    Each process sweeps the store's leftover pending rows at startup, so run several
    workers with `bias-gateway serve --workers N`, which sweeps once before they start.
    `bias-gateway serve` itself does not use this function or these variables.
    """
    path = os.environ.get(CONFIG_ENV)
    settings = load_settings(path) if path else settings_from_env()
    served = ServedFrom(path, settings.server.host, settings.server.port)
    level = os.environ.get(LOG_LEVEL_ENV, "INFO")
    return serve_app(ServeOptions(settings, log_level=level, served=served))


# Objects allocated (net) between two young collections; the standard library's is 700.
YOUNG_COLLECTION_EVERY = 10_000


def _freeze_startup_objects() -> None:
    """Move everything alive after startup out of the collector's reach, and collect
    the young generation less often.

    The modules, settings and pools (~70k objects) never die, yet each full
    collection walked them all: tens of milliseconds with the loop stopped,
    which showed as the p99 under load. `gc.freeze()` is the standard library's
    tool for this (https://docs.python.org/3/library/gc.html#gc.freeze).

    Monitor mode keeps hundreds of scorings in flight, each a chain of suspended
    coroutines, futures and judge connections that lives for its judge calls (a
    second each). At the default threshold the young collections ran every few
    hundred allocations and walked those same live objects again and again, promoting
    them into the older generations, whose collections then walked them too: work
    on the request's event loop that grew with the judge's latency, not the
    request, and the longest pauses a request met. Collected less often, the live
    objects are walked that much less often and fewer reach the older generations
    (`python -m bench monitor_overhead`, bench/results/monitor-overhead-*.md).
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, middle, old)
