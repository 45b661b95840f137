"""The gateway's errors and the one table that turns them into OpenAI error envelopes.

Foreign exceptions (aiohttp, litellm, guard's judge errors) are translated at
the boundary, in `gateway.upstream.client` and `gateway.scoring.service`, and chained with
`from`. A bias *decision* is never an exception: blocks are values rendered in
`gateway.proxy.decisions`.

    GatewayError
    ├── BadRequest                  400 invalid_request_error
    ├── AuthenticationFailed        401 invalid_api_key
    ├── PermissionDenied            403 permission_denied (an admin-only filter)
    ├── UnscoredPathRefused         403 unscored_path (enforce mode, a path it cannot score)
    ├── NotFound                    404 not_found
    │   └── ModelNotFound           404 model_not_found
    ├── Conflict                    409 conflict (a record not yet scored, to review)
    ├── MethodNotAllowed            405 method_not_allowed (a gateway-owned path)
    ├── PayloadTooLarge             413 request_too_large
    ├── RateLimited                 429 rate_limit_exceeded (a client key past its limits)
    ├── JudgeFailureBlocked         503 bias_judge_unavailable
    └── UpstreamError
        ├── UpstreamUnavailable     502 upstream_unavailable (connect refused, reset)
        ├── UpstreamProtocolError   502 upstream_protocol_error (unreadable answer)
        └── UpstreamTimeout         504 upstream_timeout
"""

from __future__ import annotations

import math
from typing import Any

from starlette.responses import JSONResponse

__all__ = [
    "AuthenticationFailed",
    "BadRequest",
    "Conflict",
    "GatewayError",
    "JudgeFailureBlocked",
    "MethodNotAllowed",
    "ModelNotFound",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "RateLimited",
    "StoreUnavailable",
    "UnscoredPathRefused",
    "UpstreamError",
    "UpstreamProtocolError",
    "UpstreamTimeout",
    "UpstreamUnavailable",
    "envelope",
    "error_response",
    "unreadable_error",
]


class GatewayError(Exception):
    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param

    def headers(self) -> dict[str, str]:
        """Response headers the error's answer carries."""
        return {}


class RateLimited(GatewayError):
    """A client key past `requests_per_minute` or `concurrent_requests`."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"retry-after": str(max(1, math.ceil(self.retry_after)))}


class BadRequest(GatewayError):
    pass


class AuthenticationFailed(GatewayError):
    pass


class PermissionDenied(GatewayError):
    pass


class NotFound(GatewayError):
    pass


class ModelNotFound(NotFound):
    pass


class Conflict(GatewayError):
    pass


class PayloadTooLarge(GatewayError):
    pass


class MethodNotAllowed(GatewayError):
    def __init__(self, message: str, *, allowed: tuple[str, ...]) -> None:
        super().__init__(message)
        self.allowed = allowed


class UnscoredPathRefused(GatewayError):
    def __init__(self, message: str, *, path: str, policy: str) -> None:
        super().__init__(message)
        self.path = path
        self.policy = policy


class JudgeFailureBlocked(GatewayError):
    """A judge failure where the policy blocks what it could not score. One for a proxied
    answer names its `run_id` and `error_type` (the envelope's `bias`)."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        run_id: str | None = None,
        error_type: str | None = None,
    ) -> None:
        super().__init__(message, param=param)
        self.run_id = run_id
        self.error_type = error_type


class StoreUnavailable(GatewayError):
    """A read of the score store while it is away (the database down)."""


class UpstreamError(GatewayError):
    pass


class UpstreamUnavailable(UpstreamError):
    pass


class UpstreamProtocolError(UpstreamError):
    pass


class UpstreamTimeout(UpstreamError):
    pass


# error class -> (HTTP status, OpenAI error type, error code); the most specific class wins.
_TABLE: dict[type[GatewayError], tuple[int, str, str]] = {
    BadRequest: (400, "invalid_request_error", "invalid_request"),
    AuthenticationFailed: (401, "invalid_request_error", "invalid_api_key"),
    PermissionDenied: (403, "permission_error", "permission_denied"),
    NotFound: (404, "invalid_request_error", "not_found"),
    ModelNotFound: (404, "invalid_request_error", "model_not_found"),
    Conflict: (409, "invalid_request_error", "conflict"),
    MethodNotAllowed: (405, "invalid_request_error", "method_not_allowed"),
    UnscoredPathRefused: (403, "bias_policy_violation", "unscored_path"),
    PayloadTooLarge: (413, "invalid_request_error", "request_too_large"),
    RateLimited: (429, "requests", "rate_limit_exceeded"),
    JudgeFailureBlocked: (503, "bias_judge_error", "bias_judge_unavailable"),
    StoreUnavailable: (503, "server_error", "store_unavailable"),
    UpstreamUnavailable: (502, "upstream_error", "upstream_unavailable"),
    UpstreamProtocolError: (502, "upstream_error", "upstream_protocol_error"),
    UpstreamTimeout: (504, "upstream_error", "upstream_timeout"),
}


def status_of(exc: GatewayError) -> tuple[int, str, str]:
    for cls in type(exc).__mro__:
        if cls in _TABLE:
            return _TABLE[cls]
    return 500, "server_error", "internal_error"


def envelope(
    message: str, *, type: str, code: str | None, param: str | None = None, **extra: Any
) -> dict[str, Any]:
    """The OpenAI error body: `{"error": {"message", "type", "param", "code", ...}}`."""
    return {"error": {"message": message, "type": type, "param": param, "code": code, **extra}}


def error_response(exc: GatewayError, headers: dict[str, str] | None = None) -> JSONResponse:
    status, kind, code = status_of(exc)
    body = envelope(exc.message, type=kind, code=code, param=exc.param, **error_details(exc))
    headers = {**(headers or {}), **exc.headers()}
    if isinstance(exc, MethodNotAllowed):
        headers["allow"] = ", ".join(exc.allowed)
    return JSONResponse(body, status_code=status, headers=headers)


def error_details(exc: GatewayError) -> dict[str, Any]:
    """Fields an error's envelope carries beyond message, type, param and code."""
    if isinstance(exc, UnscoredPathRefused):
        return {"bias": {"path": exc.path, "policy": exc.policy, "setting": "unscored_paths"}}
    if isinstance(exc, JudgeFailureBlocked) and exc.run_id is not None:
        return {"bias": {"run_id": exc.run_id, "error_type": exc.error_type}}
    return {}


def unreadable_error() -> UpstreamProtocolError:
    """The error for a 2xx answer whose body the gateway cannot read as model output."""
    return UpstreamProtocolError(
        "The upstream answered with a body the gateway cannot read as model output,"
        " so it could not be scored."
    )
