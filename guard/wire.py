"""The OpenAI-compatible wire format of judge calls: public, for writing a judge.

Pure code shared by every judge that speaks `/chat/completions` (guard's
`OpenAIJudge` over httpx, the gateway's judge over aiohttp): the body and
headers of one call (`openai_request`), what an HTTP status means
(`check_status`, `rate_limit_delay`), and the text and usage of a reply
(`read_completion`), read tolerantly (usage is optional information: what
cannot be read counts as 0). A judge over another HTTP client subclasses
`guard.BaseJudge` and calls these from its `send_once`; see `BaseJudge`.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from opentelemetry import propagate
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from guard.errors import JudgeOutputError, JudgeUnavailable

__all__ = [
    "FormatRejected",
    "JudgeReply",
    "Message",
    "OutputSchema",
    "RetryableFailure",
    "StructuredMode",
    "Usage",
    "check_status",
    "openai_request",
    "rate_limit_delay",
    "rate_limit_refill",
    "read_completion",
    "refuses_format",
    "response_format",
    "retry_after_seconds",
    "weaker",
]

Message = dict[str, str]

_RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


class Usage(BaseModel):
    """Judge token usage, summed over calls with `+`.

    Dumped by alias as `promptTokens` and `completionTokens`, like the result it is part of.
    """

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """The JSON shape a prompt asks for: a name and a JSON schema."""

    name: str
    schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class JudgeReply:
    """A judge's answer: its text and what it cost."""

    text: str
    usage: Usage = field(default_factory=Usage)


class StructuredMode(StrEnum):
    """How a call asks for JSON, strongest first; `weaker` steps down one.

    `JSON_OBJECT_SCHEMA` is JSON mode with the schema beside it
    (`{"type": "json_object", "schema": ...}`), which llama.cpp's servers constrain
    the output to when they refuse `json_schema`.
    """

    JSON_SCHEMA = "json_schema"
    JSON_OBJECT_SCHEMA = "json_object_schema"
    JSON_OBJECT = "json_object"
    PROMPT = "prompt"


class FormatRejected(Exception):
    """Raised by `send_once` when the endpoint refuses the `response_format` sent.

    `BaseJudge` then asks again in a weaker structured mode.
    """


