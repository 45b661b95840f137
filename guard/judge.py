"""The judge: the LLM that answers the scorer's prompts.

A judge is anything with a `model` name, an async `complete()` and an async
`aclose()`. Two ship here:

- `OpenAIJudge` calls any OpenAI-compatible `/chat/completions` endpoint over
  httpx. It never imports litellm.
- `LiteLLMJudge` routes a `provider/model` string through litellm, imported
  only when the first call is made.

Both ask for structured output in the strongest form the endpoint accepts
(JSON schema, then JSON mode, then prompt-only), remembering what worked.
They retry 429/5xx and connection failures with backoff and raise only the
errors of `guard.errors`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import httpx
from opentelemetry import trace

from guard.errors import JudgeTimeout, JudgeUnavailable
from guard.limits import JudgeLimiter, estimate_tokens
from guard.wire import (
    FormatRejected,
    JudgeReply,
    Message,
    OutputSchema,
    RetryableFailure,
    StructuredMode,
    check_status,
    openai_request,
    rate_limit_delay,
    read_completion,
    response_format,
    weaker,
)

__all__ = [
    "BaseJudge",
    "Judge",
    "LiteLLMJudge",
    "OpenAIJudge",
    "import_litellm",
    "resolve_judge",
]

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
        from guard.wire import check_status, openai_request, rate_limit_delay, read_completion

        class MyJudge(BaseJudge):
            def __init__(self, client: MyClient, url: str, model: str) -> None:
                super().__init__(
                    model, timeout=30.0, max_retries=2, backoff=0.5,
                    structured=StructuredMode.JSON_SCHEMA, temperature=0.0,
                )
                self.client, self.url = client, url

            async def send_once(self, messages, response_format) -> JudgeReply:
                body, headers = openai_request(
                    self.model, messages, response_format, self.temperature, api_key=None
                )
                try:
                    response = await self.client.post(self.url, body, headers)
                except ConnectionError as exc:
                    raise RetryableFailure(f"judge unreachable: {exc}", None, None) from exc
                check_status(
                    response.status, response.text, response_format,
                    rate_limit_delay(response.headers),
                )
                return read_completion(response.text)

    `complete()` (the `Judge` protocol) then adds the rest. Every call goes
    through `limiter` (see `guard.limits`). A 429 pauses the whole client and
    is retried, not counted against `max_retries`: the call waits until its
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
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be > 0")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.limiter = limiter or JudgeLimiter(backoff=backoff)
        self.rate_limit_wait = rate_limit_wait
        self._model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.structured = structured
        self.temperature = temperature
        self.backoff = backoff

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
            try:
                async with limiter.call(estimated) as call:
                    reply = await self.send_once(messages, response_format)
                    used = reply.usage.prompt_tokens + reply.usage.completion_tokens
                    if used:
                        call.settle(used)
            except RetryableFailure as exc:
                if exc.status_code == 429:
                    now = time.monotonic()
                    rate_limited_since = rate_limited_since or now
                    pause = limiter.rate_limited(exc.retry_after)
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
            limiter.succeeded()
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


class OpenAIJudge(BaseJudge):
    """A judge behind any OpenAI-compatible endpoint, called directly over HTTP.

    >>> judge = OpenAIJudge(base_url="http://localhost:11434/v1", model="llama3.1")
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        structured: StructuredMode = StructuredMode.JSON_SCHEMA,
        temperature: float | None = 0.0,
        backoff: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
        limiter: JudgeLimiter | None = None,
    ) -> None:
        super().__init__(
            model,
            timeout=timeout,
            max_retries=max_retries,
            structured=structured,
            temperature=temperature,
            backoff=backoff,
            limiter=limiter,
        )
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"OpenAIJudge(base_url={self.base_url!r}, model={self.model!r})"

    def _client_for_running_loop(self) -> httpx.AsyncClient:
        # An httpx pool is bound to the loop that opened it; `run_sync` makes a new loop per call.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = httpx.AsyncClient(transport=self._transport, timeout=self.timeout)
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def send_once(
        self, messages: Sequence[Message], response_format: dict[str, Any] | None
    ) -> JudgeReply:
        body, headers = openai_request(
            self.model, messages, response_format, self.temperature, self._api_key
        )
        url = f"{self.base_url}/chat/completions"
        try:
            response = await self._client_for_running_loop().post(url, json=body, headers=headers)
        except httpx.TimeoutException as exc:
            if _refused(exc):
                raise RetryableFailure(f"judge at {url} unreachable: {exc!r}", None, None) from exc
            raise JudgeTimeout(f"judge call to {url} timed out after {self.timeout}s") from exc
        except httpx.TransportError as exc:
            raise RetryableFailure(f"judge at {url} unreachable: {exc!r}", None, None) from exc
        check_status(
            response.status_code, response.text, response_format, rate_limit_delay(response.headers)
        )
        return read_completion(response.text)


