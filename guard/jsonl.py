"""JSON Lines as every reader in guard reads them: numbered, blank lines ignored, and a
line that cannot be read reported as `Malformed` rather than raised.

Lines split on newlines only: `str.splitlines` would also split at U+2028 and
friends, which JSON leaves unescaped inside strings. A byte-order mark on the
first line is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Malformed", "json_lines", "json_type"]


@dataclass(frozen=True, slots=True)
class Malformed:
    """Why a line is not a JSON value: not UTF-8, or not JSON."""

    why: str


def json_lines(lines: Iterable[bytes]) -> Iterator[tuple[int, Any]]:
    """Each non-blank line's number (from 1) and its JSON value, or `Malformed`."""
    for number, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            yield number, Malformed("not valid UTF-8")
            continue
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, Malformed(f"invalid JSON: {exc.msg} (column {exc.colno})")


def json_type(value: Any) -> str:
    """A JSON value's kind as a message names it: "an array", "a string", "null"."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"
