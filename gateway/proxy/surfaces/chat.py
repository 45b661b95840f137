"""`POST /v1/chat/completions` and `POST /v1/completions`: OpenAI's choice-based APIs."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, ClassVar

from gateway.config import Policy
from gateway.errors import BadRequest
from gateway.proxy.decisions import bias_details
from gateway.proxy.surfaces.base import (
    Facts,
    StreamReader,
    Surface,
    SurfaceRequest,
    id_text,
    json_int,
    parse_object,
    require_messages,
    require_model,
    require_stream_flag,
)
from gateway.scoring.outcome import Outcome
from gateway.wire.accumulate import ChunkAccumulator, completion_texts, readable_completion
from gateway.wire.codec import loads
from gateway.wire.parts import TextParts
from gateway.wire.rebuild import Rebuilt, chat_answer, completion_answer
from gateway.wire.sse import DONE, SSEEvent, encode_event
from gateway.wire.tools import ToolArgument, chat_tool_arguments

__all__ = ["ChatCompletions", "Completions"]


def _check_n(body: Mapping[str, Any]) -> None:
    n = body.get("n", 1)
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
        raise BadRequest("`n` must be a positive integer.", param="n")


def _choice_facts(body: Mapping[str, Any]) -> Facts:
    raw_choices = body.get("choices")
    choices = (
        [c for c in raw_choices if isinstance(c, dict)] if isinstance(raw_choices, list) else []
    )
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    return Facts(
        response_id=id_text(body.get("id")),
        model=id_text(body.get("model")),
        finish_reasons=[
            str(choice["finish_reason"])
            for _, choice in sorted(
                (
                    (json_int(choice.get("index", position)) or 0, choice)
                    for position, choice in enumerate(choices)
                ),
                key=lambda pair: pair[0],  # two choices may claim one index: keep their order
            )
            if choice.get("finish_reason")
        ],
        input_tokens=json_int(usage.get("prompt_tokens")),
        output_tokens=json_int(usage.get("completion_tokens")),
    )


def _chunk(object_name: str, response_id: str | None, model: str | None, **fields: Any) -> bytes:
    return encode_event(
        json.dumps(
            {
                "id": response_id,
                "object": object_name,
                "created": int(time.time()),
                "model": model,
                **fields,
            }
        )
    )


def _refused_choices(body: Mapping[str, Any], **content: Any) -> dict[str, Any]:
    """`body` with every choice's text replaced by `content`, marked as filtered."""
    refused = dict(body)
    refused["choices"] = [
        {
            "index": choice.get("index", index) if isinstance(choice, dict) else index,
            **content,
            "finish_reason": "content_filter",
            "logprobs": None,
        }
        for index, choice in enumerate(body.get("choices") or [{}])
    ]
    return refused


def _bias_trailer(object_name: str, outcome: Outcome, reader: StreamReader) -> bytes:
    """The end of a live choice stream that passed: a chunk with no choices and a `bias`
    object, then `[DONE]`."""
    facts = reader.facts()
    chunk = _chunk(
        object_name, facts.response_id, facts.model, choices=[], bias=bias_details(outcome)
    )
    return chunk + encode_event(DONE)


class _ChoiceReader(StreamReader):
    """Shared by both choice APIs: `[DONE]` ends the stream and is held back."""

    def add(self, name: str | None, data: str) -> bool:
        if data == DONE:
            self.done = True
            return True
        return super().add(name, data)


