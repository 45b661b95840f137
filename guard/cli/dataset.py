"""`bias-guard eval`'s input: a JSONL file read into eval items, malformed lines named."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guard.cli.options import CLIError
from guard.errors import OutputShapeError
from guard.evals import EvalItem
from guard.outputs import assistant_text

__all__ = ["Dataset", "read_jsonl"]


@dataclass(slots=True)
class Dataset:
    """The well-formed items of a JSONL file, each item's line number, and the lines skipped."""

    items: list[EvalItem] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    skipped: int = 0


def read_jsonl(path: Path, *, needs_target: bool, strict: bool) -> Dataset:
    """Read the dataset; a malformed line is reported and skipped, or with `strict` fatal."""
    dataset = Dataset()
    try:
        with path.open("rb") as file:
            for number, item in _parse_lines(file, needs_target=needs_target):
                if isinstance(item, EvalItem):
                    dataset.items.append(item)
                    dataset.lines.append(number)
                elif strict:
                    raise CLIError(f"{path}:{number}: {item}")
                else:
                    print(f"bias-guard: {path}:{number}: skipped: {item}", file=sys.stderr)
                    dataset.skipped += 1
    except FileNotFoundError as exc:
        raise CLIError(f"{path}: no such file") from exc
    except OSError as exc:
        raise CLIError(f"{path}: {exc.strerror}") from exc
    if not dataset.items:
        skipped = f" ({dataset.skipped} malformed lines skipped)" if dataset.skipped else ""
        raise CLIError(f"{path}: no items{skipped}")
    return dataset


def _parse_lines(
    lines: Iterable[bytes], *, needs_target: bool
) -> Iterator[tuple[int, EvalItem | str]]:
    """Each non-blank line's number and its item, or why it is malformed.

    Lines split on newlines only: `str.splitlines` would also split at U+2028
    and friends, which JSON leaves unescaped inside strings.
    """
    for number, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            yield number, "not valid UTF-8"
            continue
        if line.strip():
            yield number, _parse_line(line, needs_target=needs_target)


def _parse_line(line: str, *, needs_target: bool) -> EvalItem | str:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"invalid JSON: {exc.msg} (column {exc.colno})"
    if not isinstance(value, dict):
        return f"expected a JSON object, got {_json_type(value)}"
    if "input" not in value:
        return 'no "input" key'
    if "output" in value:
        try:
            assistant_text(value["output"])
        except OutputShapeError as exc:
            return f'invalid "output": {exc}'
    elif needs_target:
        return 'no "output", and no --target to produce one'
    return EvalItem.from_value(value)


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"
