"""The script a character is written in, from the Unicode Scripts data that
confusable-homoglyphs ships (its `categories` table)."""

from __future__ import annotations

from functools import cache, lru_cache

from confusable_homoglyphs import categories

__all__ = ["NEUTRAL", "mark_ranges", "script_of", "script_ranges"]

# Characters shared by every script (punctuation, digits) or taking their base's script
# (combining marks): they say nothing about which script a word is in.
NEUTRAL = frozenset({"COMMON", "INHERITED", "Unknown"})


@lru_cache(maxsize=8192)
def script_of(char: str) -> str:
    """The script's alias of one character: "LATIN", "CYRILLIC", "HAN", "COMMON"..."""
    return str(categories.alias(char))


@cache
def script_ranges() -> tuple[tuple[int, int, str], ...]:
    """(first, last, script) of each range of code points in the data, in order."""
    data = categories.categories_data
    names = data["iso_15924_aliases"]
    return tuple(
        (first, last, str(names[alias])) for first, last, alias, _ in data["code_points_ranges"]
    )


def mark_ranges() -> str:
    """The combining marks of the BMP as the inside of a pattern's class ("\\u0300-\\u036f...")."""
    data = categories.categories_data
    names = data["categories"]
    return "".join(
        f"{chr(first)}-{chr(last)}"
        for first, last, _, category in data["code_points_ranges"]
        if str(names[category]).startswith("M") and last <= 0xFFFF
    )
