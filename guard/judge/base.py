"""The `Judge` protocol, and `BaseJudge`: the extension point for a judge over any transport.

`BaseJudge` asks for structured output in the strongest form the endpoint
accepts (JSON schema, then JSON mode, then prompt-only), remembering what
worked; retries 429/5xx and connection failures with backoff; and raises
only the errors of `guard.errors`. A subclass sends one request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from opentelemetry import trace

from guard.errors import JudgeUnavailable
from guard.limits import JudgeLimiter, estimate_tokens
from guard.wire import (
    FormatRejected,
    JudgeReply,
    Message,
    OutputSchema,
    RetryableFailure,
    StructuredMode,
    response_format,
    weaker,
)

__all__ = ["BaseJudge", "Judge"]

_tracer = trace.get_tracer("guard")


@runtime_checkable
class Judge(Protocol):
    """What the scorer needs from an LLM."""

    @property
    def model(self) -> str: ...

    async def complete(
        self, messages: Sequence[Message], *, schema: OutputSchema | None = None
    ) -> JudgeReply: ...

    async def aclose(self) -> None: ...


class BaseJudge:
    """Structured-output fallback, retries with backoff, rate limits, and the client span.

    The extension point for a judge over another transport: subclass it and
    implement `send_once`, which sends one chat-completion request and returns
    its `JudgeReply`, raising `FormatRejected`, `RetryableFailure`,
    `JudgeTimeout` or `JudgeUnavailable`. `guard.wire` does the
    OpenAI-compatible parts:

        from guard import BaseJudge, JudgeReply, RetryableFailure, StructuredMode
        from guard.wire import check_status, openai_request, rate_limit_delay, rate_limit_refill
        from guard.wire import read_completion

        class MyJudge(BaseJudge):
            def __init__(self, client: MyClient, url: str, model: str) -> None:
                super().__init__(
                    model, timeout=30.0, max_retries=2, backoff=0.5,
                    structured=StructuredMode.JSON_SCHEMA, temperature=0.0,
                )
                self.client, self.url = client, url

            async def send_once(self, messages, response_format) -> JudgeReply:
                body, headers = openai_request(
                    self.model, messages, response_format, self.temperature, api_key=None,
                    max_tokens=self.max_tokens,
                )
                try:
                    response = await self.client.post(self.url, body, headers)
                except ConnectionError as exc:
                    raise RetryableFailure(f"judge unreachable: {exc}", None, None) from exc
                check_status(
                    response.status, response.text, response_format,
                    rate_limit_delay(response.headers), refill=rate_limit_refill(response.headers),
                )
                return read_completion(response.text)

    `complete()` (the `Judge` protocol) then adds the rest. Every call goes
    through `limiter` (see `guard.limits`). A 429 pauses the whole client (at
    most the limiter's `max_pause`, then one probe call goes first) and is
    retried, not counted against `max_retries`: the call waits until its
    deadline (`guard.limits.deadline`) or, without one, for up to
    `rate_limit_wait` seconds of 429s, then gives up. Other retryable failures
    (5xx, refused connections) are retried `max_retries` times, `backoff`
    seconds apart, doubling.
    """

    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        timeout: float,
        max_retries: int,
        structured: StructuredMode,
        temperature: float | None,
        backoff: float,
        limiter: JudgeLimiter | None = None,
        rate_limit_wait: float = 300.0,
        max_tokens: int | None = None,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be > 0")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")
        self.limiter = limiter or JudgeLimiter(backoff=backoff)
        self.rate_limit_wait = rate_limit_wait
        self._model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.structured = structured
        self.temperature = temperature
        self.backoff = backoff
        # The longest answer a call may get (None: the endpoint's own limit). A small
        # model held to a schema can otherwise write until its context window is full.
        self.max_tokens = max_tokens

    @property
    def model(self) -> str:
        return self._model

    async def complete(
        self, messages: Sequence[Message], *, schema: OutputSchema | None = None
    ) -> JudgeReply:
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self._model,
        }
        with _tracer.start_as_current_span(
            f"chat {self._model}", kind=trace.SpanKind.CLIENT, attributes=attributes
        ) as span:
            while True:
                mode = self.structured if schema is not None else StructuredMode.PROMPT
                try:
                    reply = await self._send_with_retries(messages, response_format(mode, schema))
                except FormatRejected as exc:
                    if mode is StructuredMode.PROMPT:
                        raise JudgeUnavailable(str(exc), status_code=400) from exc
                    # Remember the downgrade: the endpoint will refuse it next time too.
                    self.structured = weaker(mode)
                    continue
                span.set_attribute("gen_ai.usage.input_tokens", reply.usage.prompt_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", reply.usage.completion_tokens)
                return reply

    async def _send_with_retries(
        self, messages: Sequence[Message], response_format: dict[str, Any] | None
    ) -> JudgeReply:
        limiter = self.limiter
        estimated = estimate_tokens([message["content"] for message in messages])
        attempt = 0
        rate_limited_since: float | None = None
        while True:
            pause: float | None = None
            try:
                async with limiter.call(estimated) as call:
                    try:
                        reply = await self.send_once(messages, response_format)
                    except RetryableFailure as exc:
                        if exc.status_code == 429:
                            pause = call.rate_limited(exc.retry_after, exc.refill)
                        raise
                    used = reply.usage.prompt_tokens + reply.usage.completion_tokens
                    if used:
                        call.settle(used)
            except RetryableFailure as exc:
                if pause is not None:
                    now = limiter.clock.monotonic()
                    rate_limited_since = rate_limited_since or now
                    if now + pause - rate_limited_since > self.rate_limit_wait:
                        raise JudgeUnavailable(
                            f"{exc}: still rate-limited after {now - rate_limited_since:.0f}s",
                            status_code=429,
                        ) from exc
                    continue  # the limiter holds every call until the pause is over
                if attempt == self.max_retries:
                    raise JudgeUnavailable(
                        f"{exc} (gave up after {attempt + 1} attempts)",
                        status_code=exc.status_code,
                    ) from exc
                delay = self.backoff * (2**attempt)
                if exc.retry_after is not None:
                    delay = max(delay, exc.retry_after)
                attempt += 1
                await limiter.sleep(min(delay, 10.0))
                continue
            return reply

    async def send_once(
        self, messages: Sequence[Message], response_format: dict[str, Any] | None
    ) -> JudgeReply:
        """Send one request: the hook subclasses implement (see the class docstring).

        `response_format` is the field to send as is (None: send none).
        """
        raise NotImplementedError

    async def aclose(self) -> None:
        return None
