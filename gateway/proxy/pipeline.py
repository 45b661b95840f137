"""The scored path, written once for every surface: route, call the upstream, tap the
stream, score, decide, render, store, observe.

`ScoredEndpoint(surface)` is the ASGI endpoint of one surface's route. A
monitored request holds its place in the scoring queue (`MonitorQueue.reservation`)
for as long as its response is being sent, so a stream's text, scored once the
stream ends, always finds room.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, replace
from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from gateway.config import KeySettings, Policy
from gateway.domain import Mode, SkipReason
from gateway.errors import BadRequest, GatewayError, UpstreamError
from gateway.observability.access import CallState, call_state
from gateway.proxy.decisions import (
    DELIVER,
    REPLACE,
    Decision,
    Refusal,
    bias_headers,
    decide,
    skip_headers,
)
from gateway.proxy.exchange import UpstreamCall
from gateway.proxy.intake import read_body, resolve_mode
from gateway.proxy.streaming import (
    SSE_HEADERS,
    SSEResponse,
    StreamTap,
    buffer_all,
    enforce_passthrough,
    relay,
)
from gateway.proxy.surfaces import Surface, SurfaceRequest
from gateway.runtime.resources import Gateway
from gateway.scoring.outcome import Outcome
from gateway.scoring.request import ScoreRequest
from gateway.upstream.client import Target, UpstreamResponse
from gateway.wire.codec import loads

__all__ = ["ScoredEndpoint"]


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        value = loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


_How = Literal["submit", "score", "spawn"]  # queue it, judge it now, judge it as a task


def unjudged(texts: list[str], *, readable: bool, strict: bool) -> SkipReason | None:
    """Why an answer's texts will not be judged, or None when they will be. `strict`
    (whole answers and enforce): an answer with a part the gateway could not read is
    not judged at all, since the client would see text the judge did not."""
    if strict and not readable:
        return "unreadable"
    if texts:
        return None
    return "no_text" if readable else "unreadable"


def _without_type(headers: dict[str, str]) -> dict[str, str]:
    """Upstream headers for a body the gateway writes itself (its own content-type)."""
    return {name: value for name, value in headers.items() if name != "content-type"}


class ScoredEndpoint:
    """The ASGI endpoint of one surface. Errors before the answer starts are written in the
    surface's own error shape, so each SDK raises its own exception type."""

    def __init__(self, surface: Surface) -> None:
        self.surface = surface

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        gateway: Gateway = request.app.state.gateway
        try:
            call = await self._begin(gateway, request)
        except GatewayError as exc:
            await self._error(exc)(scope, receive, send)
            return
        if not gateway.scoring.reserves(call.job):
            # Most requests: no place to hold, so no context manager to enter (its
            # generator would add calls to every mode-off request; `bench.calls`).
            await self._respond(call, True, scope, receive, send)
            return
        async with gateway.scoring.reservation(call.job) as admitted:
            await self._respond(call, admitted, scope, receive, send)

    async def _respond(
        self, call: _Call, admitted: bool, scope: Scope, receive: Receive, send: Send
    ) -> None:
        try:
            response = await call.run(admitted)
        except GatewayError as exc:
            response = self._error(exc)
        await response(scope, receive, send)

    def _error(self, exc: GatewayError) -> Response:
        refusal = Refusal.of(exc)
        return JSONResponse(self.surface.error_body(refusal), status_code=refusal.status)

    async def _begin(self, gateway: Gateway, request: Request) -> _Call:
        settings = gateway.settings
        state = call_state(request.scope)
        state.api = self.surface.name
        key: KeySettings | None = gateway.auth.check(request.headers)
        state.key_name = key.name if key else None
        parsed = self.surface.parse(await read_body(request, settings.server.max_body_bytes))
        state.model, state.stream = parsed.model, parsed.stream
        target = self._target(gateway, parsed.model)
        policy_name = key.policy if key else settings.default_policy
        policy = settings.policies[policy_name]
        mode = resolve_mode(policy, request.headers.get("x-bias-mode"))
        sampled = mode != "off" and gateway.samplers[policy_name].take()
        job = ScoreRequest(
            # Only a scored response needs a run id; skipping uuid4() keeps it off the plain path.
            run_id=str(uuid.uuid4()) if sampled else "",
            policy=policy,
            policy_name=policy_name,
            mode=mode,
            model=parsed.model,
            api=self.surface.name,
            key_name=key.name if key else None,
            stream=parsed.stream,
            request_id=state.request_id,
            prompt=(
                self.surface.prompt_text(parsed.body) if settings.store.capture_content else None
            ),
        )
        call = UpstreamCall(gateway, request, state, self.surface, parsed, target)
        return _Call(gateway, state, self.surface, parsed, policy, mode, job, call)

    def _target(self, gateway: Gateway, model: str) -> Target:
        if self.surface.upstream_path == "/v1/messages":
            return gateway.router.anthropic
        target = gateway.router.resolve(model)
        if target.litellm is not None and self.surface.upstream_path != "/chat/completions":
            raise BadRequest(
                f"The model `{model}` is routed through litellm, which the gateway serves on"
                " /v1/chat/completions only.",
                param="model",
            )
        return target


