"""The ways a scored answer reaches the client: whole, or streamed as monitor relays
it, as enforce buffers it, or live with the verdict at its end."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from starlette.responses import JSONResponse, Response

from gateway.errors import UpstreamError
from gateway.proxy.call import How, ScoredCall, without_type
from gateway.proxy.decisions import DELIVER, REPLACE, bias_headers, decide
from gateway.proxy.prejudge import deliver_prejudged, prejudge_request
from gateway.proxy.streaming import (
    SSE_HEADERS,
    SSEResponse,
    StreamTap,
    buffer_all,
    enforce_passthrough,
    enforce_windowed,
    relay,
)
from gateway.proxy.windowed import StreamJudgement
from gateway.scoring.outcome import Outcome
from gateway.upstream.client import UpstreamResponse
from gateway.wire.codec import loads

__all__ = ["deliver"]


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        value = loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


async def deliver(call: ScoredCall, admitted: bool) -> Response:
    """Call the upstream, then deliver its answer as the request and its policy say.
    `admitted` is False when the request found no place in a full monitor queue."""
    overloaded = None if admitted else call.finish(call.gateway.scoring.overloaded(call.job))
    streamed = prejudge_request(call)
    upstream = await call.upstream_call.send(streamed=streamed)
    skip = overloaded if overloaded is not None else call.skip_headers(upstream.status)
    if streamed is not None and skip is None:
        whole = await deliver_prejudged(call, upstream, _enforce_buffer)
        if whole is not None:
            return whole
    if call.parsed.stream:
        return await _stream(call, upstream, skip)
    return await _whole(call, upstream, skip)


async def _whole(
    call: ScoredCall, upstream: UpstreamResponse, skip: dict[str, str] | None
) -> Response:
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
        texts = call.surface.texts(body)
        response_id = call.surface.facts(body).response_id
    span = call.upstream_call.span_context
    call.job = replace(call.job, chat_span=span, response_id=response_id)
    how: How = "submit" if call.mode == "monitor" else "score"
    outcome = await call.judge(texts, readable=readable, strict=True, how=how)
    headers = {**upstream.headers, **call.finish(outcome)}
    decision = decide(outcome, call.policy, enforce=call.enforce)
    if decision == DELIVER:
        return Response(upstream.body, upstream.status, headers=headers)
    if decision == REPLACE and body is not None:
        return JSONResponse(call.surface.replaced(body, call.policy), headers=headers)
    return call.refuse(decision, headers)


async def _stream(
    call: ScoredCall, upstream: UpstreamResponse, skip: dict[str, str] | None
) -> Response:
    if upstream.status >= 400 or upstream.chunks is None:
        body = await upstream.read_all()
        return Response(body, upstream.status, headers={**upstream.headers, **(skip or {})})
    if skip is not None:
        return _relay(call, upstream, skip, call.tap(parse=False), score=False)
    # The span goes on the pending record; the answer's facts join it when the stream ends.
    call.job = replace(call.job, chat_span=call.upstream_call.span_context)
    if call.mode == "monitor":
        outcome = call.gateway.scoring.mark_pending(call.job)
        return _relay(call, upstream, call.finish(outcome), call.tap(), score=True)
    if call.policy.stream_policy == "passthrough":
        return _live(call, upstream)
    if call.policy.stream_policy == "windowed":
        return _windowed(call, upstream)
    return await _enforce_buffer(call, upstream)


async def _enforce_buffer(call: ScoredCall, upstream: UpstreamResponse) -> Response:
    """Enforce, stream policy `buffer`: what a buffered stream gets; a prejudged whole
    answer (`prejudge: stream`) goes through here too, and gets whatever it does."""
    if call.policy.windows.buffer:
        return await _prejudged(call, upstream)
    return await _buffered(call, upstream)


def _relay(
    call: ScoredCall,
    upstream: UpstreamResponse,
    headers: dict[str, str],
    tap: StreamTap,
    score: bool,
) -> Response:
    """Monitor (or unscored): the upstream's bytes as they come; scored once it ends."""
    assert upstream.chunks is not None
    failures: list[UpstreamError] = []

    async def on_close(disconnected: bool) -> None:
        await upstream.aclose()
        tap.close()
        error = type(failures[0]).__name__ if failures else None
        call.upstream_call.end(tap=tap, error_type=error)
        if not score:
            return
        # A client gone once the stream's last event has passed cut nothing: the sync
        # openai SDK hangs up at `[DONE]`, before a server that ends its body a moment
        # later (llama.cpp's) has ended it.
        partial = bool(failures) or not tap.done
        call.state.partial = partial
        await call.settle(tap, partial=partial)

    return SSEResponse(
        relay(upstream.chunks, tap, failures, call.surface),
        headers={**upstream.headers, **headers},
        on_close=on_close,
    )


