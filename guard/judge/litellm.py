"""`LiteLLMJudge`: a judge named by a litellm `provider/model` string.

litellm is imported only when the first call is made; it is an extra
(`pip install 'bias-gateway[litellm]'`), which the gateway's extra includes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from guard.errors import JudgeTimeout, JudgeUnavailable
from guard.judge.base import BaseJudge
from guard.limits import JudgeLimiter
from guard.wire import (
    FormatRejected,
    JudgeReply,
    Message,
    RetryableFailure,
    StructuredMode,
    read_completion,
    refuses_format,
)

__all__ = ["LiteLLMJudge", "import_litellm"]


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
        self.provider = model.split("/", 1)[0]
        self._api_key = api_key
        self.base_url = base_url

    def __repr__(self) -> str:
        return f"LiteLLMJudge(model={self.model!r})"

    async def send_once(
        self, messages: Sequence[Message], response_format: dict[str, Any] | None
    ) -> JudgeReply:
        try:
            litellm = import_litellm()
        except ModuleNotFoundError as exc:
            if exc.name != "litellm":
                raise
            raise JudgeUnavailable(
                f"judge {self.model} needs litellm, which is not installed: "
                "pip install 'bias-gateway[litellm]'"
            ) from exc
        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        kwargs.update(timeout=self.timeout, num_retries=0, max_retries=0)
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
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
            if response_format is not None and refuses_format(status or 500, str(exc)):
                raise FormatRejected(str(exc)) from exc
            raise RetryableFailure(f"judge {self.model} failed: {exc}", status, None) from exc
        except litellm.BadRequestError as exc:
            too_long = isinstance(exc, litellm.ContextWindowExceededError)
            if response_format is not None and not too_long and refuses_format(400, str(exc)):
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
