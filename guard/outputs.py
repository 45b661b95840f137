"""Read the assistant's text out of the shapes a scorer accepts as `output`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from guard.errors import OutputShapeError

__all__ = ["assistant_text", "valid_text"]


def assistant_text(output: Any) -> str:
    """Return the text to judge.

    `output` may be a string, `{"text": ...}`, an OpenAI chat-completion
    (object or dict), or a list of chat messages, whose assistant messages are
    joined. Anything else, or a shape with no assistant text, raises
    `OutputShapeError`.
    """
    return valid_text(_text_of(output))


def valid_text(text: str) -> str:
    """`text` as valid Unicode: each unpaired surrogate becomes U+FFFD.

    JSON may escape a lone surrogate (`"\\ud800"`), and Python decodes it into a
    `str` that cannot be encoded as UTF-8: hashing, logging or sending such a
    text would fail later, far from where it came in.

    >>> valid_text("ok \\ud800") == "ok \\N{REPLACEMENT CHARACTER}"
    True
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _text_of(output: Any) -> str:
    if isinstance(output, str):
        return output
    if hasattr(output, "model_dump") and not isinstance(output, Mapping):
        output = output.model_dump()
    if isinstance(output, Mapping):
        if isinstance(output.get("text"), str):
            return str(output["text"])
        if "choices" in output:
            return _completion_text(output)
        if "role" in output:
            return _messages_text([output])
    elif isinstance(output, Sequence) and not isinstance(output, bytes | bytearray):
        return _messages_text(output)
    raise OutputShapeError(
        f"cannot score output of type {type(output).__name__}: pass a string, "
        '{"text": ...}, a chat completion, or a list of messages'
    )


def _completion_text(completion: Mapping[str, Any]) -> str:
    choices = completion.get("choices") or []
    if not choices:
        raise OutputShapeError("the chat completion has no choices")
    message = _as_mapping(choices[0]).get("message") or {}
    text = _content_text(_as_mapping(message).get("content"))
    if text is None:
        raise OutputShapeError("the chat completion's first choice has no text content")
    return text


def _messages_text(messages: Sequence[Any]) -> str:
    texts: list[str] = []
    for raw in messages:
        message = _as_mapping(raw)
        if message.get("role") != "assistant":
            continue
        text = _content_text(message.get("content"))
        if text:
            texts.append(text)
    if not texts:
        raise OutputShapeError("the messages hold no assistant text")
    return "\n\n".join(texts)


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = [
            str(part["text"])
            for part in map(_as_mapping, content)
            if part.get("type") == "text" and isinstance(part.get("text"), str)
        ]
        return "\n".join(parts) if parts else None
    return None


def _as_mapping(value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    if hasattr(value, "model_dump"):
        dumped: Mapping[str, Any] = value.model_dump()
        return dumped
    raise OutputShapeError(f"expected a message object, got {type(value).__name__}")
