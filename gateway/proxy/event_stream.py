"""The streaming response every streamed delivery sends (`SSEResponse`), and the last
frame an enforced live stream ends with once its answer is decided (`last_frame`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from gateway.config import Policy
from gateway.proxy.decisions import block_refusal, decide, render
from gateway.proxy.surfaces import StreamReader, Surface
from gateway.scoring.outcome import Outcome
from gateway.wire.sse import SSEEvent

__all__ = ["SSE_HEADERS", "SSEResponse", "last_frame"]

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


class SSEResponse(Response):
    """A streaming response that notices a client disconnect at once and always cleans up.

    Made for SSE, it streams any body: a `content-type` in `headers` wins.

    Starlette's `StreamingResponse` only sees a disconnect at its next send on
    ASGI 2.4 servers; a stalled upstream would then hold its connection open.
    Here a listener runs beside the pump, and `on_close(disconnected)` runs
    whatever happened.
    """

    media_type = "text/event-stream"

    def __init__(
        self,
        frames: AsyncIterator[bytes],
        *,
        headers: dict[str, str],
        on_close: Callable[[bool], Awaitable[None]],
        status_code: int = 200,
    ) -> None:
        self.frames = frames
        self.on_close = on_close
        self.status_code = status_code
        self.background = None
        self.init_headers({**SSE_HEADERS, **headers})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        pump = asyncio.ensure_future(self._pump(send))
        watch = asyncio.ensure_future(_wait_for_disconnect(receive))
        disconnected = False
        try:
            await asyncio.wait({pump, watch}, return_when=asyncio.FIRST_COMPLETED)
            if not pump.done():
                disconnected = True
                pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await pump
            disconnected = disconnected or (pump.done() and _failed_to_send(pump))
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
            aclose = getattr(self.frames, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
            await self.on_close(disconnected)

    async def _pump(self, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        async for frame in self.frames:
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _wait_for_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


def _failed_to_send(task: asyncio.Future[None]) -> bool:
    return not task.cancelled() and isinstance(task.exception(), OSError)


def last_frame(
    outcome: Outcome,
    policy: Policy,
    surface: Surface,
    reader: StreamReader,
    held: list[SSEEvent],
    *,
    rest: bytes = b"",
) -> bytes:
    """How an enforced stream whose events went out live ends: a pass with `rest` (events
    not sent yet) and the surface's trailer (the score, then the `held` last event); a
    block or a judge failure with an error frame instead, so SDKs raise. A block cannot
    be replaced: the text has gone out already."""
    return render(
        decide(outcome, policy, enforce=True),
        deliver=lambda: rest + surface.trailer(outcome, reader, held),
        replace=lambda: surface.error_frame(block_refusal(outcome, policy)),
        refuse=surface.error_frame,
    )
