"""The unscored `/v1/*` pass-through, and the model list merged from the upstream's."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Scope
from yarl import URL

from gateway.domain import SkipReason
from gateway.errors import (
    BadRequest,
    GatewayError,
    MethodNotAllowed,
    NotFound,
    UnscoredPathRefused,
    UpstreamError,
)
from gateway.proxy.decisions import Refusal, skip_headers
from gateway.proxy.event_stream import SSEResponse
from gateway.proxy.intake import Intake, gateway_of
from gateway.proxy.paths import anthropic_path, carries_no_text, owned_methods
from gateway.proxy.surfaces import Messages

__all__ = ["forwarded_url", "list_models", "passthrough"]

# Request headers never passed on: hop-by-hop, and the gateway's own credentials.
_DROPPED_REQUEST_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "authorization",
        "api-key",
        "x-api-key",
        "accept-encoding",
        "transfer-encoding",
        "keep-alive",
        "upgrade",
        "cookie",
    }
)


def forwarded_url(base_url: str, scope: Scope, *, keep_v1: bool = False) -> URL:
    """The upstream URL for a `/v1/...` request: the base URL plus the path as received
    (less its `/v1`, which OpenAI-style base URLs end with; `keep_v1` for Anthropic's).

    `PathGuard` has refused dot segments and encoded slashes, so the path cannot
    leave the base path; the URL is built `encoded=True`, so nothing re-normalises
    it between the check and the upstream. The check below is a second lock.
    """
    raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
    suffix = raw_path.split(b"?", 1)[0]
    if not keep_v1:
        suffix = suffix.removeprefix(b"/v1")
    base = URL(base_url.rstrip("/"))
    url = URL(f"{base}{suffix.decode('ascii')}", encoded=True)
    query: bytes = scope.get("query_string", b"")
    if query:
        url = URL(f"{url}?{query.decode('latin-1')}", encoded=True)
    if not url.raw_path.startswith(base.raw_path) or ".." in url.raw_path.split("/"):
        raise BadRequest("Request path refused: it leaves the upstream's base path.")
    return url


async def list_models(request: Request) -> Response:
    """The configured aliases, merged with the default upstream's list when it answers."""
    gateway = gateway_of(request)
    gateway.auth.check(request.headers)
    models: dict[str, dict[str, Any]] = {
        alias: {"id": alias, "object": "model", "created": 0, "owned_by": "bias-gateway"}
        for alias in gateway.router.aliases()
    }
    target = gateway.router.default
    headers = {"authorization": f"Bearer {target.api_key}"} if target.api_key else {}
    try:
        answer = await gateway.upstream.request(
            "GET",
            target.base_url.rstrip("/") + "/models",
            body=None,
            headers=headers,
            timeout=min(target.timeout, 10),
            stream=False,
        )
        listed = json.loads(answer.body).get("data", []) if answer.status == 200 else []
    except (UpstreamError, ValueError, AttributeError):
        listed = []
    for model in listed:
        if isinstance(model, dict) and isinstance(model.get("id"), str):
            models.setdefault(model["id"], model)
    return JSONResponse({"object": "list", "data": list(models.values())})


async def passthrough(request: Request) -> Response:
    """Any other `/v1/*` call goes to an upstream unscored, unless the policy refuses it.

    Calls known to return no model text pass in every mode. Any other path is
    refused in enforce mode (403 `unscored_path`) unless the policy says
    `unscored_paths: allow`; monitor passes it through, marked and counted.
    """
    try:
        return await _passthrough(request)
    except GatewayError as exc:
        if isinstance(exc, MethodNotAllowed) or not anthropic_path(request.url.path):
            raise  # the app's handler: the OpenAI envelope (and a 405's `allow`)
        refusal = Refusal.of(exc)  # the anthropic SDK reads its own error shape
        return JSONResponse(
            Messages().error_body(refusal), status_code=refusal.status, headers=exc.headers()
        )


async def _passthrough(request: Request) -> Response:
    gateway = gateway_of(request)
    path, method = request.url.path, request.method
    allowed = owned_methods(path)
    if allowed is not None:
        raise MethodNotAllowed(
            f"{method} is not allowed on {path}; it answers {', '.join(allowed)}.",
            allowed=allowed,
        )
    if path.startswith("/v1/bias/"):
        raise NotFound(f"No such gateway endpoint: {path}.")
    intake = Intake.open(gateway, request)
    reason: SkipReason = "no_model_text"
    if not carries_no_text(method, path):
        reason = "unscored_path"
        mode = intake.resolve_mode()
        if mode == "enforce" and intake.policy.unscored_paths == "refuse":
            raise UnscoredPathRefused(
                f"{method} {path} is not scored by this gateway, and policy"
                f" `{intake.policy_name}` enforces, so it is refused: an enforcing gateway"
                " never returns model text it did not score. Set `unscored_paths: allow` in"
                " the policy to pass such calls through unscored.",
                path=path,
                policy=intake.policy_name,
            )
        gateway.metrics.skipped.labels(reason).inc()
    intake.admit()
    try:
        response = await _forward(intake, reason)
    except BaseException:
        intake.release()
        raise
    return response


async def _forward(intake: Intake, reason: SkipReason) -> Response:
    """Send the call upstream and stream its answer back; the key's place (`intake.quota`)
    is given back once the answer is read, or once a streamed one ends."""
    gateway, request = intake.gateway, intake.request
    path, method = request.url.path, request.method
    body = await intake.body()
    anthropic = anthropic_path(path)
    target = gateway.router.anthropic if anthropic else gateway.router.default
    headers = {
        name: value
        for name, value in request.headers.items()
        if name not in _DROPPED_REQUEST_HEADERS and not name.startswith("x-bias-")
    }
    headers.update(target.auth_headers(request.headers))
    if anthropic:
        headers.setdefault("anthropic-version", target.version or "2023-06-01")
    # Streamed back as it arrives: these may be SSE or large files.
    answer = await gateway.upstream.request(
        method,
        forwarded_url(target.base_url, request.scope, keep_v1=anthropic),
        body=body or None,
        headers=headers,
        timeout=target.timeout,
        read_timeout=target.read_timeout,
        stream=True,
    )
    headers = {**answer.headers, **skip_headers(reason)}
    if answer.chunks is None:
        intake.release()
        return Response(answer.body, answer.status, headers=headers)

    async def close(disconnected: bool) -> None:
        await answer.aclose()
        intake.release()

    return SSEResponse(answer.chunks, headers=headers, on_close=close, status_code=answer.status)
