"""Monitor's stream delivery (and an unscored stream's): the upstream's bytes go out as
they come, and the answer is scored once the stream has ended."""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.responses import Response

from gateway.errors import UpstreamError
from gateway.proxy.call import ScoredCall
from gateway.proxy.decisions import Refusal
from gateway.proxy.event_stream import SSEResponse
from gateway.proxy.surfaces import Surface
from gateway.proxy.tap import StreamTap
from gateway.upstream.client import UpstreamResponse

__all__ = ["relayed"]


def relayed(
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
        tap.close(cut=bool(failures))
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


async def relay(
    chunks: AsyncIterator[bytes],
    tap: StreamTap,
    failures: list[UpstreamError],
    surface: Surface,
) -> AsyncIterator[bytes]:
    """Forward upstream bytes as they arrive; a failure mid-stream ends in an error frame."""
    try:
        async for chunk in chunks:
            tap.feed(chunk)
            yield chunk
    except UpstreamError as exc:
        failures.append(exc)
        yield surface.error_frame(Refusal.of(exc))
