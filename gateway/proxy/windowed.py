"""Enforce's windowed stream delivery (stream policy `windowed`): events go out as the
windows that end them pass (`hold: window`) or live (`hold: none`), judged by a
`StreamJudgement`, and a blocking window ends the stream."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from starlette.responses import Response

from gateway.config import Policy
from gateway.errors import UpstreamError
from gateway.proxy.call import ScoredCall
from gateway.proxy.decisions import Refusal, bias_headers
from gateway.proxy.event_stream import SSEResponse, last_frame
from gateway.proxy.judgement import StreamJudgement
from gateway.proxy.surfaces import Surface
from gateway.upstream.client import UpstreamResponse

__all__ = ["windowed"]


def windowed(call: ScoredCall, upstream: UpstreamResponse) -> Response:
    """Enforce, stream policy `windowed`: the stream, window by window, then its end."""
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


async def enforce_windowed(
    chunks: AsyncIterator[bytes],
    judgement: StreamJudgement,
    surface: Surface,
    policy: Policy,
) -> AsyncIterator[bytes]:
    """Forward the upstream's events as `judgement` releases them, then end as the
    decision on the whole answer says (`last_frame`: the trailer, or an error frame).

    The upstream is read beside the client, so a window's verdict goes out as soon
    as it comes, even while the upstream is silent. A blocking window's events are
    never sent: the stream ends with the block's error frame, and the upstream is
    not read further.
    """
    failures: list[UpstreamError] = []

    async def pump() -> None:
        try:
            async for chunk in chunks:
                judgement.feed(chunk)
                if judgement.refused:
                    return
        except UpstreamError as exc:
            failures.append(exc)
            judgement.changed.set()
            return
        judgement.end()

    reading = asyncio.ensure_future(pump())
    sent = 0
    try:
        while True:
            if failures:
                yield surface.error_frame(Refusal.of(failures[0]))
                return
            # Under a block, the windows that passed before it still go out.
            released = judgement.passed if judgement.refused else judgement.released
            if released > sent:
                yield b"".join(judgement.frames[sent:released])
                sent = released
            if judgement.refused or (judgement.settled and reading.done()):
                break
            await judgement.changed.wait()
            judgement.changed.clear()
    finally:
        if not reading.done():
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
    outcome = await judgement.outcome()
    rest = b"".join(judgement.frames[sent:])
    yield last_frame(outcome, policy, surface, judgement.tap.reader, judgement.held, rest=rest)
