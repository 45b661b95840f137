"""Enforce's live stream delivery (stream policy `passthrough`): events go out as they
come, the last one held back, and the stream ends with the score or an error."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.responses import Response

from gateway.config import Policy
from gateway.errors import UpstreamError
from gateway.proxy.call import ScoredCall
from gateway.proxy.decisions import Refusal, bias_headers
from gateway.proxy.event_stream import SSEResponse, last_frame
from gateway.proxy.surfaces import Surface
from gateway.proxy.tap import StreamTap
from gateway.scoring.outcome import Outcome
from gateway.upstream.client import UpstreamResponse
from gateway.wire.sse import SSEEvent, encode_event

__all__ = ["live"]


def live(call: ScoredCall, upstream: UpstreamResponse) -> Response:
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
        tap.close(cut=True)
        await call.settle(tap, partial=True)

    headers = {**upstream.headers, **bias_headers(scoring.mark_pending(call.job))}
    return SSEResponse(
        enforce_passthrough(upstream.chunks, tap, judge, call.surface, call.policy),
        headers=headers,
        on_close=on_close,
    )


async def enforce_passthrough(
    chunks: AsyncIterator[bytes],
    tap: StreamTap,
    judge: Callable[[], Awaitable[Outcome]],
    surface: Surface,
    policy: Policy,
) -> AsyncIterator[bytes]:
    """Forward events live, hold back the last one, then end as the decision says
    (`last_frame`)."""
    held: list[SSEEvent] = []

    def forward(events: list[SSEEvent]) -> bytes:
        frames = []
        for event in events:
            if tap.reader.add(event.event, event.data):
                held.append(event)
            else:
                frames.append(encode_event(event.data, event=event.event))
        return b"".join(frames)

    try:
        async for chunk in chunks:
            tap.arrived()
            frames = forward(tap.decoder.feed(chunk))
            if frames:
                yield frames
    except UpstreamError as exc:
        yield surface.error_frame(Refusal.of(exc))
        return
    frames = forward(tap.decoder.flush())
    if frames:
        yield frames
    outcome = await judge()
    yield last_frame(outcome, policy, surface, tap.reader, held)
