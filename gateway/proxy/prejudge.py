"""Prejudged whole answers (`prejudge: stream` on a model route): an enforced request for
a whole answer is asked of the upstream as a stream with its usage, judged as an
enforced buffered stream is, and answered with the whole answer rebuilt from the
stream (`Surface.rebuild`, `gateway.wire.rebuild`).

Whatever judging a buffered stream gets while it arrives, a prejudged answer gets
too: both go through `ScoredCall.read_stream` and `ScoredCall.judge_stream`.
Blocks, headers, records and the cache are those of any enforced whole answer.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from gateway.proxy.call import ScoredCall, without_type
from gateway.proxy.decisions import DELIVER, REPLACE, decide
from gateway.upstream.client import UpstreamResponse
from gateway.wire.rebuild import StreamError, Unfinished

__all__ = ["deliver_prejudged", "prejudge_request"]


def prejudge_request(call: ScoredCall) -> bytes | None:
    """The streamed request to send instead of the client's, or None to send the client's:
    only an enforced, sampled request for a whole answer on a prejudging route."""
    if not call.enforce or not call.sampled or call.parsed.stream:
        return None
    target = call.upstream_call.target
    if not call.gateway.router.prejudges(target):
        return None
    return call.surface.stream_request(call.parsed, target.model)


async def deliver_prejudged(call: ScoredCall, upstream: UpstreamResponse) -> Response | None:
    """The whole answer rebuilt from the upstream's stream, judged; None when the upstream
    answered whole after all (it ignored `stream`): `upstream.body` then holds it."""
    if upstream.chunks is None:
        return None
    if not upstream.headers.get("content-type", "").startswith("text/event-stream"):
        upstream.body, upstream.chunks = await upstream.read_all(), None
        return None
    body, tap = await call.read_stream(upstream)
    headers = without_type(upstream.headers)
    try:
        rebuilt = call.surface.rebuild(body)
    except Unfinished:
        rebuilt = None
    if isinstance(rebuilt, StreamError):
        # What the upstream would have answered the whole request with; unscored, as
        # any upstream error is.
        status, error = call.surface.stream_error(rebuilt)
        return _json(error, status, {**headers, **_skip(call, status)})
    if rebuilt is None or (not tap.reader.truncated and call.surface.texts(rebuilt) != tap.texts()):
        # Not an answer, or not the one the judge would read: refused as unreadable.
        outcome = await call.judge([], readable=False, strict=True, how="score")
        headers.update(call.finish(outcome))
        return call.refuse(decide(outcome, call.policy, enforce=True), headers)
    if rebuilt.get("usage") is None:
        call.gateway.router.without_stream_usage(call.upstream_call.target)
    outcome = await call.judge_stream(tap)
    headers.update(call.finish(outcome))
    decision = decide(outcome, call.policy, enforce=True)
    if decision == DELIVER:
        return _json(rebuilt, 200, headers)
    if decision == REPLACE:
        return _json(call.surface.replaced(rebuilt, call.policy), 200, headers)
    return call.refuse(decision, headers)


def _skip(call: ScoredCall, status: int) -> dict[str, str]:
    return call.skip_headers(status) or {}


def _json(body: dict[str, Any], status: int, headers: dict[str, str]) -> Response:
    # json.dumps, not JSONResponse: an upstream's answer may hold what JSONResponse
    # refuses (NaN in a logprob), and goes back as the upstream wrote it.
    return Response(json.dumps(body), status, headers=headers, media_type="application/json")
