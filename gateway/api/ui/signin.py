"""`/ui/login` and `/ui/logout`: with keys configured nothing is shown without one. A key
is checked like an API key and kept in an HttpOnly, SameSite=Strict cookie for `/ui`."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gateway.api.ui.rendering import COOKIE, gateway_of, render_page, small_form
from gateway.errors import AuthenticationFailed

__all__ = ["login", "login_form", "logout"]

_FORM_MAX = 4096  # bytes: a key and a path


async def login_form(request: Request) -> Response:
    if gateway_of(request).auth.open:
        return RedirectResponse("/ui", status_code=303)
    return render_page("login.html", request, None, error=None, next=_safe_next(request))


async def login(request: Request) -> Response:
    gateway = gateway_of(request)
    form = await small_form(request, _FORM_MAX) or {}
    key = form.get("key", "").strip()
    target = _safe_next(request, form.get("next", ""))
    try:
        gateway.auth.identify(key)
    except AuthenticationFailed:
        return render_page("login.html", request, None, status=401, next=target,
                    error="That key is not one of this gateway's keys.")  # fmt: skip
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(COOKIE, key, httponly=True, samesite="strict", path="/ui",
                        secure=request.url.scheme == "https")  # fmt: skip
    return response


async def logout(request: Request) -> Response:
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie(COOKIE, path="/ui")
    return response


def _safe_next(request: Request, value: str | None = None) -> str:
    """Where to go after signing in: a /ui path of this gateway, nothing else."""
    target = value if value is not None else request.query_params.get("next", "")
    if target.startswith("/ui") and not target.startswith("//") and "\\" not in target:
        return target
    return "/ui"
