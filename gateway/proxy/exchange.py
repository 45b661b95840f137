"""The upstream call of a scored request: send it, then end its span and record its
metrics once the answer is complete, whichever delivery carried it."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Protocol

from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanContext
from starlette.requests import Request

from gateway.errors import UpstreamError
from gateway.observability.access import CallState
from gateway.proxy.surfaces import Facts, Surface, SurfaceRequest
from gateway.runtime.resources import Gateway
from gateway.upstream.client import Target, UpstreamResponse

__all__ = ["Streamed", "UpstreamCall"]


class Streamed(Protocol):
    """What the upstream's span reads of a streamed answer (a `StreamTap` is one)."""

    @property
    def first_chunk_at(self) -> float | None: ...

    def facts(self) -> Facts: ...

    def texts(self) -> list[str]: ...


@dataclass(slots=True)
class UpstreamCall:
    """One request to the upstream, with its span and timing."""

    gateway: Gateway
    request: Request
    state: CallState
    surface: Surface
    parsed: SurfaceRequest
    target: Target
    span: Span | None = None
    span_context: SpanContext | None = None
    sent_at: float = 0.0
    stream: bool = False  # whether the upstream was asked for a stream
    status: int | None = None  # the upstream's status, once it answered

    def headers(self) -> dict[str, str]:
        """The headers the upstream is sent: the target's credentials, what is forwarded."""
        headers = {"content-type": "application/json", "accept": "application/json"}
        client = self.request.headers
        for name in self.surface.forwarded_headers:
            value = client.get(name)
            if value is not None:
                headers[name] = value
        headers.update(self.target.auth_headers(client))
        if self.target.anthropic:
            headers.setdefault("anthropic-version", self.target.version or "2023-06-01")
        headers["x-request-id"] = self.state.request_id
        return headers

    async def send(self, *, streamed: bytes | None = None) -> UpstreamResponse:
        """Send the request as the client made it, or `streamed`: the same request asking
        for a stream (`prejudge: stream`)."""
        target = self.target
        self.stream = self.parsed.stream or streamed is not None
        if target.litellm:
            provider = target.litellm.split("/", 1)[0]
        else:
            provider = "anthropic" if target.anthropic else "openai"
        span = self.gateway.telemetry.start_chat(
            self.parsed.model,
            provider=provider,
            base_url=target.base_url,
            stream=self.stream,
            operation=self.surface.operation,
            api=self.surface.name,
        )
        self.span = span
        self.span_context = span.get_span_context()
        headers = self.headers()
        propagate.inject(headers, context=trace.set_span_in_context(span))
        self.sent_at = time.perf_counter()
        try:
            response = await self.gateway.upstream.call(
                target,
                self.surface.upstream_path,
                self.parsed.upstream_body(target.model) if streamed is None else streamed,
                headers,
                stream=self.stream,
            )
        except UpstreamError as exc:
            self.end(error_type=type(exc).__name__)
            raise
        self.status = response.status
        if response.status >= 400:
            self.end(status=response.status, error_type=str(response.status))
        return response

    def end(
        self,
        *,
        body: dict[str, Any] | None = None,
        tap: Streamed | None = None,
        status: int | None = None,
        error_type: str | None = None,
    ) -> None:
        """End the upstream span once its answer is complete, and record its metrics."""
        if self.span is None:
            return
        span, self.span = self.span, None
        elapsed = time.perf_counter() - self.sent_at
        metrics = self.gateway.metrics
        model = metrics.model(self.parsed.model)
        metrics.upstream_seconds.labels(model, str(self.stream).lower()).observe(elapsed)
        metrics.operation_seconds.labels(self.surface.operation, model, "upstream").observe(elapsed)
        ttft = None
        if tap is not None and tap.first_chunk_at is not None:
            ttft = tap.first_chunk_at - self.sent_at
            metrics.ttft_seconds.labels(model).observe(ttft)
        if body is not None:
            facts = self.surface.facts(body)
        else:
            facts = tap.facts() if tap is not None else Facts()
        for kind, tokens in (("input", facts.input_tokens), ("output", facts.output_tokens)):
            if tokens is not None:
                metrics.token_usage.labels(kind, model, "upstream").observe(tokens)
        if self.gateway.telemetry.capture_content and span.is_recording():
            self._capture_content(span, body, tap)
        self.state.upstream_ms = round(elapsed * 1000, 2)
        self.gateway.telemetry.end_chat(
            span,
            response_model=facts.model,
            response_id=facts.response_id,
            finish_reasons=facts.finish_reasons,
            input_tokens=facts.input_tokens,
            output_tokens=facts.output_tokens,
            status=status,
            error_type=error_type,
            ttft_s=ttft,
        )

    def _capture_content(
        self, span: Span, body: dict[str, Any] | None, tap: Streamed | None
    ) -> None:
        """Input and output messages on the span; only under content capture, so the plain
        path never collects the texts."""
        try:
            messages = json.dumps(self.surface.input_messages(self.parsed.body))
        except (ValueError, TypeError, RecursionError):
            messages = None  # too deep to encode: left off
        if messages is not None:
            span.set_attribute("gen_ai.input.messages", messages)
        if body is not None:
            texts = self.surface.texts(body) if self.surface.readable(body) else []
        else:
            texts = tap.texts() if tap is not None else []
        if texts:
            span.set_attribute("gen_ai.output.messages", json.dumps(texts))
