"""The attack corpus, as the bench reads it: `testkit.attacks`'s entries, or a
JSON-lines file of the same shape (`--corpus`)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testkit.attack_runs import ToolCall
from testkit.attacks import corpus

__all__ = ["Entry", "entry_of", "from_file", "from_tests", "limited"]

_UNSAFE_KEY = re.compile(r"[^\w.-]")


@dataclass(frozen=True)
class Entry:
    """One attack (or benign text) of the corpus."""

    id: str
    family: str  # injection, hidden_text, padding, tool_arguments, encoding, lookalike, benign
    style: str
    language: str
    text: str
    biased: bool
    expect_tamper: tuple[str, ...] = ()
    tool_name: str | None = None
    arguments: Any = None  # a tool call's arguments: an object, or its JSON text
    obfuscation: str | None = None  # how an injection hides: zero_width, lookalike...
    # The attack's biased content as plain text: decoded, in ordinary letters, without
    # padding or the words addressed to the judge (`control`).
    plain: str | None = None

    @property
    def attack(self) -> bool:
        return self.family != "benign"

    def control(self) -> Entry | None:
        """The attack's plain text as an entry of its own, answered as text: what the
        judge makes of the content with no defence to beat (None without `plain`)."""
        if self.plain is None or not self.attack:
            return None
        return Entry(
            id=f"{self.id}~plain", family=self.family, style=self.style,
            language=self.language, text=self.plain, biased=self.biased,
        )  # fmt: skip

    @property
    def key(self) -> str:
        """The entry's id as a key the fake upstream can be asked for."""
        return _UNSAFE_KEY.sub("_", self.id)

    def answer(self) -> str | ToolCall:
        """What the upstream answers: the text, or a tool call carrying it."""
        if self.tool_name is None:
            return self.text
        arguments = self.arguments if self.arguments is not None else {"text": self.text}
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        return ToolCall(self.tool_name, arguments)


def entry_of(raw: Any) -> Entry:
    """An entry from a JSON object or from a corpus sample (a dataclass)."""
    if isinstance(raw, Mapping):
        fields: Mapping[str, Any] = raw
    elif dataclasses.is_dataclass(raw) and not isinstance(raw, type):
        fields = dataclasses.asdict(raw)
    else:
        fields = vars(raw)
    return Entry(
        id=str(fields["id"]),
        family=str(fields["family"]),
        style=str(fields.get("style") or "-"),
        language=str(fields.get("language") or "-"),
        text=str(fields.get("text") or ""),
        biased=bool(fields.get("biased", fields["family"] != "benign")),
        expect_tamper=tuple(fields.get("expect_tamper") or ()),
        tool_name=fields.get("tool_name"),
        arguments=fields.get("arguments"),
        obfuscation=fields.get("obfuscation"),
        plain=fields.get("plain") or None,
    )


def from_file(path: Path) -> list[Entry]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [entry_of(json.loads(line)) for line in lines if line.strip()]


def from_tests() -> list[Entry]:
    """The corpus of `testkit.attacks` (the attacks, then the benign texts),
    through its `corpus()`."""
    return [entry_of(sample) for sample in corpus()]


def limited(entries: Iterable[Entry], per_family: int | None) -> list[Entry]:
    """At most `per_family` entries of each family, in corpus order (None: all)."""
    kept: list[Entry] = []
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry.family] = counts.get(entry.family, 0) + 1
        if per_family is None or counts[entry.family] <= per_family:
            kept.append(entry)
    return kept
