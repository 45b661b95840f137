"""`OpenAIJudge`: any OpenAI-compatible `/chat/completions` endpoint, over httpx.

It never imports litellm.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import httpx

from guard.errors import JudgeTimeout
from guard.judge.base import BaseJudge
from guard.limits import JudgeLimiter
from guard.wire import (
    JudgeReply,
    Message,
    RetryableFailure,
    StructuredMode,
    check_status,
    openai_request,
    rate_limit_delay,
    rate_limit_refill,
    read_completion,
)

__all__ = ["OpenAIJudge"]


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
        max_tokens: int | None = None,
    ) -> None:
        super().__init__(
            model,
            timeout=timeout,
            max_retries=max_retries,
            structured=structured,
            temperature=temperature,
            backoff=backoff,
            limiter=limiter,
            max_tokens=max_tokens,
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
            self.model,
            messages,
            response_format,
            self.temperature,
            self._api_key,
            max_tokens=self.max_tokens,
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
            response.status_code,
            response.text,
            response_format,
            rate_limit_delay(response.headers),
            refill=rate_limit_refill(response.headers),
        )
        return read_completion(response.text)


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
