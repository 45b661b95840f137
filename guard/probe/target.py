"""The model under test: one chat completion per prompt, over httpx, with its refusal signals.

httpx's errors stop here: a call that fails after its retries raises `TargetError`.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import httpx

from guard.errors import TargetError
from guard.wire import rate_limit_delay

__all__ = ["Answer", "Target"]

_RETRIED = {408, 409, 429, 500, 502, 503, 504}


@dataclass(frozen=True, slots=True)
class Answer:
    """The first choice's text, its `refusal` field and its `finish_reason`."""

    text: str
    refusal: str | None
    finish_reason: str | None


class Target:
    """An OpenAI-compatible `/chat/completions` endpoint and the model to ask.

    Retries 408/409/429/5xx and connection failures `max_retries` times,
    `backoff` seconds apart and doubling (or as long as `retry-after` asks).
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        max_tokens: int | None = None,
    ) -> None:
        self.url = f"{base_url.rstrip('/')}/chat/completions"
        self.model = model
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_tokens = max_tokens
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(timeout=timeout, headers=headers)

    async def ask(self, prompt: str, *, seed: int) -> Answer:
        """The model's answer to `prompt` as a user message; `seed` is sent for reproducibility
        where the endpoint honours it."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "seed": seed,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        attempt = 0
        while True:
            delay: float | None = None
            try:
                response = await self._client.post(self.url, json=body)
            except httpx.TimeoutException as exc:
                failure = f"{self.url} timed out"
                cause: Exception = exc
            except httpx.TransportError as exc:
                failure, cause = f"{self.url} unreachable: {exc!r}", exc
            else:
                if response.status_code < 400:
                    return _answer(response.text, self.url)
                failure = f"{self.url} answered {response.status_code}: {response.text[:300]}"
                if response.status_code not in _RETRIED:
                    raise TargetError(failure)
                cause = TargetError(failure)
                delay = rate_limit_delay(response.headers)
            if attempt >= self.max_retries:
                raise TargetError(f"{failure} (gave up after {attempt + 1} attempts)") from cause
            await asyncio.sleep(min(max(self.backoff * 2**attempt, delay or 0.0), 30.0))
            attempt += 1

    async def aclose(self) -> None:
        await self._client.aclose()


def _answer(raw: str, url: str) -> Answer:
    try:
        choice = json.loads(raw)["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise TargetError(f"{url} did not answer a chat completion: {raw[:300]}") from exc
    content = message.get("content") if isinstance(message, dict) else None
    refusal = message.get("refusal") if isinstance(message, dict) else None
    finish_reason = choice.get("finish_reason") if isinstance(choice, dict) else None
    return Answer(
        text=content if isinstance(content, str) else "",
        refusal=refusal if isinstance(refusal, str) else None,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
    )