async def _buffered(call: ScoredCall, upstream: UpstreamResponse) -> Response:
    """Enforce, stream policy `buffer`: the whole stream, judged before a byte goes out."""
    assert upstream.chunks is not None
    tap = call.tap()
    try:
        body = await buffer_all(upstream.chunks, tap)
    except UpstreamError as exc:
        call.upstream_call.end(tap=tap, error_type=type(exc).__name__)
        raise
    finally:
        await upstream.aclose()
    call.upstream_call.end(tap=tap)
    texts = call.stream_texts(tap)
    outcome = await call.judge(texts, readable=tap.readable, strict=True, how="score")
    headers = {**without_type(upstream.headers), **call.finish(outcome)}
    decision = decide(outcome, call.policy, enforce=True)
    if decision == DELIVER:
        return Response(body, media_type="text/event-stream", headers={**SSE_HEADERS, **headers})
    if decision == REPLACE:
        refusal = call.surface.refusal_stream(tap.reader, call.policy)
        return Response(refusal, media_type="text/event-stream", headers=headers)
    return call.refuse(decision, headers)


async def _prejudged(call: ScoredCall, upstream: UpstreamResponse) -> Response:
    """Enforce, stream policy `buffer`, judged in windows while the upstream streams: once
    its last byte is in, only the last window is left to judge. The client still gets
    the whole stream at once, or the block, as `_buffered` gives them."""
    assert upstream.chunks is not None
    tap = call.tap()
    judgement = StreamJudgement(call, tap)
    try:
        async for chunk in upstream.chunks:
            judgement.feed(chunk)
            if judgement.refused:
                break  # what follows a blocking window will never be sent
        else:
            judgement.end()
    except UpstreamError as exc:
        judgement.cancel()
        call.upstream_call.end(tap=tap, error_type=type(exc).__name__)
        raise
    except asyncio.CancelledError:
        judgement.cancel()  # the client left: no judgement of a window runs on for it
        raise
    finally:
        await upstream.aclose()
    call.upstream_call.end(tap=tap)
    outcome = await judgement.outcome()
    headers = {**without_type(upstream.headers), **bias_headers(outcome)}
    decision = decide(outcome, call.policy, enforce=True)
    if decision == DELIVER:
        body = b"".join(judgement.chunks)
        return Response(body, media_type="text/event-stream", headers={**SSE_HEADERS, **headers})
    if decision == REPLACE:
        refusal = call.surface.refusal_stream(tap.reader, call.policy)
        return Response(refusal, media_type="text/event-stream", headers=headers)
    return call.refuse(decision, headers)


def _windowed(call: ScoredCall, upstream: UpstreamResponse) -> Response:
    """Enforce, stream policy `windowed`: events go out as the windows that end them pass
    (`hold: window`) or live (`hold: none`), and a blocking window ends the stream."""
    assert upstream.chunks is not None
    tap = call.tap()
    judgement = StreamJudgement(call, tap, hold=call.policy.windows.hold)

    async def on_close(disconnected: bool) -> None:
        await upstream.aclose()
        call.upstream_call.end(tap=tap, error_type="disconnected" if disconnected else None)
        if disconnected or not judgement.settled:
            call.state.partial = True
            await judgement.abandon()
        else:
            await judgement.outcome()

    headers = {**upstream.headers, **bias_headers(call.gateway.scoring.mark_pending(call.job))}
    return SSEResponse(
        enforce_windowed(upstream.chunks, judgement, call.surface, call.policy),
        headers=headers,
        on_close=on_close,
    )


def _live(call: ScoredCall, upstream: UpstreamResponse) -> Response:
    """Enforce, stream policy `passthrough`: live events, then the score or an error.

    The run id goes out in the headers before anything is known, so every
    way the stream can end must leave a final record: a stream that ends
    before it is judged (client gone, upstream broken off or stalled) has
    its partial text scored in the background, and a judgement under way
    when the client leaves runs to its end.
    """
    assert upstream.chunks is not None
    tap = call.tap()
    scoring = call.gateway.scoring
    judged = False

    async def judge() -> Outcome:
        nonlocal judged
        judged = True
        call.upstream_call.end(tap=tap)
        texts = call.stream_texts(tap)
        outcome = await call.judge(texts, readable=tap.readable, strict=True, how="spawn")
        call.finish(outcome)
        return outcome

    async def on_close(disconnected: bool) -> None:
        await upstream.aclose()
        call.upstream_call.end(tap=tap, error_type="disconnected" if disconnected else None)
        call.state.partial = disconnected or not judged
        if judged:
            return
        tap.close()
        await call.settle(tap, partial=True)

    headers = {**upstream.headers, **bias_headers(scoring.mark_pending(call.job))}
    return SSEResponse(
        enforce_passthrough(upstream.chunks, tap, judge, call.surface, call.policy),
        headers=headers,
        on_close=on_close,
    )
