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

`BaseJudge` (in `guard.judge.base`) is the part they share, and the
extension point for a judge over another transport.
"""

from __future__ import annotations

from guard.judge.base import BaseJudge, Judge
from guard.judge.litellm import LiteLLMJudge, import_litellm
from guard.judge.openai import OpenAIJudge
from guard.judge.resolve import resolve_judge

__all__ = [
    "BaseJudge",
    "Judge",
    "LiteLLMJudge",
    "OpenAIJudge",
    "import_litellm",
    "resolve_judge",
]
