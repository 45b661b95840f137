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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.errors import envelope

__all__ = ["CanonicalPath", "PathGuard", "PathRefused", "canonical_path"]

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
    gateway.paths.PathRefused: the path has a dot segment ("." or "..")
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
