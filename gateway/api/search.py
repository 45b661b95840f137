"""`GET /v1/bias/scores[/{run_id}]` and `GET /v1/bias/stats`: records you can look up, search
and summarise.

Who sees what (tenancy): with keys configured, a key sees the records of its
own requests only, in the lookup, the list and the stats; another key's run id
answers 404, as if it did not exist. A key marked `admin: true` sees all of
them and may filter by `key`. Without keys (open mode) everything is visible.

The query parameters are parsed here, strictly: an unknown parameter or a bad
value answers 400 naming it, rather than being ignored (a misspelt filter
would otherwise widen the answer silently).
"""

from __future__ import annotations

import datetime
import math
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.config import KeySettings
from gateway.domain import CATEGORY_ID, MODES, TAMPER_KINDS, VERDICTS
from gateway.errors import BadRequest, NotFound, PermissionDenied
from gateway.runtime.resources import Gateway
from gateway.store import FINAL_STATUSES, ScoreRecord
from gateway.store.queries import (
    GROUPS,
    CursorError,
    GroupBy,
    ScoreQuery,
    StatsQuery,
    decode_cursor,
    encode_cursor,
)

__all__ = [
    "DEFAULT_WINDOW",
    "Viewer",
    "in_window",
    "parse_score_query",
    "parse_time",
    "score_list",
    "score_lookup",
    "score_stats",
    "viewer_of",
]

MAX_LIMIT = 200
DEFAULT_WINDOW = 24 * 3600.0
_LIST_PARAMS = frozenset(
    {"verdict", "status", "model", "key", "category", "tamper", "min_score", "since", "until",
     "limit", "cursor"}
)  # fmt: skip
_STATS_PARAMS = frozenset(_LIST_PARAMS - {"limit", "cursor"} | {"group_by"})


class Viewer:
    """Whose records a caller may read: every key's (`None`), or one key name's."""

    def __init__(self, key: KeySettings | None) -> None:
        self.key = key
        self.sees_all = key is None or key.admin
        self.key_name = None if key is None else key.name

    def may_see(self, record: ScoreRecord) -> bool:
        return self.sees_all or record.key_name == self.key_name

    def scoped(self, query: ScoreQuery) -> ScoreQuery:
        """`query` narrowed to what this viewer may read."""
        if self.sees_all:
            return query
        if query.key is not None and query.key != self.key_name:
            raise PermissionDenied(
                "Only an admin key may filter by another key's name.", param="key"
            )
        return replace(query, key=self.key_name)


def viewer_of(gateway: Gateway, request: Request) -> Viewer:
    return Viewer(gateway.auth.check(request.headers))


def parse_time(value: str, name: str) -> float:
    """Epoch seconds, or an ISO 8601 time (UTC unless it says otherwise)."""
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise BadRequest(
                f"`{name}` must be epoch seconds or an ISO 8601 time, got {value!r}.", param=name
            ) from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=datetime.UTC)
        return parsed.timestamp()
    if not math.isfinite(seconds):
        raise BadRequest(f"`{name}` must be a finite number of seconds.", param=name)
    return seconds


