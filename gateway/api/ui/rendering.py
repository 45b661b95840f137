"""What every dashboard page shares: its templates, its headers, who is looking (from
the sign-in cookie) and the way to the sign-in when nobody is."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from gateway.api.reviews import reviewer_of
from gateway.api.search import Viewer
from gateway.errors import AuthenticationFailed, PermissionDenied
from gateway.runtime.resources import Gateway

__all__ = [
    "COOKIE",
    "gateway_of",
    "may_review",
    "render_page",
    "small_form",
    "to_login",
    "viewer_of_cookie",
    "when",
]

COOKIE = "bias_ui_key"
_TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)
# The pages hold scores and maybe captured text: no script but the review page's own
# (`script=True`), nothing from elsewhere, never framed.
_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline';{script} img-src 'self' data:;"
    " form-action 'self'; frame-ancestors 'none'"
)


def gateway_of(request: Request) -> Gateway:
    return cast(Gateway, request.app.state.gateway)


def render_page(name: str, request: Request, viewer: Viewer | None, status: int = 200, *,
         script: bool = False, **context: Any) -> HTMLResponse:  # fmt: skip
    body = _TEMPLATES.get_template(name).render(
        request_path=request.url.path, viewer=viewer, when=when,
        may_review=viewer is not None and may_review(viewer), **context,
    )  # fmt: skip
    return HTMLResponse(
        body,
        status_code=status,
        headers={
            "cache-control": "no-store",
            "x-frame-options": "DENY",
            "content-security-policy": _POLICY.format(
                script=" script-src 'self';" if script else ""
            ),
            "referrer-policy": "no-referrer",
        },
    )


def viewer_of_cookie(gateway: Gateway, request: Request) -> Viewer | None:
    """Who is looking, from the sign-in cookie; None when a sign-in is needed."""
    try:
        return Viewer(gateway.auth.identify(request.cookies.get(COOKIE)))
    except AuthenticationFailed:
        return None


def to_login(request: Request) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/ui/login?{urlencode({'next': target})}", status_code=303)


async def small_form(request: Request, most: int) -> dict[str, str] | None:
    """A form's fields (urlencoded, at most `most` bytes; None when it is larger, refused
    unread). Parsed here: Starlette's `form()` would need python-multipart."""
    if int(request.headers.get("content-length") or 0) > most:
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > most:
            return None
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0] for name, values in fields.items()}


def when(epoch: float | None) -> str:
    if epoch is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch)) + " UTC"


def may_review(viewer: Viewer) -> bool:
    """Whether the viewer labels records (the review API's rule, `reviewer_of`)."""
    try:
        reviewer_of(viewer)
    except PermissionDenied:
        return False
    return True
