"""Streamed answers: the tap that reads them, the response that relays them, and the
three ways of delivering one (monitor relay, enforce buffer, enforce passthrough).

Every surface streams SSE; what its events mean is the surface's `StreamReader`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from gateway.config import Policy
from gateway.errors import UpstreamError
from gateway.proxy.decisions import DELIVER, REPLACE, Refusal, block_refusal, decide
from gateway.proxy.surfaces import StreamReader, Surface
from gateway.scoring.outcome import Outcome

if TYPE_CHECKING:
    from gateway.proxy.windowed import StreamJudgement
from gateway.wire.sse import SSEDecoder, SSEEvent, encode_event

__all__ = [
    "SSE_HEADERS",
    "SSEResponse",
    "StreamTap",
    "buffer_all",
    "enforce_passthrough",
    "enforce_windowed",
    "relay",
]

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


class StreamTap:
    """Reads the text out of an SSE byte stream as it passes, without altering it.

    `readable` says whether the stream could be read: every event was one the
    surface's reader understood, and every line was an SSE line. With `parse`
    False it only times the first chunk (a stream nobody scores).
    """

    def __init__(self, reader: StreamReader, *, parse: bool = True) -> None:
        self.decoder = SSEDecoder()
        self.reader = reader
        self.parse = parse
        self.first_chunk_at: float | None = None

    @property
    def readable(self) -> bool:
        return self.reader.readable and not self.decoder.ignored_lines

    @property
    def done(self) -> bool:
        return self.reader.done

    def arrived(self) -> None:
        if self.first_chunk_at is None:
            self.first_chunk_at = time.perf_counter()

    def feed(self, data: bytes) -> None:
        if self.first_chunk_at is None:  # `arrived()`, inlined: this runs per chunk
            self.first_chunk_at = time.perf_counter()
        if not self.parse:
            return
        for event in self.decoder.feed(data):
            self.reader.add(event.event, event.data)

    def close(self) -> None:
        for event in self.decoder.flush():
            self.reader.add(event.event, event.data)

    def texts(self) -> list[str]:
        return self.reader.texts()


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


async def buffer_all(chunks: AsyncIterator[bytes], tap: StreamTap) -> bytes:
    """Read a whole upstream stream (enforce, buffer policy)."""
    parts: list[bytes] = []
    async for chunk in chunks:
        tap.feed(chunk)
        parts.append(chunk)
    tap.close()
    return b"".join(parts)


async def enforce_passthrough(
    chunks: AsyncIterator[bytes],
    tap: StreamTap,
    judge: Callable[[], Awaitable[Outcome]],
    surface: Surface,
    policy: Policy,
) -> AsyncIterator[bytes]:
    """Forward events live, hold back the last one, then end as the decision says.

    A pass ends with the surface's trailer (the score, then the held event); a
    block or a judge failure ends with an error frame instead, so SDKs raise.
    A block cannot be replaced here: the text has gone out already.
    """
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
    decision = decide(outcome, policy, enforce=True)
    if decision == DELIVER:
        yield surface.trailer(outcome, tap.reader, held)
    elif decision == REPLACE:
        yield surface.error_frame(block_refusal(outcome, policy))
    else:
        assert isinstance(decision, Refusal)
        yield surface.error_frame(decision)


async def enforce_windowed(
    chunks: AsyncIterator[bytes],
    judgement: StreamJudgement,
    surface: Surface,
    policy: Policy,
) -> AsyncIterator[bytes]:
    """Forward the upstream's events as `judgement` releases them, then end as the
    decision on the whole answer says (the trailer, or an error frame).

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
    decision = decide(outcome, policy, enforce=True)
    if decision == DELIVER:
        rest = b"".join(judgement.frames[sent:])
        yield rest + surface.trailer(outcome, judgement.tap.reader, judgement.held)
    elif decision == REPLACE:
        yield surface.error_frame(block_refusal(outcome, policy))
    else:
        assert isinstance(decision, Refusal)
        yield surface.error_frame(decision)