class ChatReader(_ChoiceReader):
    def __init__(self, *, max_chars: int | None = None) -> None:
        super().__init__(max_chars=max_chars)
        self.accumulator = ChunkAccumulator(max_chars=max_chars)

    def add(self, name: str | None, data: str) -> bool:
        # The hot path of every scored chat stream: `decode` and `take` inlined, two
        # calls fewer per chunk; the checks are the base class's.
        if data == DONE:
            self.done = True
            return True
        try:
            chunk = loads(data)
        except ValueError:
            self.unreadable += 1
            return False
        if (
            not isinstance(chunk, dict)
            or "error" in chunk
            or chunk.get("type") == "error"
            or not isinstance(chunk.get("choices"), list)
        ):
            # Not a chunk: its text, if any, could not be read, so it may not pass as none.
            self.unreadable += 1
            return False
        self.accumulator.add(chunk)
        self.truncated = self.accumulator.truncated
        return False

    def take(self, name: str | None, event: dict[str, Any]) -> bool:
        return self.add(name, json.dumps(event))  # `add` decodes and takes in one go

    def texts(self) -> list[str]:
        return [text for text in self.accumulator.texts().values() if text]

    def has_tool_calls(self) -> bool:
        return self.accumulator.has_tool_calls()

    def tool_arguments(self) -> list[ToolArgument]:
        if not self.accumulator.has_tool_calls():
            return []
        return chat_tool_arguments(self.accumulator.as_completion())

    def facts(self) -> Facts:
        usage = self.accumulator.usage or {}
        return Facts(
            response_id=self.accumulator.response_id,
            model=self.accumulator.model,
            finish_reasons=list(self.accumulator.finish_reasons.values()),
            input_tokens=json_int(usage.get("prompt_tokens")),
            output_tokens=json_int(usage.get("completion_tokens")),
        )


class ChatCompletions(Surface):
    name = "chat.completions"
    route = "/v1/chat/completions"
    upstream_path = "/chat/completions"
    rebuilds = True
    usage_option = True

    def rebuild(self, body: bytes) -> Rebuilt:
        return chat_answer(body)

    def parse(self, raw: bytes) -> SurfaceRequest:
        body = parse_object(raw)
        model = require_model(body)
        require_messages(body)
        stream = require_stream_flag(body)
        _check_n(body)
        return SurfaceRequest(model, stream, body, raw)

    def input_messages(self, body: Mapping[str, Any]) -> object:
        return body.get("messages")

    def readable(self, body: object) -> bool:
        return readable_completion(body)

    def texts(self, body: Mapping[str, Any]) -> list[str]:
        return [text for text in completion_texts(body).values() if text]

    def facts(self, body: Mapping[str, Any]) -> Facts:
        return _choice_facts(body)

    def tool_arguments(self, body: Mapping[str, Any]) -> list[ToolArgument]:
        return chat_tool_arguments(body)

    def reader(self, *, max_chars: int | None) -> ChatReader:
        return ChatReader(max_chars=max_chars)

    def replaced(self, body: Mapping[str, Any], policy: Policy) -> dict[str, Any]:
        message = {"role": "assistant", "content": policy.refusal_text}
        return _refused_choices(body, message=message)

    def refusal_stream(self, reader: StreamReader, policy: Policy) -> bytes:
        facts = reader.facts()
        response_id = facts.response_id or "chatcmpl-refused"

        def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return _chunk("chat.completion.chunk", response_id, facts.model, choices=[choice])

        return (
            chunk({"role": "assistant", "content": policy.refusal_text}, None)
            + chunk({}, "content_filter")
            + encode_event(DONE)
        )

    def trailer(self, outcome: Outcome, reader: StreamReader, held: list[SSEEvent]) -> bytes:
        """A chunk with no choices and a `bias` object, then `[DONE]`."""
        return _bias_trailer("chat.completion.chunk", outcome, reader)