@dataclass(slots=True)
class _Call:
    """One scored request, from the upstream call to the recorded outcome."""

    gateway: Gateway
    state: CallState
    surface: Surface
    parsed: SurfaceRequest
    policy: Policy
    mode: Mode
    job: ScoreRequest
    upstream_call: UpstreamCall

    @property
    def sampled(self) -> bool:
        return bool(self.job.run_id)

    @property
    def enforce(self) -> bool:
        return self.mode == "enforce"

    async def run(self, admitted: bool) -> Response:
        overloaded = None if admitted else self._finish(self.gateway.scoring.overloaded(self.job))
        upstream = await self.upstream_call.send()
        if self.sampled:  # only a scored request's job is read again
            self.job = replace(self.job, chat_span=self.upstream_call.span_context)
        skip = overloaded if overloaded is not None else self._skip_headers(upstream.status)
        if self.parsed.stream:
            return await self._stream(upstream, skip)
        return await self._complete(upstream, skip)

    # -- outcomes and headers --------------------------------------------------------

    def _finish(self, outcome: Outcome) -> dict[str, str]:
        state = self.state
        state.bias_status, state.verdict = outcome.status, outcome.verdict
        state.score, state.run_id = outcome.score, outcome.run_id
        return bias_headers(outcome)

    def _skip_headers(self, upstream_status: int) -> dict[str, str] | None:
        """Headers for a response that will not be scored, or None when it will be."""
        if self.mode == "off":
            self.state.bias_status = "off"
            return {}
        reason: SkipReason | None = None
        if not self.sampled:
            reason = "not_sampled"
        elif upstream_status >= 400:
            reason = "upstream_error"
        if reason is None:
            return None
        self.gateway.metrics.skipped.labels(reason).inc()
        self.state.bias_status = "skipped"
        return skip_headers(reason)

    # -- whole answers ----------------------------------------------------------------

    async def _complete(self, upstream: UpstreamResponse, skip: dict[str, str] | None) -> Response:
        if skip is not None:
            if upstream.status < 400:
                body = _json_object(upstream.body)
                self.upstream_call.end(body=body if self.surface.readable(body) else None)
            return Response(upstream.body, upstream.status, headers={**upstream.headers, **skip})
        body = _json_object(upstream.body)
        readable = body is not None and self.surface.readable(body)
        self.upstream_call.end(body=body if readable else None)
        texts: list[str] = []
        if body is not None and readable:
            texts = self.surface.texts(body)
            self.job = replace(self.job, response_id=self.surface.facts(body).response_id)
        how: _How = "submit" if self.mode == "monitor" else "score"
        outcome = await self._judge(texts, readable=readable, strict=True, how=how)
        headers = {**upstream.headers, **self._finish(outcome)}
        decision = decide(outcome, self.policy, enforce=self.enforce)
        if decision == DELIVER:
            return Response(upstream.body, upstream.status, headers=headers)
        if decision == REPLACE and body is not None:
            return JSONResponse(self.surface.replaced(body, self.policy), headers=headers)
        return self._refuse(decision, headers)

    def _refuse(self, decision: Decision, headers: dict[str, str]) -> Response:
        assert isinstance(decision, Refusal)
        return JSONResponse(
            self.surface.error_body(decision),
            status_code=decision.status,
            headers=_without_type(headers),
        )

    # -- streams ---------------------------------------------------------------------

    def _tap(self, *, parse: bool = True) -> StreamTap:
        reader = self.surface.reader(max_chars=self.gateway.settings.judge.max_text_chars)
        return StreamTap(reader, parse=parse)

    def _stream_texts(self, tap: StreamTap) -> list[str]:
        """The texts a tap collected; the job learns the response id and any truncation."""
        self.job = replace(
            self.job,
            response_id=tap.reader.facts().response_id,
            truncated=self.job.truncated or tap.reader.truncated,
        )
        return tap.texts()

    async def _stream(self, upstream: UpstreamResponse, skip: dict[str, str] | None) -> Response:
        if upstream.status >= 400 or upstream.chunks is None:
            body = await upstream.read_all()
            return Response(body, upstream.status, headers={**upstream.headers, **(skip or {})})
        if skip is not None:
            return self._relay(upstream, skip, self._tap(parse=False), score=False)
        if self.mode == "monitor":
            outcome = self.gateway.scoring.mark_pending(self.job)
            return self._relay(upstream, self._finish(outcome), self._tap(), score=True)
        if self.policy.stream_policy == "passthrough":
            return self._passthrough(upstream)
        return await self._buffer(upstream)

    async def _settle(self, tap: StreamTap) -> Outcome:
        """Queue a finished stream's text for scoring, or record why there is none."""
        texts = self._stream_texts(tap)
        return await self._judge(texts, readable=tap.readable, strict=False, how="submit")

    async def _judge(self, texts: list[str], *, readable: bool, strict: bool, how: _How) -> Outcome:
        """The one place an answer's texts are judged, queued, or skipped with the reason."""
        scoring = self.gateway.scoring
        reason = unjudged(texts, readable=readable, strict=strict)
        if reason is not None:
            return scoring.skip(self.job, reason)
        if how == "submit":
            return scoring.submit(self.job, texts)
        if how == "score":
            return await scoring.score(self.job, texts)
        # Shielded: a client that leaves now must not cancel the record.
        return await asyncio.shield(scoring.spawn(self.job, texts))

    def _relay(
        self, upstream: UpstreamResponse, headers: dict[str, str], tap: StreamTap, score: bool
    ) -> Response:
        """Monitor (or unscored): the upstream's bytes as they come; scored once it ends."""
        assert upstream.chunks is not None
        failures: list[UpstreamError] = []

        async def on_close(disconnected: bool) -> None:
            await upstream.aclose()
            tap.close()
            error = type(failures[0]).__name__ if failures else None
            self.upstream_call.end(tap=tap, error_type=error)
            if not score:
                return
            partial = disconnected or bool(failures) or not tap.done
            self.job = replace(self.job, partial=partial)
            self.state.partial = partial
            await self._settle(tap)

        return SSEResponse(
            relay(upstream.chunks, tap, failures, self.surface),
            headers={**upstream.headers, **headers},
            on_close=on_close,
        )

    async def _buffer(self, upstream: UpstreamResponse) -> Response:
        """Enforce, stream policy `buffer`: the whole stream, judged before a byte goes out."""
        assert upstream.chunks is not None
        tap = self._tap()
        try:
            body = await buffer_all(upstream.chunks, tap)
        except UpstreamError as exc:
            self.upstream_call.end(tap=tap, error_type=type(exc).__name__)
            raise
        finally:
            await upstream.aclose()
        self.upstream_call.end(tap=tap)
        texts = self._stream_texts(tap)
        outcome = await self._judge(texts, readable=tap.readable, strict=True, how="score")
        headers = {**_without_type(upstream.headers), **self._finish(outcome)}
        decision = decide(outcome, self.policy, enforce=True)
        if decision == DELIVER:
            return Response(
                body, media_type="text/event-stream", headers={**SSE_HEADERS, **headers}
            )
        if decision == REPLACE:
            refusal = self.surface.refusal_stream(tap.reader, self.policy)
            return Response(refusal, media_type="text/event-stream", headers=headers)
        return self._refuse(decision, headers)

    def _passthrough(self, upstream: UpstreamResponse) -> Response:
        """Enforce, stream policy `passthrough`: live events, then the score or an error.

        The run id goes out in the headers before anything is known, so every
        way the stream can end must leave a final record: a stream that ends
        before it is judged (client gone, upstream broken off or stalled) has
        its partial text scored in the background, and a judgement under way
        when the client leaves runs to its end.
        """
        assert upstream.chunks is not None
        tap = self._tap()
        scoring = self.gateway.scoring
        judged = False

        async def judge() -> Outcome:
            nonlocal judged
            judged = True
            self.upstream_call.end(tap=tap)
            texts = self._stream_texts(tap)
            outcome = await self._judge(texts, readable=tap.readable, strict=True, how="spawn")
            self._finish(outcome)
            return outcome

        async def on_close(disconnected: bool) -> None:
            await upstream.aclose()
            self.upstream_call.end(tap=tap, error_type="disconnected" if disconnected else None)
            self.state.partial = disconnected or not judged
            if judged:
                return
            tap.close()
            self.job = replace(self.job, partial=True)
            await self._settle(tap)

        headers = {**upstream.headers, **bias_headers(scoring.mark_pending(self.job))}
        return SSEResponse(
            enforce_passthrough(upstream.chunks, tap, judge, self.surface, self.policy),
            headers=headers,
            on_close=on_close,
        )
