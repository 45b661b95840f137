"""Which way a scored answer reaches the client: whole (`whole`), or streamed as monitor
relays it (`relay`), as enforce buffers it (`buffered`), live with the verdict at its
end (`live`) or window by window (`windowed`); an enforced whole answer on a route
that streams it to judge it is `streamed_whole`'s."""

from __future__ import annotations

from dataclasses import replace

from starlette.responses import Response

from gateway.proxy.buffered import buffered
from gateway.proxy.call import ScoredCall
from gateway.proxy.live import live
from gateway.proxy.relay import relayed
from gateway.proxy.streamed_whole import deliver_streamed_whole, streamed_request
from gateway.proxy.whole import whole
from gateway.proxy.windowed import windowed
from gateway.upstream.client import UpstreamResponse

__all__ = ["deliver"]


async def deliver(call: ScoredCall, admitted: bool) -> Response:
    """Call the upstream, then deliver its answer as the request and its policy say.
    `admitted` is False when the request found no place in a full monitor queue."""
    overloaded = None if admitted else call.finish(call.gateway.scoring.overloaded(call.job))
    streamed = streamed_request(call)
    upstream = await call.upstream_call.send(streamed=streamed)
    skip = overloaded if overloaded is not None else call.skip_headers(upstream.status)
    if streamed is not None and skip is None:
        answer = await deliver_streamed_whole(call, upstream)
        if answer is not None:
            return answer
    if call.parsed.stream:
        return await _stream(call, upstream, skip)
    return await whole(call, upstream, skip)


async def _stream(
    call: ScoredCall, upstream: UpstreamResponse, skip: dict[str, str] | None
) -> Response:
    if upstream.status >= 400 or upstream.chunks is None:
        body = await upstream.read_all()
        return Response(body, upstream.status, headers={**upstream.headers, **(skip or {})})
    if skip is not None:
        return relayed(call, upstream, skip, call.tap(parse=False), score=False)
    # The span goes on the pending record; the answer's facts join it when the stream ends.
    call.job = replace(call.job, chat_span=call.upstream_call.span_context)
    if call.mode == "monitor":
        outcome = call.gateway.scoring.mark_pending(call.job)
        return relayed(call, upstream, call.finish(outcome), call.tap(), score=True)
    if call.policy.stream_policy == "passthrough":
        return live(call, upstream)
    if call.policy.stream_policy == "windowed":
        return windowed(call, upstream)
    return await buffered(call, upstream)
