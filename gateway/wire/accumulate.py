"""Rebuild a whole chat completion from its stream chunks. Pure code.

>>> acc = ChunkAccumulator()
>>> acc.add({"id": "c1", "choices": [{"index": 0, "delta": {"content": "Hi"}}]})
>>> acc.add({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
>>> acc.text(), acc.finish_reasons
('Hi', {0: 'stop'})
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.wire.parts import TextParts

__all__ = [
    "ChunkAccumulator",
    "chunk_extras",
    "completion_texts",
    "merge_logprobs",
    "readable_completion",
]

_SET_ONCE = frozenset({"id", "name", "type"})
_ABSENT = object()


@dataclass(slots=True)
class _ToolCall:
    id: str | None = None
    type: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Choice:
    content: TextParts | None = None  # None until a content string arrives
    refusal: list[str] | None = None
    tool_calls: dict[int, _ToolCall] = field(default_factory=dict)
    chars: int = 0  # of content kept so far
    role: str | None = None
    # Every other field a delta carried, as the whole message has it: strings
    # (`reasoning_content`) joined, lists (`annotations`) joined, objects (`audio`,
    # `function_call`) merged; a field only ever null stays null.
    others: dict[str, Any] = field(default_factory=dict)
    # `refusal`, `tool_calls` (a list), `tool_calls: null`: fields a whole message has
    # because a delta carried them, even as null; `logprobs_seen`, the choice's.
    seen: set[str] = field(default_factory=set)
    logprobs: dict[str, Any] | None = None
    logprobs_seen: bool = False


class ChunkAccumulator:
    """Collects `chat.completion.chunk` dicts; read the totals at any point.

    Chunks that are not mappings with a `choices` list are ignored. The first
    non-empty `id`, `model` and `created` win, because Azure opens its streams
    with a content-filter chunk where they are blank.

    With `max_chars`, each choice keeps at most that many characters of
    content (then `truncated` is set), so a huge stream is not held whole.
    """

    def __init__(self, *, max_chars: int | None = None) -> None:
        self._max_chars = max_chars
        self.truncated = False
        self._id: str | None = None
        self._model: str | None = None
        self._created: int | None = None
        self._usage: dict[str, Any] | None = None
        self._finish_reasons: dict[int, str] = {}
        self._choices: dict[int, _Choice] = {}
        self._tool_call_begun = False  # a choice began a tool call or `function_call`
        self._chunks = 0
        # The first and last chunks, whose other top-level fields (`system_fingerprint`,
        # `service_tier`) the whole answer carries; read once, at the end.
        self._first: Mapping[str, Any] | None = None
        self._last: Mapping[str, Any] | None = None

    @property
    def response_id(self) -> str | None:
        return self._id

    @property
    def model(self) -> str | None:
        return self._model

    @property
    def created(self) -> int | None:
        return self._created

    @property
    def usage(self) -> dict[str, Any] | None:
        """The last `usage` seen; OpenAI sends it in a final chunk with no choices."""
        return None if self._usage is None else dict(self._usage)

    @property
    def finish_reasons(self) -> dict[int, str]:
        return dict(sorted(self._finish_reasons.items()))

    @property
    def chunks(self) -> int:
        """How many chunks were accepted."""
        return self._chunks

    def add(self, chunk: Mapping[str, Any]) -> None:
        """Take in one chunk, as parsed from the `data:` of one event."""
        if not isinstance(chunk, Mapping):
            return
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return
        self._chunks += 1
        if self._first is None:
            self._first = chunk
        self._last = chunk
        if not self._id and isinstance(chunk.get("id"), str):
            self._id = chunk["id"] or None
        if not self._model and isinstance(chunk.get("model"), str):
            self._model = chunk["model"] or None
        if not self._created:
            self._created = _json_int(chunk.get("created")) or None
        if isinstance(chunk.get("usage"), Mapping):
            self._usage = dict(chunk["usage"])
        for choice in choices:
            if isinstance(choice, Mapping):
                self._add_choice(choice)

    def _add_choice(self, choice: Mapping[str, Any]) -> None:
        # A chunk may carry any subset of the choices, so its list position means nothing.
        index = _json_int(choice.get("index", 0))
        if index is None:
            return
        state = self._choices.setdefault(index, _Choice())
        if isinstance(choice.get("finish_reason"), str):
            self._finish_reasons[index] = choice["finish_reason"]
        logprobs = choice.get("logprobs", _ABSENT)
        if logprobs is not _ABSENT:
            state.logprobs_seen = True
            if logprobs is not None and isinstance(logprobs, Mapping):
                state.logprobs = merge_logprobs(state.logprobs, logprobs)
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            return
        if len(delta) == 1:
            # Most chunks: one piece of content (the hot path of every scored stream).
            content = delta.get("content")
            if type(content) is str and state.content is not None:
                kept = state.chars + len(content)
                if self._max_chars is None or kept <= self._max_chars:
                    state.content.append(content)
                    state.chars = kept
                    return
            if isinstance(content, str):
                self._add_content(state, content)
                return
        for name, value in delta.items():
            if name == "content":
                if isinstance(value, str):
                    self._add_content(state, value)
            elif name == "refusal":
                state.seen.add(name)
                if isinstance(value, str):
                    if state.refusal is None:
                        state.refusal = []
                    state.refusal.append(value)
            elif name == "tool_calls":
                if isinstance(value, list):
                    state.seen.add(name)
                    for position, item in enumerate(value):
                        if isinstance(item, Mapping):
                            _merge_tool_call(state.tool_calls, position, item)
                    self._tool_call_begun = self._tool_call_begun or bool(state.tool_calls)
                elif value is None:
                    state.seen.add("tool_calls: null")
            elif name == "role":
                if isinstance(value, str) and state.role is None:
                    state.role = value
            else:
                state.others[name] = _merged(state.others.get(name), value)
                if name == "function_call":
                    self._tool_call_begun = True

    def _add_content(self, state: _Choice, content: str) -> None:
        if state.content is None:
            state.content = TextParts()
        if self._max_chars is not None and state.chars + len(content) > self._max_chars:
            content = content[: self._max_chars - state.chars]
            self.truncated = True
        if content:
            state.content.append(content)
            state.chars += len(content)

    def text(self, index: int = 0) -> str:
        """The content of choice `index` so far; "" for a choice not seen."""
        state = self._choices.get(index)
        return state.content.text() if state and state.content else ""

    def texts(self) -> dict[int, str]:
        """The content of every choice seen, in index order."""
        return {index: self.text(index) for index in sorted(self._choices)}

    def refusals(self) -> dict[int, str]:
        """The refusal text of each choice that sent one, in index order."""
        return {
            index: "".join(state.refusal)
            for index, state in sorted(self._choices.items())
            if state.refusal is not None
        }

    def has_tool_calls(self) -> bool:
        """Whether a choice began a tool call (or a legacy `function_call`): asked after
        every event of a held stream, so it is kept, not searched for."""
        return self._tool_call_begun

    def as_completion(self) -> dict[str, Any]:
        """The `chat.completion` dict a non-streaming request would have returned.

        A message has the fields its deltas carried (`refusal: null` included), a
        choice its `logprobs` joined, and the answer the other top-level fields of
        its chunks (`system_fingerprint`, `service_tier`), the last non-null value of
        each. What a stream never says is left out: OpenAI's `annotations: []` on a
        message without annotations, and `usage` when the stream did not include it.
        """
        choices = []
        for index, state in sorted(self._choices.items()):
            message: dict[str, Any] = {
                "role": state.role or "assistant",
                "content": None if state.content is None else state.content.text(),
            }
            if "refusal" in state.seen:
                message["refusal"] = None if state.refusal is None else "".join(state.refusal)
            if "tool_calls: null" in state.seen and "tool_calls" not in state.seen:
                message["tool_calls"] = None
            elif "tool_calls" in state.seen:
                message["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": call.type or "function",
                        "function": {"name": call.name, "arguments": "".join(call.arguments)},
                    }
                    for _, call in sorted(state.tool_calls.items())
                ]
            message.update(state.others)
            choice: dict[str, Any] = {"index": index, "message": message}
            if state.logprobs_seen:
                choice["logprobs"] = state.logprobs
            choice["finish_reason"] = self._finish_reasons.get(index)
            choices.append(choice)
        completion: dict[str, Any] = {
            "id": self._id,
            "object": "chat.completion",
            "created": self._created,
            "model": self._model,
            "choices": choices,
        }
        completion.update(chunk_extras(self._first, self._last))
        if self._usage is not None:
            completion["usage"] = dict(self._usage)
        return completion


# Fields of a chunk that are the stream's own, or rebuilt on their own.
_CHUNK_FIELDS = frozenset({"id", "object", "created", "model", "choices", "usage", "obfuscation"})


def chunk_extras(*chunks: Mapping[str, Any] | None) -> dict[str, Any]:
    """The top-level fields of a stream's chunks a whole answer carries as well
    (`system_fingerprint`, `service_tier`): the last non-null value of each, null
    when every chunk had it null."""
    extras: dict[str, Any] = {}
    for chunk in chunks:
        for name, value in (chunk or {}).items():
            if name not in _CHUNK_FIELDS and (value is not None or name not in extras):
                extras[name] = value
    return extras


def merge_logprobs(joined: dict[str, Any] | None, piece: Mapping[str, Any]) -> dict[str, Any]:
    """A choice's `logprobs` so far with one chunk's added: each list joined (chat's
    `content` and `refusal`, legacy Completions' `tokens`, `token_logprobs`, ...), a
    field only ever null kept null."""
    joined = {} if joined is None else joined
    for name, value in piece.items():
        if isinstance(value, list):
            kept = joined.get(name)
            joined[name] = [*kept, *value] if isinstance(kept, list) else list(value)
        elif name not in joined:
            joined[name] = value
    return joined


def _merged(kept: Any, value: Any) -> Any:
    """A delta field's value so far with the next piece: strings and lists joined,
    objects merged field by field (an `id`, `name` or `type` is set once), and null
    never overwriting a value."""
    if value is None:
        return kept
    if isinstance(value, str) and isinstance(kept, str):
        return kept + value
    if isinstance(value, list) and isinstance(kept, list):
        return [*kept, *value]
    if isinstance(value, Mapping):
        merged = dict(kept) if isinstance(kept, Mapping) else {}
        for name, part in value.items():
            if name in _SET_ONCE and merged.get(name) is not None:
                continue
            merged[name] = _merged(merged.get(name), part)
        return merged
    return list(value) if isinstance(value, list) else value


def _merge_tool_call(calls: dict[int, _ToolCall], position: int, item: Mapping[str, Any]) -> None:
    # Later deltas of a call carry only its `index` and a slice of `arguments`. A
    # missing index (some OpenAI-compatible servers) falls back to the list position.
    index = _json_int(item.get("index", position))
    if index is None:
        return
    call = calls.setdefault(index, _ToolCall())
    if isinstance(item.get("id"), str) and call.id is None:
        call.id = item["id"]
    if isinstance(item.get("type"), str) and call.type is None:
        call.type = item["type"]
    function = item.get("function")
    if isinstance(function, Mapping):
        if isinstance(function.get("name"), str) and call.name is None:
            call.name = function["name"]
        if isinstance(function.get("arguments"), str):
            call.arguments.append(function["arguments"])


def completion_texts(completion: Mapping[str, Any]) -> dict[int, str]:
    """The text of each choice of a non-streaming `chat.completion`, by index.

    `content` may be a string or a list of parts, whose `text` parts are joined.
    Choices whose content is None or holds no text part are left out.
    """
    choices = completion.get("choices") if isinstance(completion, Mapping) else None
    if not isinstance(choices, list):
        return {}
    texts: dict[int, str] = {}
    for position, choice in enumerate(choices):
        if not isinstance(choice, Mapping) or not isinstance(choice.get("message"), Mapping):
            continue
        index = _json_int(choice.get("index", position))
        if index is None:
            continue
        content = choice["message"].get("content")
        if isinstance(content, str):
            texts[index] = content
        elif isinstance(content, list):
            parts = [
                part["text"]
                for part in content
                if isinstance(part, Mapping)
                and part.get("type") == "text"
                and isinstance(part.get("text"), str)
            ]
            if parts:
                texts[index] = "".join(parts)
    return dict(sorted(texts.items()))


def readable_completion(completion: object) -> bool:
    """Whether a non-streaming answer has the shape of a `chat.completion`.

    `choices` must be a list of objects whose `message` is an object with a
    string, list or null `content`. An enforcing gateway may not treat anything
    else as "no text": it could not tell what the client would be shown.
    """
    if not isinstance(completion, Mapping):
        return False
    choices = completion.get("choices")
    if not isinstance(choices, list):
        return False
    for choice in choices:
        if not isinstance(choice, Mapping):
            return False
        message = choice.get("message")
        if not isinstance(message, Mapping):
            return False
        if not isinstance(message.get("content"), str | list | None):
            return False
    return True


def _json_int(value: object) -> int | None:
    # bool is a subclass of int, but JSON's true is no index.
    return value if isinstance(value, int) and not isinstance(value, bool) else None
