"""Streaming chat completions: monitor (byte-for-byte), enforce buffer, enforce passthrough."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from gateway.accumulate import ChunkAccumulator
from gateway.codec import loads
from gateway.config import Policy
from gateway.decisions import (
    bias_chunk,
    bias_headers,
    block_envelope,
    judge_error_envelope,
    refusal_stream,
)
from gateway.errors import UpstreamError, envelope, status_of, unreadable_error
from gateway.scoring import Outcome
from gateway.sse import SSEDecoder, encode_event

__all__ = [
    "SSEResponse",
    "StreamTap",
    "buffer_all",
    "enforce_passthrough",
    "error_frame",
    "relay",
    "render_buffered",
]

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


class StreamTap:
    """Reads the text out of an SSE byte stream as it passes, without altering it.

    `readable` says whether the stream could be read: every event's data was a
    JSON object (or `[DONE]`) with no `error`, and every line was an SSE line.
    `max_chars` bounds the text kept per choice.
    """

    def __init__(self, *, parse: bool = True, max_chars: int | None = None) -> None:
        self.decoder = SSEDecoder()
        self.accumulator = ChunkAccumulator(max_chars=max_chars)
        self.parse = parse  # False: only time the first chunk (unscored streams)
        self.done = False
        self.first_chunk_at: float | None = None
        self.unreadable = 0  # events whose data was not a chunk

    @property
    def readable(self) -> bool:
        return not self.unreadable and not self.decoder.ignored_lines

    def feed(self, data: bytes) -> None:
        if self.first_chunk_at is None:
            self.first_chunk_at = time.perf_counter()
        if not self.parse:
            return
        for event in self.decoder.feed(data):
            self.add_data(event.data)

    def close(self) -> None:
        for event in self.decoder.flush():
            self.add_data(event.data)

    def add_data(self, data: str) -> None:
        if data == "[DONE]":
            self.done = True
            return
        try:
            chunk = loads(data)
        except ValueError:
            self.unreadable += 1
            return
        if not isinstance(chunk, dict) or "error" in chunk:
            self.unreadable += 1
            return
        self.accumulator.add(chunk)

    def texts(self) -> list[str]:
        return [text for text in self.accumulator.texts().values() if text]


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


def error_frame(body: dict[str, Any]) -> bytes:
    return encode_event(json.dumps(body))


def upstream_error_frame(exc: UpstreamError) -> bytes:
    _, kind, code = status_of(exc)
    return error_frame(envelope(exc.message, type=kind, code=code))


async def relay(
    chunks: AsyncIterator[bytes], tap: StreamTap, failures: list[UpstreamError]
) -> AsyncIterator[bytes]:
    """Forward upstream bytes as they arrive; a failure mid-stream ends in an error frame."""
    try:
        async for chunk in chunks:
            tap.feed(chunk)
            yield chunk
    except UpstreamError as exc:
        failures.append(exc)
        yield upstream_error_frame(exc)


async def buffer_all(chunks: AsyncIterator[bytes], tap: StreamTap) -> bytes:
    """Read a whole upstream stream (enforce, buffer policy)."""
    parts: list[bytes] = []
    async for chunk in chunks:
        tap.feed(chunk)
        parts.append(chunk)
    tap.close()
    return b"".join(parts)


def render_buffered(
    outcome: Outcome,
    body: bytes,
    tap: StreamTap,
    policy: Policy,
    headers: dict[str, str],
) -> Response:
    """The reply to an enforce-mode stream once the whole upstream stream is in hand."""
    headers = {name: value for name, value in headers.items() if name != "content-type"}
    headers.update(bias_headers(outcome))
    if outcome.status == "error" and policy.on_judge_error == "block":
        return JSONResponse(judge_error_envelope(outcome), status_code=503, headers=headers)
    if outcome.verdict == "block":
        if policy.block_action == "replace":
            refusal = refusal_stream(tap.accumulator.response_id, tap.accumulator.model, policy)
            return Response(refusal, media_type="text/event-stream", headers=headers)
        return JSONResponse(
            block_envelope(outcome, policy), status_code=policy.block_status, headers=headers
        )
    return Response(body, media_type="text/event-stream", headers={**SSE_HEADERS, **headers})


async def enforce_passthrough(
    chunks: AsyncIterator[bytes],
    tap: StreamTap,
    judge: Callable[[], Awaitable[Outcome]],
    policy: Policy,
) -> AsyncIterator[bytes]:
    """Forward events live, hold back `[DONE]`, then send the bias chunk or an error frame."""
    try:
        async for chunk in chunks:
            if tap.first_chunk_at is None:
                tap.first_chunk_at = time.perf_counter()
            for event in tap.decoder.feed(chunk):
                if event.data == "[DONE]":
                    tap.done = True
                    continue
                tap.add_data(event.data)
                yield encode_event(event.data, event=event.event)
    except UpstreamError as exc:
        yield upstream_error_frame(exc)
        return
    for event in tap.decoder.flush():
        if event.data != "[DONE]":
            tap.add_data(event.data)
            yield encode_event(event.data, event=event.event)
    outcome = await judge()
    if outcome.status == "skipped" and outcome.status_reason == "unreadable":
        yield upstream_error_frame(unreadable_error())
        return
    if outcome.status == "error" and policy.on_judge_error == "block":
        yield error_frame(judge_error_envelope(outcome))
        return
    if outcome.verdict == "block":
        yield error_frame(block_envelope(outcome, policy))
        return
    yield bias_chunk(outcome, tap.accumulator.response_id, tap.accumulator.model)
    yield encode_event("[DONE]")
