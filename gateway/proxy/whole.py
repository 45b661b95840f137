"""The whole-answer delivery: the upstream's JSON answer, judged (or queued) and then
delivered, replaced or refused."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from starlette.responses import JSONResponse, Response

from gateway.proxy.call import How, ScoredCall
from gateway.proxy.decisions import decide, render
from gateway.upstream.client import UpstreamResponse
from gateway.wire.codec import loads

__all__ = ["whole"]


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        value = loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


async def whole(
    call: ScoredCall, upstream: UpstreamResponse, skip: dict[str, str] | None
) -> Response:
    """A whole answer: unscored when `skip` says so, else judged (enforce) or queued
    (monitor), and rendered as the decision says."""
    if skip is not None:
        if upstream.status < 400:
            body = _json_object(upstream.body)
            call.upstream_call.end(body=body if call.surface.readable(body) else None)
        return Response(upstream.body, upstream.status, headers={**upstream.headers, **skip})
    body = _json_object(upstream.body)
    readable = body is not None and call.surface.readable(body)
    call.upstream_call.end(body=body if readable else None)
    texts: list[str] = []
    response_id = None
    if body is not None and readable:
        texts = call.answer_texts(body)
        response_id = call.surface.facts(body).response_id
    span = call.upstream_call.span_context
    call.job = replace(call.job, chat_span=span, response_id=response_id)
    how: How = "submit" if call.mode == "monitor" else "score"
    outcome = await call.judge(texts, readable=readable, strict=True, how=how)
    headers = {**upstream.headers, **call.finish(outcome)}

    def replaced() -> Response:
        # A block is decided only on an answer that was read, so there is a body.
        assert body is not None
        return JSONResponse(call.surface.replaced(body, call.policy), headers=headers)

    return render(
        decide(outcome, call.policy, enforce=call.enforce),
        deliver=lambda: Response(upstream.body, upstream.status, headers=headers),
        replace=replaced,
        refuse=lambda refusal: call.refuse(refusal, headers),
    )
