"""`GET /v1/bias/reviews/canary`: the last check of a judge change against the reviewers'
labels (`gateway.server.canary`), as the store keeps it, for admin keys.

The judge before and after, when it started and finished, the records judged again,
the agreement before and after (the fields of `GET /v1/bias/reviews/agreement`), the
fall in F1 and kappa and whether it passed `review.canary_drop`. Before any judge
change: `status: "none"` and the judge recorded.
"""

from __future__ import annotations

from typing import cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.api.search import viewer_of
from gateway.errors import PermissionDenied
from gateway.runtime.resources import Gateway
from gateway.store.state import CANARY, JUDGE, State

__all__ = ["review_canary"]


async def review_canary(request: Request) -> Response:
    gateway = cast(Gateway, request.app.state.gateway)
    viewer = viewer_of(gateway, request)
    if viewer.key is not None and not viewer.key.admin:
        raise PermissionDenied("The judge canary is for admin keys.")
    state = State(gateway.store)
    report = await state.get(CANARY)
    if report is None:
        report = {"object": "bias.canary", "status": "none", "judge": await state.get(JUDGE)}
    return JSONResponse(report)
