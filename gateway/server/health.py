"""Health and metrics endpoints: `/healthz`, `/readyz` and `/metrics`."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.observability.metrics import CONTENT_TYPE_LATEST
from gateway.runtime.resources import Gateway
from gateway.store import Store, StoreError

__all__ = ["healthz", "metrics_endpoint", "readiness", "readyz"]


def _gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    gateway = _gateway(request)
    return await readiness(
        gateway.ready, gateway.store, {"queue_depth": gateway.scoring.queue_depth}
    )


async def readiness(ready: bool, store: Store, facts: dict[str, Any]) -> Response:
    """`/readyz` of a gateway or a scorer: 503 while starting or stopping, or when the
    store does not answer (scores would be lost: a load balancer should send the
    traffic elsewhere); else 200 with `facts` and where the store is."""
    if not ready:
        return JSONResponse({"status": "starting or stopping"}, status_code=503)
    backlog = store.backlog()
    database: dict[str, Any] = {
        "engine": store.engine,
        "where": store.describe(),
        **backlog.public(),
    }
    try:
        await store.ping()
    except StoreError as exc:
        database["error"] = str(exc)
    else:
        if backlog.down_for is not None:  # reads work, writes do not (a full disk)
            database["error"] = f"records cannot be written: {backlog.error}"
    if "error" in database:
        return JSONResponse({"status": "store unavailable", "store": database}, status_code=503)
    return JSONResponse({"status": "ready", **facts, "store": database})


async def metrics_endpoint(request: Request) -> Response:
    """Prometheus text format; needs a key whenever keys are configured."""
    gateway = _gateway(request)
    gateway.auth.check(request.headers)
    gateway.scoring.update_gauges()
    return Response(gateway.metrics.render(), media_type=CONTENT_TYPE_LATEST)
