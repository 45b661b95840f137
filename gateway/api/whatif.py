"""`GET /v1/bias/whatif`: what a pair of thresholds would have done to stored records.

`?flag=0.5&block=0.8` counts a window's scored records as a policy with those
thresholds would have decided them (pass, flag, block), beside the verdicts they
were given, overall and by key, model and category, with the newest examples of
what would be flagged and blocked (`gateway.store.whatif`). It takes the stats
API's filters and window (the last 24 hours unless `since`/`until` say otherwise),
`mode`, and `examples`, and the count rules `flag_biased_opinions` and
`block_biased_opinions` (each off unless given); who sees what is the stats API's tenancy
(`gateway.api.search`). Parameters are parsed as strictly.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.api.search import Viewer, in_window, parse_score_query, viewer_of
from gateway.domain import VERDICTS
from gateway.errors import BadRequest
from gateway.runtime.resources import Gateway
from gateway.store.whatif import WhatIf, WhatIfQuery

__all__ = [
    "MAX_EXAMPLES",
    "WHATIF_PARAMS",
    "parse_whatif_query",
    "score_whatif",
    "whatif_table",
]

MAX_EXAMPLES = 50
DEFAULT_EXAMPLES = 10
WHATIF_PARAMS = frozenset(
    {"verdict", "status", "model", "key", "mode", "category", "min_score", "since", "until",
     "flag", "block", "flag_biased_opinions", "block_biased_opinions", "examples"}
)  # fmt: skip
_OWN_PARAMS = ("flag", "block", "flag_biased_opinions", "block_biased_opinions", "examples")
_UNSCORED = ("pending", "error", "skipped", "dropped")


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


def _count(params: Mapping[str, str], name: str) -> int | None:
    value = params.get(name, "")
    if value == "":
        return None  # the rule is off
    if not value.isdigit() or int(value) < 1:
        raise BadRequest(
            f"`{name}` must be a whole number from 1 (a count of biased opinions), got {value!r}.",
            param=name,
        )
    return int(value)


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
    flag_n = _count(params, "flag_biased_opinions")
    block_n = _count(params, "block_biased_opinions")
    if flag_n is not None and block_n is not None and flag_n > block_n:
        raise BadRequest(
            f"`flag_biased_opinions` ({flag_n}) must not exceed"
            f" `block_biased_opinions` ({block_n}).",
            param="flag_biased_opinions",
        )
    examples = params.get("examples", str(DEFAULT_EXAMPLES))
    if not examples.isdigit() or int(examples) > MAX_EXAMPLES:
        raise BadRequest(
            f"`examples` must be a whole number from 0 to {MAX_EXAMPLES}.", param="examples"
        )
    return WhatIfQuery(
        in_window(filters),
        flag=flag,
        block=block,
        examples=int(examples),
        flag_biased_opinions=flag_n,
        block_biased_opinions=block_n,
    )


async def score_whatif(request: Request) -> Response:
    gateway = cast(Gateway, request.app.state.gateway)
    viewer = viewer_of(gateway, request)
    scale = gateway.settings.judge.scale
    query = parse_whatif_query(request.query_params, scale=scale, viewer=viewer)
    result = await gateway.store.whatif(query)
    return JSONResponse({**result.to_dict(), "scale": scale})


def whatif_table(result: WhatIf) -> str:
    """The answer as a terminal table, for `bias-gateway whatif`: the verdicts each
    group was given and would be given, then the examples."""
    query, total = result.query, result.total
    unscored = ", ".join(f"{total.statuses[status]} {status}" for status in _UNSCORED)
    lines = [
        f"flag at {query.flag:g}{_at_count(query.flag_biased_opinions)},"
        f" block at {query.block:g}{_at_count(query.block_biased_opinions)}:"
        f" {_when(query.filters.since)} to {_when(query.filters.until)}",
        f"{total.records} records: {total.scored} scored; not scored: {unscored}",
        "",
    ]
    rows = [("", "scored", *(f"{verdict}: given -> would" for verdict in VERDICTS))]
    named = [("all", total)] + [
        (f"{dimension} {'(none)' if group.key is None else group.key}", group)
        for dimension, groups in result.groups.items()
        for group in groups
    ]
    for name, group in named:
        moves = (f"{group.actual[verdict]} -> {group.would[verdict]}" for verdict in VERDICTS)
        rows.append((name, str(group.scored), *moves))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for first, *numbers in rows:
        cells = [first.ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(numbers, widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    if result.truncated:
        lines.append(f"(only the largest {query.groups} groups of: {', '.join(result.truncated)})")
    for verdict, examples in result.examples.items():
        lines += ["", f"the newest it would {verdict}:" if examples else f"none it would {verdict}"]
        lines += [
            f"  {_when(e.created_at)}  score {e.score:g}  given {e.verdict or '-'}"
            f"  key {e.key_name or '-'}  model {e.model or '-'}  run {e.run_id}"
            for e in examples
        ]
    return "\n".join(lines)


def _at_count(count: int | None) -> str:
    return "" if count is None else f" or {count} biased opinion{'s' * (count > 1)}"


def _when(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch or 0))