class CompletionsReader(_ChoiceReader):
    def __init__(self, *, max_chars: int | None = None) -> None:
        super().__init__(max_chars=max_chars)
        self._texts: dict[int, TextParts] = {}
        self._chars: dict[int, int] = {}
        self._facts = Facts()
        self._finish: dict[int, str] = {}

    def take(self, name: str | None, event: dict[str, Any]) -> bool:
        choices = event.get("choices")
        if not isinstance(choices, list):
            self.unreadable += 1
            return False
        facts = self._facts
        facts.response_id = facts.response_id or id_text(event.get("id"))
        facts.model = facts.model or id_text(event.get("model"))
        usage = event.get("usage")
        if isinstance(usage, dict):
            facts.input_tokens = json_int(usage.get("prompt_tokens"))
            facts.output_tokens = json_int(usage.get("completion_tokens"))
        for position, choice in enumerate(choices):
            if not isinstance(choice, dict):
                continue
            index = json_int(choice.get("index", position))
            if index is None:
                continue
            text = choice.get("text")
            if isinstance(text, str) and text:
                kept = self._chars.get(index, 0)
                text = self.clip(kept, text)
                parts = self._texts.get(index)
                if parts is None:
                    parts = self._texts[index] = TextParts()
                parts.append(text)
                self._chars[index] = kept + len(text)
            if isinstance(choice.get("finish_reason"), str):
                self._finish[index] = choice["finish_reason"]
        return False

    def texts(self) -> list[str]:
        joined = (parts.text() for _, parts in sorted(self._texts.items()))
        return [text for text in joined if text]

    def facts(self) -> Facts:
        self._facts.finish_reasons = [reason for _, reason in sorted(self._finish.items())]
        return self._facts


class Completions(Surface):
    """The legacy Completions API: `prompt` in, `choices[*].text` out."""

    name = "completions"
    route = "/v1/completions"
    upstream_path = "/completions"
    operation: ClassVar[str] = "text_completion"
    rebuilds = True
    usage_option = True

    def rebuild(self, body: bytes) -> Rebuilt:
        return completion_answer(body)

    def parse(self, raw: bytes) -> SurfaceRequest:
        body = parse_object(raw)
        model = require_model(body)
        prompt = body.get("prompt")
        if not isinstance(prompt, str | list) or (isinstance(prompt, list) and not prompt):
            raise BadRequest("`prompt` is required: a string or a non-empty array.", param="prompt")
        stream = require_stream_flag(body)
        _check_n(body)
        return SurfaceRequest(model, stream, body, raw)

    def input_messages(self, body: Mapping[str, Any]) -> object:
        prompt = body.get("prompt")
        if isinstance(prompt, list):
            return "\n\n".join(part for part in prompt if isinstance(part, str))
        return prompt if isinstance(prompt, str) else ""

    def readable(self, body: object) -> bool:
        if not isinstance(body, Mapping) or not isinstance(body.get("choices"), list):
            return False
        return all(
            isinstance(choice, Mapping) and isinstance(choice.get("text"), str | None)
            for choice in body["choices"]
        )

    def texts(self, body: Mapping[str, Any]) -> list[str]:
        by_index: dict[int, str] = {}
        for position, choice in enumerate(body.get("choices") or []):
            index = json_int(choice.get("index", position))
            if index is not None and isinstance(choice.get("text"), str) and choice["text"]:
                by_index[index] = choice["text"]
        return [text for _, text in sorted(by_index.items())]

    def facts(self, body: Mapping[str, Any]) -> Facts:
        return _choice_facts(body)

    def reader(self, *, max_chars: int | None) -> CompletionsReader:
        return CompletionsReader(max_chars=max_chars)

    def replaced(self, body: Mapping[str, Any], policy: Policy) -> dict[str, Any]:
        return _refused_choices(body, text=policy.refusal_text)

    def refusal_stream(self, reader: StreamReader, policy: Policy) -> bytes:
        facts = reader.facts()
        response_id = facts.response_id or "cmpl-refused"

        def chunk(text: str, finish: str | None) -> bytes:
            choice = {"index": 0, "text": text, "finish_reason": finish, "logprobs": None}
            return _chunk("text_completion", response_id, facts.model, choices=[choice])

        return chunk(policy.refusal_text, None) + chunk("", "content_filter") + encode_event(DONE)

    def trailer(self, outcome: Outcome, reader: StreamReader, held: list[SSEEvent]) -> bytes:
        return _bias_trailer("text_completion", outcome, reader)
