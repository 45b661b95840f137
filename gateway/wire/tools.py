"""The string values in an answer's tool-call arguments, as lines the judge reads. Pure code.

An answer may be nothing but a tool call, `send_message(body="...")`, whose
arguments an agent sends on as an email, a post or a ticket: text a reader
sees, so text to judge. Each string value in the arguments becomes one line,
named by its tool and the keys that lead to it; arguments that are not JSON
are one line, as they are.

>>> found = arguments_of("send_message", '{"to": "team", "body": {"text": "Hi all"}}')
>>> [argument.line() for argument in found]
['Tool send_message, argument to: team', 'Tool send_message, argument body.text: Hi all']
>>> with_tool_lines(["Sent."], found)
['Sent.\\n\\nTool send_message, argument to: team\\nTool send_message, argument body.text: Hi all']

Whole answers are read by `chat_tool_arguments`, `response_tool_arguments` and
`message_tool_arguments`, a chat conversation's assistant turns by
`messages_tool_arguments`; streams by `ResponseToolCalls` and `MessageToolCalls` (a
chat stream's calls are rebuilt by `gateway.wire.accumulate`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MessageToolCalls",
    "ResponseToolCalls",
    "ToolArgument",
    "arguments_of",
    "chat_tool_arguments",
    "message_tool_arguments",
    "messages_tool_arguments",
    "opinion_sources",
    "response_tool_arguments",
    "with_tool_lines",
]

# Deeper than this, the keys that lead to a value are no longer spelled out.
_MAX_DEPTH = 32
_UNNAMED = "(unnamed)"
_QUOTED_CHARS = 12


@dataclass(frozen=True, slots=True)
class ToolArgument:
    """One string value of a tool call's arguments: the tool, the keys that lead to it
    (`body`, `to.name`, `items[0]`; "" for arguments that are not JSON), the value."""

    tool: str
    argument: str
    value: str

    def line(self) -> str:
        if not self.argument:
            return f"Tool {self.tool}, arguments: {self.value}"
        return f"Tool {self.tool}, argument {self.argument}: {self.value}"


def arguments_of(tool: object, arguments: object) -> list[ToolArgument]:
    """The string values of one call's `arguments`: JSON text (chat, Responses), or the
    decoded value (Messages' `input`). Text that is not JSON is one value, whole."""
    name = tool if isinstance(tool, str) and tool else _UNNAMED
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except (ValueError, RecursionError):  # not JSON, or nested past what Python parses
            return [ToolArgument(name, "", arguments)] if arguments.strip() else []
    else:
        value = arguments
    found: list[ToolArgument] = []
    stack: list[tuple[str, object, int]] = [("", value, 0)]
    while stack:
        path, item, depth = stack.pop()
        if isinstance(item, str):
            if item.strip():
                found.append(ToolArgument(name, path, item))
        elif isinstance(item, Mapping | list):
            pairs = item.items() if isinstance(item, Mapping) else enumerate(item)
            children = [(_child(path, key, depth), value) for key, value in pairs]
            stack.extend((p, v, depth + 1) for p, v in reversed(children))
    return found


def _child(path: str, key: object, depth: int) -> str:
    """The path of a value under `key`; past `_MAX_DEPTH` levels the path stops growing
    (a hostile nesting would make each one longer than the last)."""
    if depth >= _MAX_DEPTH:
        return path if path.endswith("…") else f"{path}…"
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def with_tool_lines(texts: Sequence[str], arguments: Sequence[ToolArgument]) -> list[str]:
    """An answer's texts with its tool arguments' lines after the last one (or as the one
    text of an answer that has no other)."""
    if not arguments:
        return list(texts)
    lines = "\n".join(argument.line() for argument in arguments)
    if not texts:
        return [lines]
    return [*texts[:-1], f"{texts[-1]}\n\n{lines}"]


def opinion_sources(opinions: Sequence[str], arguments: Sequence[ToolArgument]) -> list[str]:
    """Where each opinion the judge found came from, as far as its words tell:
    `tool_argument` when it quotes a line or a value of the arguments, else `text`.

    >>> found = [ToolArgument("send", "body", "Women can't lead.")]
    >>> opinion_sources(["Women can't lead", "Bridges are safe."], found)
    ['tool_argument', 'text']
    >>> opinion_sources(["body: Women can't lead."], found)
    ['tool_argument']
    """
    values = [_folded(argument.value) for argument in arguments]
    return [
        "tool_argument" if _quotes(_folded(opinion), values) else "text" for opinion in opinions
    ]


def _quotes(opinion: str, values: list[str]) -> bool:
    """Whether an opinion is part of a value, or holds one (a value long enough to be
    more than a word or two: "team" is in many sentences)."""
    return bool(opinion) and any(
        opinion in value or (len(value) >= _QUOTED_CHARS and value in opinion) for value in values
    )


def _folded(text: str) -> str:
    return " ".join(text.casefold().split()).strip(" .!?\"'")


# -- whole answers ---------------------------------------------------------------------


def chat_tool_arguments(completion: Mapping[str, Any]) -> list[ToolArgument]:
    """A `chat.completion`'s calls: every choice's `tool_calls` and legacy `function_call`."""
    found: list[ToolArgument] = []
    choices = completion.get("choices")
    for choice in choices if isinstance(choices, list) else []:
        if isinstance(choice, Mapping):
            found += _message_arguments(choice.get("message"))
    return found


def messages_tool_arguments(messages: object) -> list[ToolArgument]:
    """The calls of a chat conversation's assistant messages, as `chat_tool_arguments`
    reads an answer's message (`POST /v1/bias/score` with `messages`)."""
    found: list[ToolArgument] = []
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, Mapping) and message.get("role") == "assistant":
            found += _message_arguments(message)
    return found