class RetryableFailure(Exception):
    """Raised by `send_once` for a failure worth retrying: 429, 5xx, a refused connection.

    `status_code` is the HTTP status (None without a response); `retry_after`
    the seconds the endpoint asked to wait, if it said; `refill` the seconds until
    its budget is full again (a wait is at most that, usually much less).
    """

    def __init__(
        self,
        message: str,
        status_code: int | None,
        retry_after: float | None,
        *,
        refill: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retry_after = retry_after
        self.refill = refill


def openai_request(
    model: str,
    messages: Sequence[Message],
    response_format: dict[str, Any] | None,
    temperature: float | None,
    api_key: str | None,
    *,
    max_tokens: int | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The JSON body and headers of one chat-completion call, trace context included.

    `api_key`, when given, is sent as a bearer token; `max_tokens`, when given, bounds
    the answer.
    """
    body: dict[str, Any] = {"model": model, "messages": list(messages)}
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if response_format is not None:
        body["response_format"] = response_format
    headers = {"content-type": "application/json"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    propagate.inject(headers)
    return body, headers


def check_status(
    status: int,
    text: str,
    response_format: dict[str, Any] | None,
    retry_after: str | float | None,
    *,
    refill: float | None = None,
) -> None:
    """Raise the judge error an HTTP status means; return for a 2xx/3xx.

    `FormatRejected` when a call that sent `response_format` is refused for it
    (`refuses_format`); else `RetryableFailure` for 408, 409, 429 and 5xx, and
    `JudgeUnavailable` for any other 4xx. `text` is the response body (quoted in
    the error), `retry_after` the `Retry-After` header, or seconds already read by
    `rate_limit_delay`; `refill` what `rate_limit_refill` read.
    """
    if response_format is not None and refuses_format(status, text):
        raise FormatRejected(f"judge refused response_format (HTTP {status}): {text[:200]}")
    if status in _RETRYABLE_STATUS:
        delay = retry_after_seconds(retry_after) if isinstance(retry_after, str) else retry_after
        raise RetryableFailure(f"judge answered HTTP {status}", status, delay, refill=refill)
    if status >= 400:
        raise JudgeUnavailable(f"judge answered HTTP {status}: {text[:200]}", status_code=status)


# Words an error body uses when it is the structured-output request that was refused.
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "schema", "grammar")
# Words of a refusal for the prompt's length (OpenAI's and llama-cpp-python's code
# `context_length_exceeded`, vLLM's "maximum context length", llama.cpp's
# `exceed_context_size_error`): the text is too long, whatever the format.
_CONTEXT_WORDS = ("context_length", "context length", "context window", "context size")
# Refusals that are never about the format: keys, a missing model, limits, time.
_NOT_FORMAT = frozenset({401, 403, 404, 408, 409, 429})


def refuses_format(status: int, text: str) -> bool:
    """Whether an error answer to a call with `response_format` refuses that format.

    A 400 or 422 does, unless it says the prompt is past the model's context window:
    a weaker format would be refused the same, and remembering it would weaken every
    later call. Other statuses do when the body names the format: servers differ in
    the status they refuse it with (llama.cpp's answer a 500 "response_format type
    must be one of ...", llama-cpp-python's a 500 from its validation; ggml-org/llama.cpp
    issues 9522 and 23463), and a 500 that names no format is a failure worth retrying.
    """
    if status < 400 or status in _NOT_FORMAT:
        return False
    body = text.lower()
    if any(word in body for word in _CONTEXT_WORDS):
        return False
    if status in (400, 422):
        return True
    return any(word in body for word in _FORMAT_WORDS)


def response_format(mode: StructuredMode, schema: OutputSchema | None) -> dict[str, Any] | None:
    """The `response_format` field asking for `schema` in `mode` (None: ask in the prompt)."""
    if schema is None or mode is StructuredMode.PROMPT:
        return None
    if mode is StructuredMode.JSON_OBJECT:
        return {"type": "json_object"}
    if mode is StructuredMode.JSON_OBJECT_SCHEMA:
        return {"type": "json_object", "schema": schema.schema}
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.name, "schema": schema.schema, "strict": True},
    }


def weaker(mode: StructuredMode) -> StructuredMode:
    """The next structured mode to try when an endpoint refuses `mode`."""
    if mode is StructuredMode.JSON_SCHEMA:
        return StructuredMode.JSON_OBJECT_SCHEMA
    if mode is StructuredMode.JSON_OBJECT_SCHEMA:
        return StructuredMode.JSON_OBJECT
    return StructuredMode.PROMPT


def retry_after_seconds(value: str | None) -> float | None:
    """A `Retry-After` header (seconds or an HTTP date) as seconds from now, or None.

    What is no finite time (`inf`, `nan`, words) is None: it cannot be waited for.
    """
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def rate_limit_delay(headers: Mapping[str, str]) -> float | None:
    """Seconds a 429 asks the client to wait, or None when its headers do not say.

    `Retry-After` (seconds or an HTTP date) is a wait. OpenAI's
    `x-ratelimit-reset-requests` is not: it is "the time until the rate limit
    (based on requests) resets to its initial state", a full bucket
    (platform.openai.com/docs/guides/rate-limits, "Rate limits in headers").
    One more request comes when one of the spent ones has been refilled: with
    `x-ratelimit-limit-requests` and `x-ratelimit-remaining-requests` given,
    that is the reset time divided by the requests spent.

    >>> rate_limit_delay({"retry-after": "2", "x-ratelimit-reset-requests": "6m0s"})
    2.0
    >>> rate_limit_delay({"x-ratelimit-reset-requests": "6m0s",
    ...     "x-ratelimit-limit-requests": "3600", "x-ratelimit-remaining-requests": "0"})
    0.1
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    asked = retry_after_seconds(lowered.get("retry-after"))
    if asked is not None:
        return asked
    reset = _duration(lowered.get("x-ratelimit-reset-requests"))
    limit = _number(lowered.get("x-ratelimit-limit-requests"))
    left = _number(lowered.get("x-ratelimit-remaining-requests"))
    if reset is None or limit is None or left is None or limit <= left:
        return None
    return reset / (limit - left)


def rate_limit_refill(headers: Mapping[str, str]) -> float | None:
    """Seconds until the judge's budgets are full again (`x-ratelimit-reset-requests`,
    `x-ratelimit-reset-tokens`, durations like `1s`, `6m0s`, `20ms`): no call need wait
    longer, and most need much less. None when neither header is there.

    >>> rate_limit_refill({"x-ratelimit-reset-requests": "20ms",
    ...     "x-ratelimit-reset-tokens": "6m0s"})
    360.0
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    found = [
        delay
        for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
        if (delay := _duration(lowered.get(name))) is not None
    ]
    return max(found) if found else None


def _number(value: str | None) -> float | None:
    try:
        number = float(value) if value else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) else None


def _duration(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    parts = _DURATION.findall(value)
    if not parts or "".join(number + unit for number, unit in parts) != value:
        return None
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


def read_completion(raw: str) -> JudgeReply:
    """Take the text and token usage out of a chat-completion JSON body."""
    try:
        body = json.loads(raw)
        content = body["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError, RecursionError) as exc:
        raise JudgeOutputError("judge response is not a chat completion", raw=raw[:2000]) from exc
    if not isinstance(content, str):
        raise JudgeOutputError("judge response has no text content", raw=raw[:2000])
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        usage = {}  # usage is optional information: what cannot be read counts as 0
    return JudgeReply(
        text=content,
        usage=Usage(
            prompt_tokens=_token_count(usage.get("prompt_tokens")),
            completion_tokens=_token_count(usage.get("completion_tokens")),
        ),
    )


def _token_count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if value != value or value in (float("inf"), float("-inf")) or value < 0:
        return 0
    return int(value)
