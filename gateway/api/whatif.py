"""`GET /v1/bias/whatif`: what a pair of thresholds would have done to stored records.

`?flag=0.5&block=0.8` counts a window's scored records as a policy with those
thresholds would have decided them (pass, flag, block), beside the verdicts they
were given, overall and by key, model and category, with the newest examples of
what would be flagged and blocked (`gateway.store.whatif`). It takes the stats
API's filters and window (the last 24 hours unless `since`/`until` say otherwise),
`mode`, and `examples`; who sees what is the stats API's tenancy
(`gateway.api.search`). Parameters are parsed as strictly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.api.search import Viewer, in_window, parse_score_query, viewer_of
from gateway.errors import BadRequest
from gateway.runtime.resources import Gateway
from gateway.store.whatif import WhatIfQuery

__all__ = ["MAX_EXAMPLES", "WHATIF_PARAMS", "parse_whatif_query", "score_whatif"]

MAX_EXAMPLES = 50
DEFAULT_EXAMPLES = 10
WHATIF_PARAMS = frozenset(
    {"verdict", "status", "model", "key", "mode", "category", "min_score", "since", "until",
     "flag", "block", "examples"}
)  # fmt: skip
_OWN_PARAMS = ("flag", "block", "examples")


def _threshold(params: Mapping[str, str], name: str, scale: float) -> float:
    if name not in params:
        raise BadRequest(f"`{name}` is required: a score from 0 to {scale:g}.", param=name)
    try:
        value = float(params[name])
    except ValueError:
        value = math.nan
    if not 0 <= value <= scale:  # NaN fails it too
        raise BadRequest(
            f"`{name}` must be a number from 0 to {scale:g} (the judge's scale),"
            f" got {params[name]!r}.",
            param=name,
        )
    return value


def parse_whatif_query(
    params: Mapping[str, str], *, scale: float, viewer: Viewer | None = None
) -> WhatIfQuery:
    """A what-if request's query, its window filled in and, with `viewer`, narrowed to
    what that viewer may read. Raises `BadRequest` (or `PermissionDenied`) naming the
    parameter at fault."""
    filters = parse_score_query(
        {name: value for name, value in params.items() if name not in _OWN_PARAMS},
        allowed=WHATIF_PARAMS,
    )
    if viewer is not None:
        filters = viewer.scoped(filters)
    flag, block = _threshold(params, "flag", scale), _threshold(params, "block", scale)
    if flag > block:
        raise BadRequest(f"`flag` ({flag:g}) must not exceed `block` ({block:g}).", param="flag")
    examples = params.get("examples", str(DEFAULT_EXAMPLES))
    if not examples.isdigit() or int(examples) > MAX_EXAMPLES:
        raise BadRequest(
            f"`examples` must be a whole number from 0 to {MAX_EXAMPLES}.", param="examples"
        )
    return WhatIfQuery(in_window(filters), flag=flag, block=block, examples=int(examples))


async def score_whatif(request: Request) -> Response:
    gateway = cast(Gateway, request.app.state.gateway)
    viewer = viewer_of(gateway, request)
    scale = gateway.settings.judge.scale
    query = parse_whatif_query(request.query_params, scale=scale, viewer=viewer)
    result = await gateway.store.whatif(query)
    return JSONResponse({**result.to_dict(), "scale": scale})
