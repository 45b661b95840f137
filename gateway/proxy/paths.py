"""Request paths the gateway will route: one canonical form, or a 400.

An enforcing gateway must route by the path the upstream will see. HTTP
clients and servers normalise paths (`/v1/./chat/completions` and
`/v1/x/../chat/completions` both become `/v1/chat/completions` in aiohttp's
URL handling), so a path that a client can make look different from its
normal form would reach the scored endpoint through the unscored
pass-through, and `..` would climb out of the upstream's base path with the
gateway's upstream key attached. So, before any routing:

- dot segments (`.`, `..`), raw or percent-encoded, are refused;
- encoded slashes and backslashes (`%2f`, `%5c`) and raw backslashes are refused;
- empty segments (`//`) and control characters are refused;
- trailing slashes are dropped, so `/v1/chat/completions/` is the scored route.

What is left is forwarded exactly as received (`raw_path`), so the upstream
sees the path that was checked. Pure code; `PathGuard` is the ASGI layer.

The end of the module says what a canonical `/v1` path carries: the
gateway's own routes, and the forwarded calls known to return no model text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.errors import envelope

__all__ = [
    "OWNED_ROUTES",
    "CanonicalPath",
    "PathGuard",
    "PathRefused",
    "anthropic_path",
    "canonical_path",
    "carries_no_text",
    "owned_methods",
]

_ENCODED_SEPARATOR = re.compile(rb"%(2f|5c)", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class PathRefused(ValueError):
    """A request path the gateway will not route; the message says why."""


@dataclass(frozen=True, slots=True)
class CanonicalPath:
    path: str  # decoded, for routing
    raw_path: bytes  # percent-encoded as received, for forwarding


def canonical_path(raw_path: bytes) -> CanonicalPath:
    """The checked, canonical form of a request's raw (still percent-encoded) path.

    >>> canonical_path(b"/v1/chat/completions/").path
    '/v1/chat/completions'
    >>> canonical_path(b"/v1/%2e/chat/completions")
    Traceback (most recent call last):
    ...
    gateway.proxy.paths.PathRefused: the path has a dot segment ("." or "..")
    """
    if not raw_path.startswith(b"/"):
        raise PathRefused("the path must start with /")
    if _ENCODED_SEPARATOR.search(raw_path):
        raise PathRefused("the path has an encoded slash or backslash")
    try:
        ascii_path = raw_path.decode("ascii")
    except UnicodeDecodeError as exc:
        raise PathRefused("the path has a byte that is not percent-encoded") from exc
    try:
        path = unquote(ascii_path, errors="strict")
    except UnicodeDecodeError as exc:
        raise PathRefused("the path is not valid UTF-8 once decoded") from exc
    if "\\" in path:
        raise PathRefused("the path has a backslash")
    if _CONTROL.search(path):
        raise PathRefused("the path has a control character")
    trimmed = path.rstrip("/") or "/"
    segments = trimmed.split("/")[1:]
    if any(segment in (".", "..") for segment in segments):
        raise PathRefused('the path has a dot segment ("." or "..")')
    if trimmed != "/" and any(segment == "" for segment in segments):
        raise PathRefused("the path has an empty segment (//)")
    dropped = len(path) - len(trimmed)
    raw = raw_path[: len(raw_path) - dropped] if dropped else raw_path
    return CanonicalPath(trimmed, raw or b"/")


class PathGuard:
    """ASGI middleware: refuse unroutable paths with a 400, canonicalise the rest."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw_path = scope.get("raw_path") or scope["path"].encode()
        raw_path = raw_path.split(b"?", 1)[0]
        try:
            canonical = canonical_path(raw_path)
        except PathRefused as exc:
            body = envelope(
                f"Request path refused: {exc}.", type="invalid_request_error", code="invalid_path"
            )
            await JSONResponse(body, status_code=400)(scope, receive, send)
            return
        if canonical.path != scope["path"]:
            scope = {**scope, "path": canonical.path, "raw_path": canonical.raw_path}
        await self.app(scope, receive, send)


# -- what a /v1 path carries ---------------------------------------------------------

# The gateway's own routes and the methods they answer. A wrong method gets the
# gateway's 405, never the upstream's answer.
OWNED_ROUTES: dict[str, tuple[str, ...]] = {
    "/v1/chat/completions": ("POST",),
    "/v1/completions": ("POST",),
    "/v1/responses": ("POST",),
    "/v1/messages": ("POST",),
    "/v1/moderations": ("POST",),
    "/v1/models": ("GET",),
    "/v1/bias/score": ("POST",),
    "/v1/bias/scores": ("GET",),
    "/v1/bias/stats": ("GET",),
    "/v1/bias/whatif": ("GET",),
    "/v1/bias/reviews/queue": ("GET",),
    "/v1/bias/reviews/agreement": ("GET",),
    "/v1/bias/reviews/export": ("GET",),
}
_OWNED_PATTERNS = (
    (re.compile(r"/v1/bias/scores/[^/]+"), ("GET",)),
    (re.compile(r"/v1/bias/scores/[^/]+/review"), ("POST",)),
)

# Calls known to return no model text: passed through unscored in every mode.
# A batch's output is read from `/v1/files/{id}/content`, which is not listed,
# so an enforcing gateway refuses it unless `unscored_paths: allow`.
_NO_TEXT = tuple(
    (re.compile(pattern), frozenset(methods.split()))
    for pattern, methods in (
        (r"/v1/models/[^/]+", "GET"),
        (r"/v1/embeddings", "POST"),
        (r"/v1/files", "GET POST"),
        (r"/v1/files/[^/]+", "GET DELETE"),
        (r"/v1/batches", "GET POST"),
        (r"/v1/batches/[^/]+", "GET"),
        (r"/v1/batches/[^/]+/cancel", "POST"),
        (r"/v1/audio/speech", "POST"),
        (r"/v1/messages/count_tokens", "POST"),
    )
)


def owned_methods(path: str) -> tuple[str, ...] | None:
    """The methods a gateway-owned path answers; None for a path the gateway forwards."""
    if path in OWNED_ROUTES:
        return OWNED_ROUTES[path]
    for pattern, methods in _OWNED_PATTERNS:
        if pattern.fullmatch(path):
            return methods
    return None


def carries_no_text(method: str, path: str) -> bool:
    """Whether a forwarded call is one known to return no model text."""
    return any(pattern.fullmatch(path) and method in methods for pattern, methods in _NO_TEXT)


def anthropic_path(path: str) -> bool:
    """Paths served by the Anthropic-compatible upstream."""
    return path == "/v1/messages" or path.startswith("/v1/messages/")
