"""Enforce's buffered stream delivery (stream policy `buffer`): the whole stream is read
and judged before a byte goes out, then sent at once, or the refusal instead.

With `prejudge_buffer` (the default) the stream is judged in windows while it
arrives (`StreamJudgement`): once its last byte is in, only the last window is
left to judge. A whole answer asked of the upstream as a stream
(`gateway.proxy.streamed_whole`) is delivered here too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from starlette.responses import Response

from gateway.errors import UpstreamError
from gateway.proxy.call import ScoredCall, without_type
from gateway.proxy.decisions import bias_headers, decide, render
from gateway.proxy.event_stream import SSE_HEADERS
from gateway.proxy.judgement import StreamJudgement
from gateway.proxy.tap import StreamTap
from gateway.scoring.outcome import Outcome
from gateway.upstream.client import UpstreamResponse

__all__ = ["buffer_all", "buffered"]


async def buffered(call: ScoredCall, upstream: UpstreamResponse) -> Response:
    """Enforce, stream policy `buffer`: judged in windows as it arrives
    (`prejudge_buffer`) or whole once it has."""
    if call.policy.windows.buffer:
        return await _judged_in_windows(call, upstream)
    return await _judged_whole(call, upstream)


async def _judged_whole(call: ScoredCall, upstream: UpstreamResponse) -> Response:
    """The whole stream, judged before a byte goes out."""
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
    return _answer(call, outcome, body, tap, headers)


async def _judged_in_windows(call: ScoredCall, upstream: UpstreamResponse) -> Response:
    """The stream judged in windows while the upstream streams; the client still gets the
    whole stream at once, or the refusal, as `_judged_whole` gives them."""
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
    return _answer(call, outcome, b"".join(judgement.chunks), tap, headers)


def _answer(
    call: ScoredCall, outcome: Outcome, body: bytes, tap: StreamTap, headers: dict[str, str]
) -> Response:
    """The buffered stream as its outcome decides: all of it, the refusal as a stream, or
    the error."""
    return render(
        decide(outcome, call.policy, enforce=True),
        deliver=lambda: Response(
            body, media_type="text/event-stream", headers={**SSE_HEADERS, **headers}
        ),
        replace=lambda: Response(
            call.surface.refusal_stream(tap.reader, call.policy),
            media_type="text/event-stream",
            headers=headers,
        ),
        refuse=lambda refusal: call.refuse(refusal, headers),
    )


async def buffer_all(chunks: AsyncIterator[bytes], tap: StreamTap) -> bytes:
    """Read a whole upstream stream."""
    parts: list[bytes] = []
    async for chunk in chunks:
        tap.feed(chunk)
        parts.append(chunk)
    tap.close()
    return b"".join(parts)