class LiteLLMJudge(BaseJudge):
    """A judge named by a litellm `provider/model` string (`anthropic/...`, `ollama/...`)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        structured: StructuredMode = StructuredMode.JSON_SCHEMA,
        temperature: float | None = 0.0,
        backoff: float = 0.5,
        limiter: JudgeLimiter | None = None,
    ) -> None:
        super().__init__(
            model,
            timeout=timeout,
            max_retries=max_retries,
            structured=structured,
            temperature=temperature,
            backoff=backoff,
            limiter=limiter,
        )
        self.provider = model.split("/", 1)[0]
        self._api_key = api_key
        self.base_url = base_url

    def __repr__(self) -> str:
        return f"LiteLLMJudge(model={self.model!r})"

    async def send_once(
        self, messages: Sequence[Message], response_format: dict[str, Any] | None
    ) -> JudgeReply:
        litellm = import_litellm()
        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        kwargs.update(timeout=self.timeout, num_retries=0, max_retries=0)
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if response_format is not None:
            kwargs["response_format"] = response_format
        if self._api_key:
            kwargs["api_key"] = self._api_key
        if self.base_url:
            kwargs["api_base"] = self.base_url
        try:
            response = await litellm.acompletion(**kwargs)
        except litellm.Timeout as exc:  # before APIConnectionError: it is a subclass
            raise JudgeTimeout(f"judge {self.model} timed out after {self.timeout}s") from exc
        except (
            litellm.RateLimitError,
            litellm.InternalServerError,
            litellm.ServiceUnavailableError,
            litellm.APIConnectionError,
        ) as exc:
            status = getattr(exc, "status_code", None)
            raise RetryableFailure(f"judge {self.model} failed: {exc}", status, None) from exc
        except litellm.BadRequestError as exc:
            if response_format is not None:
                raise FormatRejected(str(exc)) from exc
            raise JudgeUnavailable(f"judge {self.model} refused the call: {exc}") from exc
        except Exception as exc:  # litellm raises many provider-specific types
            raise JudgeUnavailable(f"judge {self.model} failed: {exc}") from exc
        return read_completion(response.model_dump_json())


def import_litellm() -> Any:
    """Import litellm on first use, without letting it fetch its price map."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm


def resolve_judge(
    model: str | Judge,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 2,
) -> Judge:
    """Turn a model spec into a `Judge`.

    - a `Judge` is returned as is;
    - with `base_url`, the model is called on that OpenAI-compatible endpoint;
    - a `provider/model` string goes through litellm;
    - a bare model name goes to `OPENAI_BASE_URL` (default OpenAI) directly.
    """
    if not isinstance(model, str):
        return model
    if not model:
        raise ValueError("judge model must not be empty")
    if base_url is not None:
        return OpenAIJudge(
            base_url=base_url,
            model=model,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
        )
    if "/" in model:
        return LiteLLMJudge(model, api_key=api_key, timeout=timeout, max_retries=max_retries)
    return OpenAIJudge(
        base_url=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        model=model,
        api_key=api_key or os.environ.get("OPENAI_API_KEY"),
        timeout=timeout,
        max_retries=max_retries,
    )


def _refused(exc: BaseException) -> bool:
    """A connection refused or reset somewhere behind a reported timeout.

    httpx-aiohttp reports a refused connect as `httpx.ConnectTimeout`; the cause
    chain still holds the `OSError` that is not a timeout.
    """
    current: BaseException | None = exc.__cause__ or exc.__context__
    for _ in range(8):
        if current is None:
            return False
        if isinstance(current, OSError) and not isinstance(current, TimeoutError):
            return True
        current = current.__cause__ or current.__context__
    return False