def _one_of(value: str, name: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise BadRequest(
            f"`{name}` must be one of {', '.join(allowed)}; got {value!r}.", param=name
        )
    return value


def _number(value: str, name: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise BadRequest(f"`{name}` must be a number, got {value!r}.", param=name) from None
    if not math.isfinite(number) or number < 0:
        raise BadRequest(f"`{name}` must be a number >= 0.", param=name)
    return number


def _check_params(params: Mapping[str, str], allowed: frozenset[str]) -> None:
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise BadRequest(
            f"Unknown query parameter `{unknown[0]}`; this endpoint takes"
            f" {', '.join(sorted(allowed))}.",
            param=unknown[0],
        )


def parse_score_query(
    params: Mapping[str, str], *, allowed: frozenset[str] = _LIST_PARAMS
) -> ScoreQuery:
    """The filters of a list or stats request (strict: see the module's docstring)."""
    _check_params(params, allowed)
    fields: dict[str, Any] = {}
    if "verdict" in params:
        verdicts = params["verdict"].split(",")
        fields["verdict"] = tuple(_one_of(verdict, "verdict", VERDICTS) for verdict in verdicts)
    if "status" in params:
        statuses = ("pending", *sorted(FINAL_STATUSES))
        fields["status"] = _one_of(params["status"], "status", statuses)
    for name in ("model", "key"):
        if name in params:
            fields[name] = params[name]
    if "mode" in params:  # only the what-if API takes it (`gateway.api.whatif`)
        fields["mode"] = _one_of(params["mode"], "mode", MODES)
    if "category" in params:
        if not CATEGORY_ID.fullmatch(params["category"]):
            raise BadRequest("`category` must be a category id such as `gender`.", param="category")
        fields["category"] = params["category"]
    if "tamper" in params:
        fields["tamper"] = _one_of(params["tamper"], "tamper", ("any", *TAMPER_KINDS))
    if "min_score" in params:
        fields["min_score"] = _number(params["min_score"], "min_score")
    for name in ("since", "until"):
        if name in params:
            fields[name] = parse_time(params[name], name)
    if "limit" in params:
        if not params["limit"].isdigit() or not 1 <= int(params["limit"]) <= MAX_LIMIT:
            raise BadRequest(
                f"`limit` must be a whole number from 1 to {MAX_LIMIT}.", param="limit"
            )
        fields["limit"] = int(params["limit"])
    if "cursor" in params:
        try:
            fields["cursor"] = decode_cursor(params["cursor"])
        except CursorError as exc:
            raise BadRequest(str(exc), param="cursor") from None
    query = ScoreQuery(**fields)
    if query.since is not None and query.until is not None and query.since >= query.until:
        raise BadRequest("`since` must be before `until`.", param="since")
    return query


def in_window(filters: ScoreQuery) -> ScoreQuery:
    """`filters` with both ends of its window: unless given, `until` is now and
    `since` a `DEFAULT_WINDOW` before `until`."""
    until = filters.until if filters.until is not None else time.time()
    since = filters.since if filters.since is not None else until - DEFAULT_WINDOW
    if since >= until:
        raise BadRequest("`since` must be before `until`.", param="since")
    return replace(filters, since=since, until=until)


def _gateway(request: Request) -> Gateway:
    return cast(Gateway, request.app.state.gateway)


async def score_list(request: Request) -> Response:
    """Records newest first, a page at a time: `{"data": [...], "next_cursor": ...}`."""
    gateway = _gateway(request)
    viewer = viewer_of(gateway, request)
    query = viewer.scoped(parse_score_query(request.query_params))
    records = await gateway.store.search(query)
    page, more = records[: query.limit], len(records) > query.limit
    last = page[-1] if page else None
    return JSONResponse(
        {
            "object": "list",
            "data": [record.public() for record in page],
            "next_cursor": encode_cursor(last.created_at, last.run_id) if more and last else None,
        }
    )


async def score_stats(request: Request) -> Response:
    """A window's counts by status and verdict, mean and p90 score, judge calls and
    tokens; with `group_by`, the same per group (time buckets in time order)."""
    gateway = _gateway(request)
    viewer = viewer_of(gateway, request)
    params = request.query_params
    filters = in_window(viewer.scoped(parse_score_query(params, allowed=_STATS_PARAMS)))
    group_by = (
        cast(GroupBy, _one_of(params["group_by"], "group_by", GROUPS))
        if "group_by" in params
        else None
    )
    store = gateway.store
    scale = gateway.settings.judge.scale
    (total,) = await store.stats(StatsQuery(filters, scale=scale))
    groups = await store.stats(StatsQuery(filters, group_by, scale)) if group_by else []
    return JSONResponse(
        {
            "object": "bias.stats",
            "since": filters.since,
            "until": filters.until,
            "group_by": group_by,
            "total": {**total.to_dict(), "key": None},
            "groups": [group.to_dict() for group in groups],
        }
    )


async def record_for(gateway: Gateway, request: Request, run_id: str) -> ScoreRecord:
    """The record of `run_id` if this caller may read it; 404 otherwise, alike."""
    return await record_seen_by(gateway, viewer_of(gateway, request), run_id)


async def record_seen_by(gateway: Gateway, viewer: Viewer, run_id: str) -> ScoreRecord:
    """The record of `run_id` if `viewer` may read it; 404 otherwise, alike."""
    record = await gateway.store.get(run_id)
    if record is None or not viewer.may_see(record):
        raise NotFound(f"No bias score with run id `{run_id}`.", param="run_id")
    return record


async def score_lookup(request: Request) -> Response:
    gateway = _gateway(request)
    record = await record_for(gateway, request, request.path_params["run_id"])
    return JSONResponse(record.public())
