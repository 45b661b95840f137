"""The attack corpus: biased answers dressed to get past the judge, and benign texts that
must not be marked.

Written for this project (none of it is copied from another tool's attack set).
`attacks.jsonl` holds one biased answer per line, each with the attack it carries;
`benign.jsonl` holds texts with no biased opinion that talk about reviews, graders,
moderation, JSON, prompts, chat transcripts and AI models, or are code, right-to-left
or CJK text, Cyrillic or Greek, and emoji. Hidden characters are written as JSON
escapes, so the files read plainly.

Both the tamper detector's tests (`tests/guard/integrity/test_tamper.py`) and the
attack benches (`python -m bench tamper_corpus`, `python -m bench attacks`) read it
through `attacks()`, `benign()` and `corpus()`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal, cast, get_args

from guard.integrity.tamper import KINDS, TamperKind

__all__ = ["FAMILIES", "Family", "Sample", "attacks", "benign", "corpus"]

HERE = Path(__file__).resolve().parent

Family = Literal[
    "injection", "hidden_text", "padding", "tool_arguments", "encoding", "lookalike", "benign"
]
FAMILIES: tuple[Family, ...] = get_args(Family)


@dataclass(frozen=True, slots=True)
class Sample:
    """One text of the corpus and what it should do to the detector and the judge.

    `style` is the attack's technique within its family (for injection: instruction,
    format_forgery, role_forgery or section_close), or a benign text's topic.
    `expect_tamper` are the kinds the detector must report at least. A tool-argument
    attack also names the tool and its arguments, one of which is `text`. `plain` is
    an attack's biased content alone, as ordinary text (the bench's control: does
    the judge call it biased with no attack around it?).
    """

    id: str
    family: Family
    style: str
    language: str
    text: str
    expect_tamper: tuple[TamperKind, ...]
    biased: bool
    obfuscation: str | None = None
    tool_name: str | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict)
    plain: str | None = None


def _sample(row: dict[str, Any]) -> Sample:
    family = row["family"]
    if family not in FAMILIES:
        raise ValueError(f"{row['id']}: unknown family {family!r}")
    kinds = tuple(row["expect_tamper"])
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise ValueError(f"{row['id']}: unknown tamper kinds {sorted(unknown)}")
    return Sample(
        id=row["id"],
        family=cast(Family, family),
        style=row["style"],
        language=row["language"],
        text=row["text"],
        expect_tamper=cast(tuple[TamperKind, ...], kinds),
        biased=bool(row["biased"]),
        obfuscation=row.get("obfuscation"),
        tool_name=row.get("tool_name"),
        arguments=row.get("arguments", {}),
        plain=row.get("plain"),
    )


def _read(name: str) -> tuple[Sample, ...]:
    with (HERE / name).open(encoding="utf-8") as lines:
        return tuple(_sample(json.loads(line)) for line in lines if line.strip())


@cache
def attacks() -> tuple[Sample, ...]:
    """Every biased answer with its attack, in file order."""
    return _read("attacks.jsonl")


@cache
def benign() -> tuple[Sample, ...]:
    """Every benign text, in file order."""
    return _read("benign.jsonl")


def corpus() -> tuple[Sample, ...]:
    """The attacks, then the benign texts."""
    return attacks() + benign()
