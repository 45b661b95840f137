"""Whole answers streamed to be judged (`prejudge: stream` on a model route; not to be
confused with a policy's `prejudge_buffer`, which judges a buffered stream in windows):
an enforced request for a whole answer is asked of the upstream as a stream with its
usage, delivered by the enforce `buffer` path (`gateway.proxy.buffered`) exactly as a
client's stream would be, and answered with the whole answer rebuilt from that stream
(`Surface.rebuild`, `gateway.wire.rebuild`).

Whatever judging a buffered stream gets while it arrives, a streamed whole answer gets
too, since it goes through the same delivery. Blocks, `x-bias-*` headers, records
and the cache are that delivery's; only the body is turned back into the whole
answer. An error event in the stream, or a stream that ends before its answer does,
is the upstream's failure, raised before anything is judged, as a whole request
would have had it; so is a stream whose text is not its rebuilt answer's.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import Response

from gateway.errors import UpstreamProtocolError
from gateway.proxy.buffered import buffered
from gateway.proxy.call import ScoredCall, without_type
from gateway.proxy.surfaces import Surface
from gateway.proxy.tap import StreamTap
from gateway.upstream.client import UpstreamResponse
from gateway.wire.rebuild import StreamError, Unfinished

__all__ = ["StreamFailed", "deliver_streamed_whole", "streamed_request"]


class StreamFailed(UpstreamProtocolError):
    """A streamed whole answer ended in an error event: `status` and `body` are what the
    upstream answers the same request made whole."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__("the upstream's stream ended in an error event")
        self.status = status
        self.body = body


def streamed_request(call: ScoredCall) -> bytes | None:
    """The streamed request to send instead of the client's, or None to send the client's:
    only an enforced, sampled request for a whole answer on a prejudging route."""
    if not call.enforce or not call.sampled or call.parsed.stream:
        return None
    target = call.upstream_call.target
    if not call.gateway.router.prejudges(target):
        return None
    return call.surface.stream_request(call.parsed, target.model)


class _Rebuilding:
    """Passes the upstream's chunks on unchanged and keeps them; once the stream has
    ended, and before the delivery judges it, rebuilds the whole answer from them."""

    def __init__(self, surface: Surface) -> None:
        self.surface = surface
        self.parts: list[bytes] = []
        self.answer: dict[str, Any] | None = None

    async def chunks(self, source: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        async for chunk in source:
            self.parts.append(chunk)
            yield chunk
        try:
            rebuilt = self.surface.rebuild(b"".join(self.parts))
        except Unfinished as exc:
            raise UpstreamProtocolError(
                f"the upstream's stream ended before its answer did: {exc}"
            ) from exc
        if isinstance(rebuilt, StreamError):
            raise StreamFailed(*self.surface.stream_error(rebuilt))
        if self.surface.texts(rebuilt) != _streamed_texts(self.surface, self.parts):
            # A Responses stream ends with the whole response, which could say other
            # than its deltas did: the client may only get the text that is judged.
            raise UpstreamProtocolError("the upstream's stream and its answer differ")
        self.answer = rebuilt


def _streamed_texts(surface: Surface, parts: list[bytes]) -> list[str]:
    """The texts a stream's events carry, read as the judged stream is read."""
    tap = StreamTap(surface.reader(max_chars=None))
    for part in parts:
        tap.feed(part)
    tap.close()
    return tap.texts()


async def deliver_streamed_whole(call: ScoredCall, upstream: UpstreamResponse) -> Response | None:
    """The whole answer rebuilt from the upstream's stream, as the enforce buffer delivery
    (`buffered`) decided it; None when the upstream answered whole after all (it
    ignored `stream`): `upstream.body` then holds that answer."""
    if upstream.chunks is None:
        return None
    if not upstream.headers.get("content-type", "").startswith("text/event-stream"):
        upstream.body, upstream.chunks = await upstream.read_all(), None
        return None
    rebuilding = _Rebuilding(call.surface)
    upstream.chunks = rebuilding.chunks(upstream.chunks)
    headers = without_type(upstream.headers)
    try:
        delivered = await buffered(call, upstream)
    except StreamFailed as failed:
        # Unscored, as any upstream error is.
        skip = call.skip_headers(failed.status) or {}
        return _json(failed.body, failed.status, {**headers, **skip})
    if delivered.status_code != 200:
        return delivered  # a refusal, already in the surface's shape, with its headers
    headers.update(
        (name, value) for name, value in delivered.headers.items() if name.startswith("x-bias-")
    )
    answer = rebuilding.answer
    if delivered.headers.get("x-bias-verdict") == "block":  # `block_action: replace`
        if answer is None:
            # The delivery stopped reading at a blocking window, so there is no whole
            # answer to put the refusal in: its refusal stream, made in the frame the
            # stream had begun (id, model), is rebuilt whole instead.
            answer = _rebuilt_refusal(call.surface, bytes(delivered.body))
        return _json(call.surface.replaced(answer, call.policy), 200, headers)
    assert answer is not None  # a delivered stream was read to its end
    if answer.get("usage") is None:
        call.gateway.router.without_stream_usage(call.upstream_call.target)
    return _json(answer, 200, headers)


def _rebuilt_refusal(surface: Surface, stream: bytes) -> dict[str, Any]:
    try:
        rebuilt = surface.rebuild(stream)
    except Unfinished:
        return {}
    return {} if isinstance(rebuilt, StreamError) else rebuilt


def _json(body: dict[str, Any], status: int, headers: dict[str, str]) -> Response:
    # json.dumps, not JSONResponse: an upstream's answer may hold what JSONResponse
    # refuses (NaN in a logprob), and goes back as the upstream wrote it.
    return Response(json.dumps(body), status, headers=headers, media_type="application/json")