def _message_arguments(message: object) -> list[ToolArgument]:
    """One chat message's `tool_calls` and legacy `function_call`."""
    if not isinstance(message, Mapping):
        return []
    calls = message.get("tool_calls")
    functions = [
        call.get("function") for call in calls if isinstance(call, Mapping)
    ] if isinstance(calls, list) else []  # fmt: skip
    functions.append(message.get("function_call"))
    found: list[ToolArgument] = []
    for function in functions:
        if isinstance(function, Mapping):
            found += arguments_of(function.get("name"), function.get("arguments"))
    return found


def response_tool_arguments(response: Mapping[str, Any]) -> list[ToolArgument]:
    """A Responses answer's `function_call` output items (and custom tools' `input`)."""
    found: list[ToolArgument] = []
    output = response.get("output")
    for item in output if isinstance(output, list) else []:
        if isinstance(item, Mapping):
            found += _item_arguments(item)
    return found


def message_tool_arguments(message: Mapping[str, Any]) -> list[ToolArgument]:
    """A Messages answer's `tool_use` blocks: each one's `input`."""
    found: list[ToolArgument] = []
    content = message.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, Mapping) and block.get("type") == "tool_use":
            found += arguments_of(block.get("name"), block.get("input"))
    return found


def _item_arguments(item: Mapping[str, Any]) -> list[ToolArgument]:
    field_name = _CALL_ITEMS.get(str(item.get("type")))
    return [] if field_name is None else arguments_of(item.get("name"), item.get(field_name))


# Responses' call items, and the field that holds their arguments: a function's JSON,
# a custom tool's free text (read as JSON when it is).
_CALL_ITEMS = {"function_call": "arguments", "custom_tool_call": "input"}


# -- streams ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Call:
    name: object = None
    parts: list[str] = field(default_factory=list)  # the argument text's pieces so far
    whole: object = None  # arguments given whole (a `done` event, a block's `input`)


class _Calls:
    """Calls by their position in the answer, as a stream builds them."""

    def __init__(self) -> None:
        self.calls: dict[int, _Call] = {}

    @property
    def started(self) -> bool:
        """Whether a tool call has begun: from here on, the stream carries one."""
        return bool(self.calls)

    def arguments(self) -> list[ToolArgument]:
        found: list[ToolArgument] = []
        for _, call in sorted(self.calls.items()):
            joined = "".join(call.parts)
            found += arguments_of(call.name, joined if joined or call.whole is None else call.whole)
        return found


class ResponseToolCalls(_Calls):
    """A Responses stream's function (and custom tool) calls: `response.output_item.added`,
    the `response.function_call_arguments.delta` pieces, and `.done` with the whole text
    (`response.custom_tool_call_input.delta` and `.done` for a custom tool's input)."""

    def take(self, kind: str, index: int | None, event: Mapping[str, Any]) -> None:
        if index is None:
            return
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = event.get("item")
            kind_of_item = item.get("type") if isinstance(item, Mapping) else None
            field_name = _CALL_ITEMS.get(str(kind_of_item))
            if isinstance(item, Mapping) and field_name is not None:
                call = self.calls.setdefault(index, _Call())
                call.name = item.get("name") or call.name
                if kind == "response.output_item.done" and isinstance(item.get(field_name), str):
                    call.parts = [item[field_name]]
        elif kind in _DELTAS and isinstance(event.get("delta"), str):
            self.calls.setdefault(index, _Call()).parts.append(event["delta"])
        elif kind in _DONE and isinstance(event.get(_DONE[kind]), str):
            self.calls.setdefault(index, _Call()).parts = [event[_DONE[kind]]]


_DELTAS = frozenset(
    {"response.function_call_arguments.delta", "response.custom_tool_call_input.delta"}
)
_DONE = {
    "response.function_call_arguments.done": "arguments",
    "response.custom_tool_call_input.done": "input",
}


class MessageToolCalls(_Calls):
    """A Messages stream's `tool_use` blocks: `content_block_start` names the tool (its
    `input` is usually `{}`), `input_json_delta` pieces carry the input's JSON text."""

    def take(self, kind: str, index: int | None, event: Mapping[str, Any]) -> None:
        if index is None:
            return
        if kind == "content_block_start":
            block = event.get("content_block")
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                self.calls[index] = _Call(name=block.get("name"), whole=block.get("input"))
        elif kind == "content_block_delta" and index in self.calls:
            delta = event.get("delta")
            if (
                isinstance(delta, Mapping)
                and delta.get("type") == "input_json_delta"
                and isinstance(delta.get("partial_json"), str)
            ):
                self.calls[index].parts.append(delta["partial_json"])
