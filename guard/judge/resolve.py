"""`resolve_judge`: a model spec (a name, `provider/model`, or a `Judge`) to a `Judge`."""

from __future__ import annotations

import os

from guard.judge.base import Judge
from guard.judge.litellm import LiteLLMJudge
from guard.judge.openai import OpenAIJudge

__all__ = ["resolve_judge"]


def resolve_judge(
    model: str | Judge,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 2,
    max_tokens: int | None = None,
) -> Judge:
    """Turn a model spec into a `Judge`; `max_tokens`, when given, bounds each answer.

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
            max_tokens=max_tokens,
        )
    if "/" in model:
        return LiteLLMJudge(
            model,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            max_tokens=max_tokens,
        )
    return OpenAIJudge(
        base_url=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        model=model,
        api_key=api_key or os.environ.get("OPENAI_API_KEY"),
        timeout=timeout,
        max_retries=max_retries,
        max_tokens=max_tokens,
    )
