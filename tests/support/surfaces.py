"""The scored surfaces as their official SDKs call and read them: one `Api` a surface
(`Responses`, `Completions`, `Messages`, and `Chat` for chat completions), the `Reply`
each gives back, and `bias_of`, the `bias` object a live stream's last event carries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anthropic
import openai

from tests.support.gateways import RunningGateway

MESSAGES: list[Any] = [{"role": "user", "content": "Tell me about engineers."}]


@dataclass
class Reply:
    text: str
    headers: Mapping[str, str]
    finish: str | None  # finish_reason, status or stop_reason
    last_event: Any = None  # a stream's last event, as the SDK parsed it


class Api:
    """How one surface's SDK is called and read."""

    name: str  # the store's `api`
    path: str
    blocked: type[Exception]  # what the SDK raises for a 422
    unavailable: type[Exception]  # ... for a 503
    stream_error: type[Exception]  # ... for an error event mid-stream

    def create(self, gateway: RunningGateway) -> Reply:
        raise NotImplementedError

    def stream(self, gateway: RunningGateway) -> Reply:
        raise NotImplementedError

    def http_body(self, stream: bool = False) -> dict[str, Any]:
        raise NotImplementedError

    def error_of(self, body: dict[str, Any]) -> dict[str, Any]:
        """The error object of an error body in this surface's shape."""
        error: dict[str, Any] = body["error"]
        return error

    def sdk_error(self, exc: Exception) -> dict[str, Any]:
        """The error object of what the SDK raised (openai keeps only the `error` member)."""
        body = getattr(exc, "body", None)
        assert isinstance(body, dict), f"{exc!r} carries no error body"
        return body

    replaced_finish: str


class Responses(Api):
    name, path = "responses", "/v1/responses"
    blocked = openai.UnprocessableEntityError
    unavailable = openai.InternalServerError
    stream_error = openai.APIError
    replaced_finish = "incomplete"

    def create(self, gateway: RunningGateway) -> Reply:
        raw = gateway.client().responses.with_raw_response.create(
            model="gpt-test", input="Tell me about engineers."
        )
        response = raw.parse()
        if response.status == "incomplete":
            assert response.incomplete_details is not None
            assert response.incomplete_details.reason == "content_filter"
        return Reply(response.output_text, raw.headers, response.status)

    def stream(self, gateway: RunningGateway) -> Reply:
        raw = gateway.client().responses.with_raw_response.create(
            model="gpt-test", input="Tell me about engineers.", stream=True
        )
        deltas, last = [], None
        for event in raw.parse():
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
            last = event
        finish = getattr(getattr(last, "response", None), "status", None)
        return Reply("".join(deltas), raw.headers, finish, last)

    def http_body(self, stream: bool = False) -> dict[str, Any]:
        return {"model": "gpt-test", "input": "Tell me about engineers.", "stream": stream}


class Completions(Api):
    name, path = "completions", "/v1/completions"
    blocked = openai.UnprocessableEntityError
    unavailable = openai.InternalServerError
    stream_error = openai.APIError
    replaced_finish = "content_filter"

    def create(self, gateway: RunningGateway) -> Reply:
        raw = gateway.client().completions.with_raw_response.create(
            model="gpt-test", prompt="Tell me about engineers."
        )
        completion = raw.parse()
        choice = completion.choices[0]
        return Reply(choice.text, raw.headers, choice.finish_reason)

    def stream(self, gateway: RunningGateway) -> Reply:
        raw = gateway.client().completions.with_raw_response.create(
            model="gpt-test", prompt="Tell me about engineers.", stream=True
        )
        parts, finish, last = [], None, None
        for chunk in raw.parse():
            for choice in chunk.choices:
                parts.append(choice.text)
                finish = choice.finish_reason or finish
            last = chunk
        return Reply("".join(parts), raw.headers, finish, last)

    def http_body(self, stream: bool = False) -> dict[str, Any]:
        return {"model": "gpt-test", "prompt": "Tell me about engineers.", "stream": stream}


class Messages(Api):
    name, path = "messages", "/v1/messages"
    blocked = anthropic.UnprocessableEntityError
    unavailable = anthropic.InternalServerError
    stream_error = anthropic.APIStatusError
    replaced_finish = "refusal"

    def error_of(self, body: dict[str, Any]) -> dict[str, Any]:
        assert body["type"] == "error"  # Anthropic's shape
        return super().error_of(body)

    def sdk_error(self, exc: Exception) -> dict[str, Any]:
        return self.error_of(super().sdk_error(exc))  # anthropic keeps the whole body

    def client(self, gateway: RunningGateway) -> anthropic.Anthropic:
        return anthropic.Anthropic(base_url=gateway.url, api_key="sk-client", max_retries=0)

    def create(self, gateway: RunningGateway) -> Reply:
        raw = self.client(gateway).messages.with_raw_response.create(
            model="claude-test",
            max_tokens=100,
            messages=[{"role": "user", "content": "Tell me about engineers."}],
        )
        message = raw.parse()
        text = "".join(block.text for block in message.content if block.type == "text")
        return Reply(text, raw.headers, message.stop_reason)

    def stream(self, gateway: RunningGateway) -> Reply:
        raw = self.client(gateway).messages.with_raw_response.create(
            model="claude-test",
            max_tokens=100,
            messages=[{"role": "user", "content": "Tell me about engineers."}],
            stream=True,
        )
        parts, finish, last = [], None, None
        for event in raw.parse():
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                parts.append(event.delta.text)
            elif event.type == "message_delta":
                finish = event.delta.stop_reason
            last = event
        return Reply("".join(parts), raw.headers, finish, last)

    def http_body(self, stream: bool = False) -> dict[str, Any]:
        return {
            "model": "claude-test",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "Tell me about engineers."}],
            "stream": stream,
        }


class Chat(Api):
    name, path = "chat.completions", "/v1/chat/completions"
    stream_error = openai.APIError

    def stream(self, gateway: RunningGateway) -> Reply:
        raw = gateway.client().chat.completions.with_raw_response.create(
            model="m", messages=MESSAGES, stream=True
        )
        parts, finish, last = [], None, None
        for chunk in raw.parse():
            for choice in chunk.choices:
                parts.append(choice.delta.content or "")
                finish = choice.finish_reason or finish
            last = chunk
        return Reply("".join(parts), raw.headers, finish, last)

    def http_body(self, stream: bool = False) -> dict[str, Any]:
        return {"model": "m", "messages": MESSAGES, "stream": stream}


def bias_of(event: Any) -> dict[str, Any]:
    """The `bias` object the gateway adds to a live stream's last event (SDKs keep extras)."""
    extra = event.model_extra or {}
    assert "bias" in extra, f"no bias on {event!r}"
    bias: dict[str, Any] = extra["bias"]
    return bias
