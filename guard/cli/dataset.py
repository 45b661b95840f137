"""`bias-guard eval`'s input: a JSONL file read into eval items, malformed lines named."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guard.cli.options import CLIError
from guard.errors import OutputShapeError
from guard.evals import EvalItem
from guard.jsonl import Malformed, json_lines, json_type
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
    """Each non-blank line's number and its item, or why it is malformed."""
    for number, value in json_lines(lines):
        if isinstance(value, Malformed):
            yield number, value.why
        else:
            yield number, _parse_value(value, needs_target=needs_target)


def _parse_value(value: Any, *, needs_target: bool) -> EvalItem | str:
    if not isinstance(value, dict):
        return f"expected a JSON object, got {json_type(value)}"
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
