"""The per-request middleware: request id, server span, metrics and the access line."""

from __future__ import annotations

import itertools
import re
import secrets
import time
from typing import Any

import structlog
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.metrics import Metrics

__all__ = ["AccessLog", "route_of"]

log = structlog.get_logger("gateway.access")
_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


class AccessLog:
    """Per request: an id (`x-request-id`), a server span, metrics, and one access line.

    The W3C `traceparent` of the client is honoured. Handlers add fields
    (model, bias status, verdict, ...) to `scope["state"]["access"]`; they go
    on the access line and into the metric labels.
    """

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics
        self.ids = _RequestIds()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _request_id(scope, self.ids)
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        fields: dict[str, Any] = {}
        state["access"] = fields
        status = 500
        started = time.perf_counter()
        route = route_of(scope["path"])
        method = scope["method"]
        span = _tracer(scope).start_span(
            f"{method} {route}",
            context=_client_context(scope),
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": method,
                "http.route": route,
                "url.path": scope["path"],
            },
        )

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [
                    *message.get("headers", []),
                    (b"x-request-id", request_id.encode()),
                ]
            await send(message)

        with trace.use_span(span, end_on_exit=False):
            try:
                await self.app(scope, receive, send_with_id)
            finally:
                latency = time.perf_counter() - started
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(Status(StatusCode.ERROR))
                log.info(
                    "request",
                    request_id=request_id,
                    method=method,
                    path=scope["path"],
                    status=status,
                    latency_ms=round(latency * 1000, 2),
                    **fields,
                )
                model = self.metrics.model(fields.get("model"))
                self.metrics.requests.labels(
                    route, model, str(status), fields.get("bias_status") or "none"
                ).inc()
                self.metrics.request_seconds.labels(route, model).observe(latency)
                span.end()


_ROUTES = ("/v1/chat/completions", "/v1/models", "/healthz", "/readyz", "/metrics")


def route_of(path: str) -> str:
    """A bounded route label for a path."""
    if path in _ROUTES:
        return path
    if path.startswith("/v1/bias/scores/"):
        return "/v1/bias/scores/{run_id}"
    if path.startswith("/v1/"):
        return "/v1/*"
    return "other"


def _tracer(scope: Scope) -> trace.Tracer:
    gateway = getattr(scope["app"].state, "gateway", None) if "app" in scope else None
    if gateway is None:
        return trace.get_tracer("gateway")
    tracer: trace.Tracer = gateway.telemetry.tracer
    return tracer


def _client_context(scope: Scope) -> Context | None:
    """The client's trace context, or None (a new trace) when it sent none."""
    carrier = {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in scope.get("headers", [])
        if name in (b"traceparent", b"tracestate", b"baggage")
    }
    # Most clients send no trace headers: skip the propagators' work for them.
    return propagate.extract(carrier) if carrier else None


class _RequestIds:
    """Unique ids without a `uuid4()` per request: a random per-process prefix and a counter.

    32 hex characters, like a uuid4 hex; the prefix keeps workers and restarts apart.
    """

    def __init__(self) -> None:
        self._prefix = secrets.token_hex(8)
        self._counter = itertools.count(1)

    def next(self) -> str:
        return f"{self._prefix}{next(self._counter):016x}"


def _request_id(scope: Scope, ids: _RequestIds) -> str:
    for name, value in scope.get("headers", []):
        if name == b"x-request-id":
            candidate: str = value.decode("latin-1")
            if _SAFE_REQUEST_ID.fullmatch(candidate):
                return candidate
    return ids.next()
