"""PLACEHOLDER for the judged view (issue #30, item 3): NFKC, and Unicode tag characters
decoded into the view. The real module replaces this one at merge."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

__all__ = ["JudgedView", "judged_view"]

_TAG_FIRST, _TAG_LAST = 0xE0000, 0xE007F


@dataclass(frozen=True, slots=True)
class JudgedView:
    """The text the judge reads, and the names of the steps that changed it."""

    text: str
    applied: tuple[str, ...]


def judged_view(text: str) -> JudgedView:
    applied: list[str] = []
    folded = unicodedata.normalize("NFKC", text)
    if folded != text:
        applied.append("nfkc")
    shown = "".join(_shown(char) for char in folded)
    if shown != folded:
        applied.append("invisible")
    return JudgedView(shown, tuple(applied))


def _shown(char: str) -> str:
    point = ord(char)
    if not _TAG_FIRST <= point <= _TAG_LAST:
        return char
    # A tag character carries the ASCII character 0xE0000 below it; the others are controls.
    inner = point - _TAG_FIRST
    return chr(inner) if 0x20 <= inner <= 0x7E else ""
