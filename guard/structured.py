"""Ask a judge for JSON of a given shape, with one corrective retry."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from guard.errors import JudgeOutputError
from guard.judge import Judge
from guard.parsing import extract_json
from guard.wire import Message, OutputSchema, Usage

__all__ = ["StructuredReply", "ask_json"]

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class StructuredReply(Generic[T]):
    value: T
    usage: Usage
    calls: int


async def ask_json(
    judge: Judge, messages: Sequence[Message], schema: OutputSchema, model: type[T]
) -> StructuredReply[T]:
    """Ask `judge` for a `schema`-shaped answer, parsed into `model`.

    When the first answer cannot be read, the judge is shown its answer and the
    problem once; a second failure raises `JudgeOutputError` with the raw text.
    """
    reply = await judge.complete(messages, schema=schema)
    try:
        return StructuredReply(_parse(reply.text, model), reply.usage, 1)
    except (ValueError, ValidationError) as exc:
        problem = _describe(exc)
    retry_messages = [
        *messages,
        {"role": "assistant", "content": reply.text},
        {
            "role": "user",
            "content": "That answer could not be used: "
            + problem
            + ". Reply again with only a JSON object matching this schema: "
            + json.dumps(schema.schema),
        },
    ]
    second = await judge.complete(retry_messages, schema=schema)
    usage = reply.usage + second.usage
    try:
        return StructuredReply(_parse(second.text, model), usage, 2)
    except (ValueError, ValidationError) as exc:
        raise JudgeOutputError(
            f"judge gave no valid {schema.name!r} JSON twice: {_describe(exc)}", raw=second.text
        ) from exc


def _parse(text: str, model: type[T]) -> T:
    return model.model_validate(extract_json(text))


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(root)"
        return f"{where}: {first['msg']}"
    return str(exc)
