"""The per-request middleware: request id, server span, metrics and the access line."""

from __future__ import annotations

import itertools
import re
import secrets
import time
from dataclasses import dataclass, fields
from typing import Any

import structlog
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.observability.metrics import Metrics

__all__ = ["AccessLog", "CallState", "call_state", "route_of"]

log = structlog.get_logger("gateway.access")
_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_CALL = "bias_gateway.call"  # the scope key of the request's `CallState`


@dataclass(slots=True)
class CallState:
    """What one request's handling learned, for its access line and metric labels.

    `AccessLog` makes it; the handler fills it in; `AccessLog` reads it once
    the response is sent. Fields left None are left off the line.
    """

    request_id: str
    key_name: str | None = None
    api: str | None = None
    model: str | None = None
    stream: bool | None = None
    bias_status: str | None = None
    verdict: str | None = None
    score: float | None = None
    run_id: str | None = None
    upstream_ms: float | None = None
    partial: bool | None = None
    client_disconnected: bool | None = None

    def log_fields(self) -> dict[str, Any]:
        return {name: value for name in _LOGGED if (value := getattr(self, name)) is not None}


_LOGGED = tuple(field.name for field in fields(CallState) if field.name != "request_id")


def call_state(scope: Scope) -> CallState:
    """The request's `CallState`; a fresh one for an app served without `AccessLog`."""
    state = scope.get(_CALL)
    if not isinstance(state, CallState):
        state = CallState(request_id=secrets.token_hex(16))
        scope[_CALL] = state
    return state


class AccessLog:
    """Per request: an id (`x-request-id`), a server span, metrics, and one access line.

    The W3C `traceparent` of the client is honoured. Handlers fill in the
    request's `CallState` (model, bias status, verdict, ...); it goes on the
    access line and into the metric labels.
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
        call = CallState(request_id)
        scope[_CALL] = call
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
                    **call.log_fields(),
                )
                model = self.metrics.model(call.model)
                self.metrics.requests.labels(
                    route, model, str(status), call.bias_status or "none"
                ).inc()
                self.metrics.request_seconds.labels(route, model).observe(latency)
                span.end()


_ROUTES = (
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/responses",
    "/v1/messages",
    "/v1/moderations",
    "/v1/bias/score",
    "/v1/models",
    "/healthz",
    "/readyz",
    "/metrics",
    "/admin/reload",
)


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
