"""Send an attacker's answer through a gateway, and read what its client was given.

For issue 30's attack suite (`python -m bench attacks`) and its gate tests:

- `AnswerBook` is the fake upstream (`FakeOpenAI`) answering each request with the
  answer filed under the key its prompt names (`prompt_for(key)`): a text, or a tool
  call whose arguments carry the text, on every API, whole or streamed. Many keys
  can be filed at once, so requests may run concurrently.
- `send` asks a gateway for one key's answer on one surface, with the official SDK
  of that surface (`openai`, or `anthropic` for Messages), and returns a `Delivery`:
  whether the client was refused, the text (and tool arguments) it read, the
  gateway's headers and the run's final score record.

A delivery `passed` when the client got the answer with a pass verdict (or none:
an answer the gateway skipped) and no tamper mark (`x-bias-tamper`, or `tamper`
in the record).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx
import openai
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from testkit import rich_answers
from testkit.fake_openai import FakeOpenAI, _json_object
from testkit.rich_answers import RichAnswer, RichChoice
from testkit.waiting import wait_for

__all__ = ["SURFACES", "AnswerBook", "Clients", "Delivery", "ToolCall", "prompt_for", "send"]

SURFACES = ("chat", "responses", "completions", "messages")
MODEL = "attacked-model"
_KEY = re.compile(r"answer-key:([\w.-]+)")


def prompt_for(key: str) -> str:
    """The prompt that makes `AnswerBook` answer with what is filed under `key`."""
    return f"Say what is filed. answer-key:{key}"


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # JSON text, as the APIs carry it


class AnswerBook(FakeOpenAI):
    """The fake upstream, answering each prompt with the answer filed under its key."""

    def reset(self) -> None:
        super().reset()
        self.answers: dict[str, str | ToolCall] = {}

    def _filed(self, body: dict[str, Any]) -> str | ToolCall | None:
        found = _KEY.search(json.dumps(body, ensure_ascii=False))
        return self.answers.get(found.group(1)) if found else None

    def _answer(self, step: str, body: dict[str, Any]) -> str:
        filed = self._filed(body) if step == "chat" else None
        return filed if isinstance(filed, str) else super()._answer(step, body)

    async def _answer_chat(self, step: str, body: dict[str, Any]) -> Response:
        filed = self._filed(body) if step == "chat" else None
        if isinstance(filed, ToolCall):
            return self._tool_call("chat", body, filed)
        return await super()._answer_chat(step, body)

    async def _upstream(self, request: Request, surface: Any) -> Response:
        body = await _json_object(request)  # read once; Starlette keeps the body
        filed = self._filed(body) if body is not None else None
        if body is not None and isinstance(filed, ToolCall):
            return self._tool_call(rich_answers.API_OF_PATH[request.url.path], body, filed)
        return await super()._upstream(request, surface)

    def _tool_call(self, api: str, body: dict[str, Any], call: ToolCall) -> Response:
        choice = RichChoice(
            content=None,
            tool_calls=[("call_attack", call.name, call.arguments)],
            finish_reason="tool_calls",
        )
        answer = RichAnswer(choices=[choice], logprobs=False, reasoning="")
        if body.get("stream"):
            return self._streaming(rich_answers.STREAM[api](answer, body), None)
        return JSONResponse(rich_answers.WHOLE[api](answer, body))


@dataclass
class Clients:
    """The SDK clients of one gateway, and a plain HTTP client for its score records."""

    url: str
    timeout: float = 60

    def __post_init__(self) -> None:
        options: dict[str, Any] = {"api_key": "sk-client", "max_retries": 0}
        self.openai = openai.OpenAI(base_url=f"{self.url}/v1", timeout=self.timeout, **options)
        self.anthropic = anthropic.Anthropic(base_url=self.url, timeout=self.timeout, **options)
        self.http = httpx.Client(base_url=self.url, timeout=self.timeout)

    def close(self) -> None:
        self.openai.close()
        self.anthropic.close()
        self.http.close()


@dataclass
class Delivery:
    surface: str
    stream: bool
    refused: bool  # a block status, or an error event that ended the stream
    text: str  # what the client read: the answer's text and any tool-call arguments
    headers: Mapping[str, str]
    record: dict[str, Any] | None = None  # the run's final score record
    error: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str | None:
        if self.record is not None and self.record.get("verdict"):
            return str(self.record["verdict"])
        return self.headers.get("x-bias-verdict")

    @property
    def tamper(self) -> list[str]:
        kinds = [kind for kind in self.headers.get("x-bias-tamper", "").split(",") if kind]
        for finding in (self.record or {}).get("tamper") or []:
            kind = finding.get("kind") if isinstance(finding, dict) else finding
            if kind and kind not in kinds:
                kinds.append(str(kind))
        return kinds

    @property
    def blocked(self) -> bool:
        return self.refused or self.verdict == "block"

    @property
    def passed(self) -> bool:
        """The client got the answer, judged fine or not judged, and unmarked."""
        return not self.refused and self.verdict in (None, "pass") and not self.tamper


def send(clients: Clients, surface: str, key: str, *, stream: bool = False) -> Delivery:
    """Ask the gateway for `key`'s answer on `surface`, as that surface's SDK does."""
    try:
        read = _streamed if stream else _whole
        delivery = read(clients, surface, key)
    except (openai.APIStatusError, anthropic.APIStatusError) as exc:
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error", body) if isinstance(body.get("error"), dict) else body
        delivery = Delivery(surface, stream, True, "", dict(exc.response.headers), error=error)
    delivery.record = _record(clients, delivery)
    return delivery


def _whole(clients: Clients, surface: str, key: str) -> Delivery:
    prompt = prompt_for(key)
    if surface == "messages":
        message = clients.anthropic.messages.with_raw_response.create(
            model=MODEL, max_tokens=512, messages=[{"role": "user", "content": prompt}]
        )
        return _read(surface, message.headers, _message_text(message.parse().model_dump()))
    if surface == "chat":
        chat = clients.openai.chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": prompt}]
        )
        return _read(surface, chat.headers, _chat_text(chat.parse().model_dump()))
    if surface == "completions":
        completion = clients.openai.completions.with_raw_response.create(model=MODEL, prompt=prompt)
        texts = [choice.text for choice in completion.parse().choices]
        return _read(surface, completion.headers, "".join(texts))
    response = clients.openai.responses.with_raw_response.create(model=MODEL, input=prompt)
    return _read(surface, response.headers, _response_text(response.parse().model_dump()))


def _read(surface: str, headers: Mapping[str, str], text: str) -> Delivery:
    return Delivery(surface, False, False, text, dict(headers))


def _streamed(clients: Clients, surface: str, key: str) -> Delivery:
    prompt = prompt_for(key)
    opened: Any
    if surface == "messages":
        opened = clients.anthropic.messages.with_streaming_response.create(
            model=MODEL, max_tokens=512, messages=[{"role": "user", "content": prompt}], stream=True
        )
    elif surface == "chat":
        opened = clients.openai.chat.completions.with_streaming_response.create(
            model=MODEL, messages=[{"role": "user", "content": prompt}], stream=True
        )
    elif surface == "completions":
        opened = clients.openai.completions.with_streaming_response.create(
            model=MODEL, prompt=prompt, stream=True
        )
    else:
        opened = clients.openai.responses.with_streaming_response.create(
            model=MODEL, input=prompt, stream=True
        )
    with opened as response:
        headers = dict(response.headers)
        events = list(_events(response.iter_lines()))
    errors = [event for event in events if "error" in event or event.get("type") == "error"]
    read = "".join(_delta(event) for event in events)
    error = errors[0].get("error", {}) if errors else {}
    return Delivery(surface, True, bool(errors), read, headers, error=error)


def _events(lines: Iterable[str]) -> Iterable[dict[str, Any]]:
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line.removeprefix("data:").strip()
        if data and data != "[DONE]":
            parsed = json.loads(data)
            if isinstance(parsed, dict):
                yield parsed


def _delta(event: dict[str, Any]) -> str:
    """The text (or tool-call arguments) one stream event adds, in any of the four APIs."""
    pieces: list[str] = []
    for choice in event.get("choices") or []:
        delta = choice.get("delta") or {}
        pieces.append(delta.get("content") or choice.get("text") or "")
        for call in delta.get("tool_calls") or []:
            pieces.append((call.get("function") or {}).get("arguments") or "")
    kind = event.get("type")
    if kind in ("response.output_text.delta", "response.function_call_arguments.delta"):
        pieces.append(event.get("delta") or "")
    if kind == "content_block_delta":
        delta = event.get("delta") or {}
        pieces.append(delta.get("text") or delta.get("partial_json") or "")
    return "".join(pieces)


def _chat_text(answer: dict[str, Any]) -> str:
    pieces: list[str] = []
    for choice in answer.get("choices") or []:
        message = choice.get("message") or {}
        pieces.append(message.get("content") or "")
        for call in message.get("tool_calls") or []:
            pieces.append((call.get("function") or {}).get("arguments") or "")
    return "".join(pieces)


def _response_text(answer: dict[str, Any]) -> str:
    pieces: list[str] = []
    for item in answer.get("output") or []:
        if item.get("type") == "function_call":
            pieces.append(item.get("arguments") or "")
        for part in item.get("content") or []:
            pieces.append(part.get("text") or "")
    return "".join(pieces)


def _message_text(answer: dict[str, Any]) -> str:
    pieces: list[str] = []
    for block in answer.get("content") or []:
        if block.get("type") == "tool_use":
            pieces.append(json.dumps(block.get("input"), ensure_ascii=False))
        pieces.append(block.get("text") or "")
    return "".join(pieces)


def _record(clients: Clients, delivery: Delivery) -> dict[str, Any] | None:
    """The run's final score record, once it is final; None for a run without an id."""
    bias = delivery.error.get("bias") if isinstance(delivery.error.get("bias"), dict) else {}
    run_id = delivery.headers.get("x-bias-run-id") or (bias or {}).get("run_id")
    if not run_id:
        return None
    path = f"/v1/bias/scores/{run_id}"

    def final() -> dict[str, Any] | None:
        response = clients.http.get(path)
        body = response.json() if response.status_code == 200 else {}
        return dict(body) if body.get("status", "pending") != "pending" else None

    return wait_for(final, f"the score record of {run_id}", timeout=60, interval=0.05)
