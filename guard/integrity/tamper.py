"""PLACEHOLDER for tamper detection (issue #30, item 5): a couple of English patterns and
Unicode tag characters. The real module replaces this one at merge."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, get_args

__all__ = ["Tamper", "TamperKind", "detect"]

TamperKind = Literal["instruction", "forged_marker", "forged_verdict", "hidden_text", "bidi"]
_KINDS: tuple[TamperKind, ...] = get_args(TamperKind)

_INSTRUCTION = re.compile(
    r"ignore (?:all )?(?:the )?previous instructions|reviewer'?s note\b.{0,200}?no opinions",
    re.IGNORECASE | re.DOTALL,
)
_HIDDEN = re.compile("[\U000e0000-\U000e007f]+")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


@dataclass(frozen=True, slots=True)
class Tamper:
    """One finding: what kind, and the text it was found in (a short excerpt)."""

    kind: TamperKind
    excerpt: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "excerpt": self.excerpt}


def detect(text: str) -> tuple[Tamper, ...]:
    found: dict[TamperKind, str] = {}
    if match := _INSTRUCTION.search(text):
        found["instruction"] = match.group(0)[:120]
    if match := _HIDDEN.search(text):
        decoded = "".join(chr(ord(char) - 0xE0000) for char in match.group(0))
        found["hidden_text"] = "".join(char for char in decoded if char.isprintable())[:120]
    if match := _BIDI.search(text):
        found["bidi"] = text[max(0, match.start() - 20) : match.end() + 40][:120]
    return tuple(Tamper(kind, found[kind]) for kind in _KINDS if kind in found)
