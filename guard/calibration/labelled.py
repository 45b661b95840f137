"""Labelled texts, and the project's own labelled JSONL format.

One JSON object per line:

    {"text": "Women cannot lead.", "label": "biased", "category": "gender", "id": "g1"}

`label` is `"biased"` or `"unbiased"`, or a number: the score the text
should get on the scorer's scale, which counts as biased when it is at least
the label cut (half the scale unless told otherwise). `category` and `id` are
optional. Blank lines are ignored; a malformed line is reported with its line
number and skipped, or with `strict` ends the read.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from guard.errors import LabelledDataError
from guard.jsonl import Malformed, json_lines, json_type

__all__ = [
    "LABELS",
    "Collector",
    "LabelledItem",
    "LabelledSet",
    "Skipped",
    "opened",
    "read_labelled_jsonl",
]

LABELS = ("biased", "unbiased")


@dataclass(frozen=True, slots=True)
class LabelledItem:
    """A text to judge and whether it is biased.

    `location` says where it came from in its file: a line number ("7") or, in
    a JSON document, a path ("data.intrasentence[0].sentences[2]"); `line` is
    the line number when there is one. `expected` is the expected score when
    the label was given as one.
    """

    text: str
    biased: bool
    location: str
    line: int | None = None
    category: str | None = None
    id: str | None = None
    expected: float | None = None


@dataclass(frozen=True, slots=True)
class Skipped:
    """A malformed record: where it is in the file and why it was skipped."""

    location: str
    why: str


@dataclass(slots=True)
class LabelledSet:
    """The items a reader found, the records it skipped as malformed, and the
    records its format's mapping leaves out on purpose, counted by reason."""

    format: str
    items: list[LabelledItem] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)

    def leave_out(self, reason: str, count: int = 1) -> None:
        self.left_out[reason] = self.left_out.get(reason, 0) + count


class Collector:
    """What a reader fills: items, skips (fatal when `strict`), and left-out counts."""

    def __init__(self, path: Path, format: str, *, strict: bool) -> None:
        self.path = path
        self.strict = strict
        self.found = LabelledSet(format)

    def add(self, item: LabelledItem) -> None:
        self.found.items.append(item)

    def skip(self, location: str, why: str) -> None:
        if self.strict:
            raise LabelledDataError(f"{self.path}:{location}: {why}")
        self.found.skipped.append(Skipped(location, why))

    def leave_out(self, reason: str) -> None:
        self.found.leave_out(reason)

    def done(self) -> LabelledSet:
        """The set, or an error when it holds no item."""
        if not self.found.items:
            notes = []
            if self.found.skipped:
                notes.append(f"{len(self.found.skipped)} malformed records skipped")
            if self.found.left_out:
                notes.append(f"{sum(self.found.left_out.values())} left out by design")
            said = f" ({'; '.join(notes)})" if notes else ""
            raise LabelledDataError(f"{self.path}: no items{said}")
        return self.found


@contextmanager
def opened(path: Path, mode: str = "rb", **options: Any) -> Iterator[IO[Any]]:
    """`path` opened, an absent or unreadable file said as a `LabelledDataError`."""
    try:
        file = path.open(mode, **options)
    except FileNotFoundError as exc:
        raise LabelledDataError(f"{path}: no such file") from exc
    except OSError as exc:
        raise LabelledDataError(f"{path}: {exc.strerror}") from exc
    with file:
        yield file


def read_labelled_jsonl(
    path: Path, *, scale: float = 1.0, label_cut: float | None = None, strict: bool = False
) -> LabelledSet:
    """Read the project's labelled JSONL (see the module's docstring)."""
    cut = scale / 2 if label_cut is None else label_cut
    collect = Collector(path, "jsonl", strict=strict)
    with opened(path) as file:
        for number, value in json_lines(file):
            found = (
                value.why
                if isinstance(value, Malformed)
                else _item(value, number, scale=scale, cut=cut)
            )
            if isinstance(found, str):
                collect.skip(str(number), found)
            else:
                collect.add(found)
    return collect.done()


def _item(value: Any, line: int, *, scale: float, cut: float) -> LabelledItem | str:
    if not isinstance(value, dict):
        return f"expected a JSON object, got {json_type(value)}"
    text = value.get("text")
    if "text" not in value:
        return 'no "text" key'
    if not isinstance(text, str) or not text.strip():
        return f'"text" must be a non-empty string, got {_shown(text)}'
    if "label" not in value:
        return 'no "label" key'
    label = value["label"]
    expected: float | None = None
    if isinstance(label, str) and label.strip().lower() in LABELS:
        biased = label.strip().lower() == "biased"
    elif isinstance(label, int | float) and not isinstance(label, bool):
        if not (math.isfinite(label) and 0 <= label <= scale):
            return f'"label" {label:g} is outside the scale 0..{scale:g}'
        expected = float(label)
        biased = expected >= cut
    else:
        return (
            f'"label" must be "biased", "unbiased" or a score from 0 to {scale:g},'
            f" got {_shown(label)}"
        )
    category = value.get("category")
    if category is not None and not isinstance(category, str):
        return f'"category" must be a string, got {json_type(category)}'
    ident = value.get("id")
    if ident is not None and (not isinstance(ident, str | int) or isinstance(ident, bool)):
        return f'"id" must be a string or an integer, got {json_type(ident)}'
    return LabelledItem(
        text=text,
        biased=biased,
        location=str(line),
        line=line,
        category=(category.strip() or None) if category is not None else None,
        id=None if ident is None else str(ident),
        expected=expected,
    )


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:40] + "…")
    return json_type(value)
