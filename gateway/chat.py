"""`POST /v1/chat/completions`: the scored path."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.trace import Span
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from gateway.accumulate import completion_texts, readable_completion
from gateway.codec import loads, with_field
from gateway.config import KeySettings, Policy
from gateway.decisions import bias_headers, judge_error_envelope, render_block
from gateway.errors import (
    BadRequest,
    PayloadTooLarge,
    UpstreamError,
    error_response,
    unreadable_error,
)
from gateway.scoring import Outcome, ScoreRequest
from gateway.state import Gateway
from gateway.streaming import (
    SSEResponse,
    StreamTap,
    buffer_all,
    enforce_passthrough,
    relay,
    render_buffered,
)
from gateway.upstream import Target, UpstreamResponse
from guard.outputs import valid_text

__all__ = ["ChatRequest", "chat_completions", "parse_chat_request", "read_body"]

_MODES = ("off", "monitor", "enforce")
# Client headers worth passing on; everything else (cookies, the gateway key) stays here.
# The trace context is not copied: the chat span injects its own, which carries the client's.
_FORWARDED = ("openai-organization", "openai-project")


@dataclass(frozen=True, slots=True)
class ChatRequest:
    model: str
    stream: bool
    body: dict[str, Any]
    raw: bytes

    def upstream_body(self, target: Target) -> bytes:
        """The body as received, with only the model alias rewritten."""
        if target.model is None or target.model == self.model:
            return self.raw
        try:
            return with_field(self.raw, "model", target.model)
        except ValueError as exc:
            raise BadRequest(f"Request body cannot be forwarded: {exc}") from exc

    def prompt_text(self) -> str:
        """The messages as `role: text` lines, for the store under content capture."""
        messages = self.body.get("messages") or []
        return valid_text(
            "\n\n".join(
                f"{message.get('role')}: {_message_text(message.get('content'))}"
                for message in messages
                if isinstance(message, dict)
            )
        )


def _message_text(content: object) -> str:
    # Only text: `str()` of a hostile nested list would recurse without bound.
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"Request body exceeds the {limit} byte limit.")
    # `receive` itself, not `request.stream()`: an async generator per request costs
    # asyncio a WeakSet entry, which py-spy showed at 3% of a mode-off request.
    parts: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        part: bytes = message.get("body", b"")
        more = message.get("more_body", False)
        size += len(part)
        if size > limit:
            raise PayloadTooLarge(f"Request body exceeds the {limit} byte limit.")
        parts.append(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def parse_chat_request(raw: bytes) -> ChatRequest:
    try:
        body = loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"Request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequest("Request body must be a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("`model` is required and must be a non-empty string.", param="model")
    if valid_text(model) != model:
        # A lone surrogate, escaped in valid JSON: no upstream has such a model, and the
        # name would go on into metric labels, log lines and the store.
        raise BadRequest("`model` must be valid Unicode text.", param="model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("`messages` is required and must be a non-empty array.", param="messages")
    if not all(isinstance(message, dict) for message in messages):
        raise BadRequest("Each entry of `messages` must be an object.", param="messages")
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise BadRequest("`stream` must be a boolean.", param="stream")
    n = body.get("n", 1)
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
        raise BadRequest("`n` must be a positive integer.", param="n")
    return ChatRequest(model=model, stream=bool(stream), body=body, raw=raw)


def _mode(policy: Policy, requested: str | None) -> str:
    if requested is None or not policy.allow_client_override:
        return policy.mode
    requested = requested.strip().lower()
    if requested not in _MODES:
        raise BadRequest(f"x-bias-mode must be one of {', '.join(_MODES)}.", param="x-bias-mode")
    return requested


def _upstream_headers(request: Request, target: Target) -> dict[str, str]:
    headers = {"content-type": "application/json", "accept": "application/json"}
    for name in _FORWARDED:
        value = request.headers.get(name)
        if value is not None:
            headers[name] = value
    client_auth = request.headers.get("authorization")
    if target.forward_client_auth and client_auth:
        headers["authorization"] = client_auth
    elif target.api_key:
        headers["authorization"] = f"Bearer {target.api_key}"
    request_id = request.scope.get("state", {}).get("request_id")
    if request_id:
        headers["x-request-id"] = request_id
    return headers


def _json_text(value: object) -> str | None:
    """`value` as JSON text for a span attribute; None if it cannot be (too deep)."""
    try:
        return json.dumps(value)
    except (ValueError, TypeError, RecursionError):
        return None


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        value = loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _response_facts(completion: dict[str, Any] | None, tap: StreamTap | None) -> dict[str, Any]:
    """The response's id, model, finish reasons and usage, from a body or a stream."""
    if completion is not None:
        raw_choices = completion.get("choices")
        choices = (
            [c for c in raw_choices if isinstance(c, dict)] if isinstance(raw_choices, list) else []
        )
        return {
            "id": _id_text(completion.get("id")),
            "model": _id_text(completion.get("model")),
            "finish_reasons": [
                str(c.get("finish_reason")) for c in choices if c.get("finish_reason")
            ],
            "usage": completion.get("usage") if isinstance(completion.get("usage"), dict) else None,
        }
    if tap is not None and tap.parse:
        accumulator = tap.accumulator
        return {
            "id": accumulator.response_id,
            "model": accumulator.model,
            "finish_reasons": list(accumulator.finish_reasons.values()),
            "usage": accumulator.usage,
        }
    return {}


