"""Tolerant reading of JSON from LLM text.

Judges wrap JSON in code fences, prefix it with prose, or leave trailing
commas. These functions are pure so that every case can be tested directly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["extract_json", "unwrap_reason"]

_FENCE = re.compile(r"```(?:[A-Za-z0-9_-]+)?\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def extract_json(text: str) -> Any:
    """Return the first JSON object or array found in `text`.

    >>> extract_json('Sure! ```json\\n{"a": [1, 2,],}\\n```')
    {'a': [1, 2]}

    Raises `ValueError` when no JSON value can be read.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)]
    candidates.append(text)
    for candidate in candidates:
        for blob in _balanced_blocks(candidate):
            value = _loads_lenient(blob)
            if value is not None:
                return value
    cut = _close_cut(text)
    if cut is not None:
        return cut
    raise ValueError("no JSON object found in the judge's answer")


def _close_cut(text: str) -> Any:
    """An answer cut off inside its JSON (at the judge's `max_tokens`), up to its last
    whole element, closed: `{"opinions": ["a", "b", "c` reads as `{"opinions": ["a", "b"]}`.

    A small model held to a schema can repeat list entries until its answer is cut;
    the entries before the cut are what it meant to say. The cut nearest the top is
    taken first (the last whole verdict, rather than a verdict missing its reason).
    None when nothing reads.
    """
    start = text.find("{")
    if start < 0:
        return None
    open_: list[str] = []
    cuts: list[tuple[int, str]] = []  # (end of a whole element, the closers it needs)
    for index, char in _syntax(text, start):
        if char in "{[":
            open_.append("}" if char == "{" else "]")
        elif char in "}]":
            if not open_:
                return None  # a whole block was there: not a cut answer
            open_.pop()
            if not open_:
                return None
        else:
            cuts.append((index, "".join(reversed(open_))))
    if not open_:
        return None
    for end, closers in sorted(cuts, key=lambda cut: (len(cut[1]), -cut[0])):
        value = _loads_lenient(text[start:end] + closers)
        if value is not None:
            return value
    return None


def unwrap_reason(text: str) -> str:
    """Return the plain explanation from a judge's reason answer.

    The reason step asks for plain text, but judges often answer
    `{"reason": "..."}` or a fenced JSON block; the user wants only the prose.
    """
    stripped = text.strip()
    looks_structured = stripped.startswith(("{", "```")) or _FENCE.search(stripped) is not None
    if looks_structured:
        try:
            value = extract_json(stripped)
        except ValueError:
            value = None
        if isinstance(value, dict):
            for key in ("reason", "explanation", "text"):
                if isinstance(value.get(key), str):
                    return str(value[key]).strip()
        fence = _FENCE.fullmatch(stripped)
        if fence is not None and value is None:
            return fence.group(1).strip()
    return stripped


def _loads_lenient(blob: str) -> Any:
    for attempt in (blob, _TRAILING_COMMA.sub(r"\1", blob)):
        try:
            return json.loads(attempt)
        except (json.JSONDecodeError, RecursionError):
            continue
    return None


def _balanced_blocks(text: str) -> list[str]:
    """Every top-level `{...}` or `[...]` span, honouring strings and escapes."""
    blocks: list[str] = []
    depth = 0
    start = -1
    for index, char in _syntax(text):
        if char in "{[":
            if depth == 0:
                start = index
            depth += 1
        elif char in "}]" and depth > 0:
            depth -= 1
            if depth == 0:
                blocks.append(text[start : index + 1])
    return blocks


def _syntax(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """The brackets and commas of `text` from `start` that lie outside JSON strings. A
    quote opens a string only inside a bracket: prose around a block may quote freely."""
    depth = 0
    in_string = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = depth > 0
        elif char in "{[":
            depth += 1
            yield index, char
        elif char in "}]":
            depth = max(0, depth - 1)
            yield index, char
        elif char == ",":
            yield index, char