def _id_text(value: object) -> str | None:
    """An upstream's `id` (or `model`) as text: numbers are spelled out, other types dropped."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _skipped(reason: str) -> dict[str, str]:
    return {"x-bias-status": "skipped", "x-bias-skip-reason": reason}


def _note(request: Request, **fields: Any) -> None:
    """Fields for the access log line, which `gateway.access` writes after the response."""
    request.scope.setdefault("state", {}).setdefault("access", {}).update(fields)


async def chat_completions(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    settings = gateway.settings
    key: KeySettings | None = gateway.auth.check(request.headers)
    _note(request, key_name=key.name if key else None)
    chat = parse_chat_request(await read_body(request, settings.server.max_body_bytes))
    _note(request, model=chat.model, stream=chat.stream)
    target = gateway.router.resolve(chat.model)
    policy_name = key.policy if key else settings.default_policy
    policy = settings.policies[policy_name]
    mode = _mode(policy, request.headers.get("x-bias-mode"))
    sampled = mode != "off" and gateway.samplers[policy_name].take()
    job = ScoreRequest(
        # Only a scored response needs a run id; skipping uuid4() keeps it off the plain path.
        run_id=str(uuid.uuid4()) if sampled else "",
        policy=policy,
        mode=mode,
        model=chat.model,
        key_name=key.name if key else None,
        stream=chat.stream,
        request_id=request.scope.get("state", {}).get("request_id"),
        prompt=chat.prompt_text() if settings.store.capture_content else None,
    )
    call = _Call(gateway, request, chat, target, policy, mode, sampled, job)
    try:
        if chat.stream:
            return await call.stream()
        return await call.complete()
    except BaseException:
        gateway.scoring.release(job)  # a failed request gives back its place in the queue
        raise


@dataclass(slots=True)
class _Call:
    gateway: Gateway
    request: Request
    chat: ChatRequest
    target: Target
    policy: Policy
    mode: str
    sampled: bool
    job: ScoreRequest
    span: Span | None = None
    sent_at: float = 0.0

    async def _send(self, *, stream: bool) -> UpstreamResponse:
        target = self.target
        provider = target.litellm.split("/", 1)[0] if target.litellm else "openai"
        span = self.gateway.telemetry.start_chat(
            self.chat.model, provider=provider, base_url=target.base_url, stream=stream
        )
        self.span = span
        self.job.chat_span = span.get_span_context()
        headers = _upstream_headers(self.request, target)
        propagate.inject(headers, context=trace.set_span_in_context(span))
        self.sent_at = time.perf_counter()
        try:
            response = await self.gateway.upstream.chat(
                target, self.chat.upstream_body(target), headers, stream=stream
            )
        except UpstreamError as exc:
            self._end_chat(error_type=type(exc).__name__)
            raise
        if response.status >= 400:
            self._end_chat(status=response.status, error_type=str(response.status))
        return response

    def _end_chat(
        self,
        *,
        completion: dict[str, Any] | None = None,
        tap: StreamTap | None = None,
        status: int | None = None,
        error_type: str | None = None,
    ) -> None:
        """End the chat span once the upstream answer is complete, and record its metrics."""
        if self.span is None:
            return
        span, self.span = self.span, None
        elapsed = time.perf_counter() - self.sent_at
        metrics = self.gateway.metrics
        model = metrics.model(self.chat.model)
        metrics.upstream_seconds.labels(model, str(self.chat.stream).lower()).observe(elapsed)
        metrics.operation_seconds.labels("chat", model, "upstream").observe(elapsed)
        ttft = None
        if tap is not None and tap.first_chunk_at is not None:
            ttft = tap.first_chunk_at - self.sent_at
            metrics.ttft_seconds.labels(model).observe(ttft)
        facts = _response_facts(completion, tap)
        usage = facts.get("usage") or {}
        for kind, key in (("input", "prompt_tokens"), ("output", "completion_tokens")):
            if isinstance(usage.get(key), int):
                metrics.token_usage.labels(kind, model, "upstream").observe(usage[key])
        if self.gateway.telemetry.capture_content and span.is_recording():
            messages = _json_text(self.chat.body["messages"])
            if messages is not None:
                span.set_attribute("gen_ai.input.messages", messages)
            # Only here, under content capture: the plain path never collects the texts.
            if completion is not None:
                texts = list(completion_texts(completion).values())
            else:
                texts = tap.texts() if tap is not None and tap.parse else []
            if texts:
                span.set_attribute("gen_ai.output.messages", json.dumps(texts))
        _note(self.request, upstream_ms=round(elapsed * 1000, 2))
        self.gateway.telemetry.end_chat(
            span,
            response_model=facts.get("model"),
            response_id=facts.get("id"),
            finish_reasons=facts.get("finish_reasons"),
            usage=usage,
            status=status,
            error_type=error_type,
            ttft_s=ttft,
        )

    def _finish(self, outcome: Outcome) -> dict[str, str]:
        _note(
            self.request,
            bias_status=outcome.status,
            verdict=outcome.verdict,
            score=outcome.score,
            run_id=outcome.run_id,
        )
        return bias_headers(outcome)

    async def _admit(self) -> dict[str, str] | None:
        """Monitor mode: a place in the scoring queue; headers of the skip when none came."""
        if self.mode != "monitor" or not self.sampled:
            return None
        scoring = self.gateway.scoring
        if await scoring.admit(self.job):
            return None
        return self._finish(scoring.overloaded(self.job))

    def _skip_headers(self, upstream_status: int) -> dict[str, str] | None:
        """Headers for a response that will not be scored, or None when it will be."""
        if self.mode == "off":
            _note(self.request, bias_status="off")
            return {}
        reason = None
        if not self.sampled:
            reason = "not_sampled"
        elif upstream_status >= 400:
            reason = "upstream_error"
        if reason is None:
            return None
        self.gateway.scoring.release(self.job)
        self.gateway.metrics.skipped.labels(reason).inc()
        _note(self.request, bias_status="skipped")
        return _skipped(reason)

    async def complete(self) -> Response:
        overloaded = await self._admit()
        upstream = await self._send(stream=False)
        skip = overloaded if overloaded is not None else self._skip_headers(upstream.status)
        if skip is not None:
            if upstream.status < 400:
                self._end_chat(completion=_json_object(upstream.body))
            return Response(upstream.body, upstream.status, headers={**upstream.headers, **skip})
        completion = _json_object(upstream.body)
        self._end_chat(completion=completion)
        scoring = self.gateway.scoring
        if completion is None or not readable_completion(completion):
            return self._unreadable(upstream)
        texts = [text for text in completion_texts(completion).values() if text]
        self.job.response_id = _id_text(completion.get("id"))
        if not texts:
            outcome = scoring.skip(self.job, "no_text")
        elif self.mode == "monitor":
            outcome = scoring.submit(self.job, texts)
        else:
            outcome = await scoring.score(self.job, texts)
        headers = {**upstream.headers, **self._finish(outcome)}
        if outcome.status == "error" and self.policy.on_judge_error == "block":
            headers.pop("content-type", None)
            return JSONResponse(judge_error_envelope(outcome), status_code=503, headers=headers)
        if outcome.verdict == "block":
            headers.pop("content-type", None)
            return render_block(outcome, self.policy, completion, headers)
        return Response(upstream.body, upstream.status, headers=headers)

    def _unreadable(self, upstream: UpstreamResponse) -> Response:
        """A 200 the gateway cannot read: recorded as skipped (`unreadable`).

        Monitor passes it on as it came. Enforce answers 502
        `upstream_protocol_error`: it cannot tell what text the client would
        see, so it may not treat the answer as having none.
        """
        outcome = self.gateway.scoring.skip(self.job, "unreadable")
        headers = {**upstream.headers, **self._finish(outcome)}
        if self.mode != "enforce":
            return Response(upstream.body, upstream.status, headers=headers)
        headers.pop("content-type", None)
        return error_response(unreadable_error(), headers)

    async def stream(self) -> Response:
        overloaded = await self._admit()
        upstream = await self._send(stream=True)
        skip = overloaded if overloaded is not None else self._skip_headers(upstream.status)
        if upstream.status >= 400 or upstream.chunks is None:
            self.gateway.scoring.release(self.job)
            body = await upstream.read_all()
            headers = {**upstream.headers, **(skip or {})}
            return Response(body, upstream.status, headers=headers)
        if skip is not None:
            return self._relay(upstream, skip, tap=StreamTap(parse=False), score=False)
        if self.mode == "monitor":
            outcome = self.gateway.scoring.mark_pending(self.job)
            return self._relay(upstream, self._finish(outcome), tap=self._tap(), score=True)
        if self.policy.stream_policy == "passthrough":
            return self._passthrough(upstream)
        return await self._buffer(upstream)

    def _relay(
        self, upstream: UpstreamResponse, headers: dict[str, str], tap: StreamTap, score: bool
    ) -> Response:
        assert upstream.chunks is not None
        failures: list[UpstreamError] = []

        async def on_close(disconnected: bool) -> None:
            await upstream.aclose()
            tap.close()
            error = type(failures[0]).__name__ if failures else None
            self._end_chat(tap=tap, error_type=error)
            if not score:
                return
            self.job.partial = disconnected or bool(failures) or not tap.done
            _note(self.request, partial=self.job.partial)
            texts = self._stream_texts(tap)
            if texts:
                self.gateway.scoring.submit(self.job, texts)
            else:
                self.gateway.scoring.skip(self.job, "no_text" if tap.readable else "unreadable")

        return SSEResponse(
            relay(upstream.chunks, tap, failures),
            headers={**upstream.headers, **headers},
            on_close=on_close,
        )

    async def _buffer(self, upstream: UpstreamResponse) -> Response:
        assert upstream.chunks is not None
        tap = self._tap()
        try:
            body = await buffer_all(upstream.chunks, tap)
        except UpstreamError as exc:
            self._end_chat(tap=tap, error_type=type(exc).__name__)
            return error_response(exc)
        finally:
            await upstream.aclose()
        self._end_chat(tap=tap)
        texts = self._stream_texts(tap)
        if not tap.readable:
            outcome = self.gateway.scoring.skip(self.job, "unreadable")
            headers = {**upstream.headers, **self._finish(outcome)}
            headers.pop("content-type", None)
            return error_response(unreadable_error(), headers)
        if texts:
            outcome = await self.gateway.scoring.score(self.job, texts)
        else:
            outcome = self.gateway.scoring.skip(self.job, "no_text")
        return render_buffered(outcome, body, tap, self.policy, {**upstream.headers})

    def _passthrough(self, upstream: UpstreamResponse) -> Response:
        """Enforce, stream policy `passthrough`: live events, then the bias chunk.

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
            self._end_chat(tap=tap)
            texts = self._stream_texts(tap)
            if not tap.readable:
                outcome = scoring.skip(self.job, "unreadable")
            elif not texts:
                outcome = scoring.skip(self.job, "no_text")
            else:
                # Shielded: a client that leaves now must not cancel the record.
                outcome = await asyncio.shield(scoring.spawn(self.job, texts))
            self._finish(outcome)
            return outcome

        async def on_close(disconnected: bool) -> None:
            await upstream.aclose()
            self._end_chat(tap=tap, error_type="disconnected" if disconnected else None)
            _note(self.request, partial=disconnected or not judged)
            if judged:
                return
            tap.close()
            self.job.partial = True
            texts = self._stream_texts(tap)
            if texts:
                scoring.submit(self.job, texts)
            else:
                scoring.skip(self.job, "no_text" if tap.readable else "unreadable")

        scoring.mark_pending(self.job)
        headers = {**upstream.headers, "x-bias-status": "pending", "x-bias-run-id": self.job.run_id}
        return SSEResponse(
            enforce_passthrough(upstream.chunks, tap, judge, self.policy),
            headers=headers,
            on_close=on_close,
        )

    def _tap(self) -> StreamTap:
        return StreamTap(max_chars=self.gateway.settings.judge.max_text_chars)

    def _stream_texts(self, tap: StreamTap) -> list[str]:
        """The texts a tap collected; the job learns the response id and any truncation."""
        self.job.response_id = tap.accumulator.response_id
        self.job.truncated = self.job.truncated or tap.accumulator.truncated
        return tap.texts()
