"""A phrase pattern split by the word it starts with, so each part is searched only when
that word is in the text.

Most phrase patterns open with an alternation of words (`(?:ignore|disregard|...)`).
The regex engine tries such an alternation at nearly every letter of a text, which is
what a search costs; a pattern that opens with a literal word is found by a quick scan
for that word instead. `Leads(pattern)` expands the opening alternations into
alternatives, each opening with a literal, and groups them by the word's first four
letters (its key, as the detector's gates read words). `Leads.search(present, text)`
runs only the groups whose key is in `present`, and the alternatives it could not key
(a class or a group up front, a short literal that may run on into a longer word)
always. The leftmost match wins, as with the pattern's own search.

A keyed alternative is looked for where a word starts with its key: a phrase that
starts inside a longer word is not one.

    >>> leads = Leads(r"(?:ignore|forget)\\W+(?:all|the)\\W+rules")
    >>> sorted(leads.keys)
    ['forg', 'igno']
    >>> leads.search({"igno", "all", "rule"}, "ignore all rules").group()
    'ignore all rules'
    >>> leads.search({"all"}, "ignore all rules") is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["KEY_CHARS", "Leads"]

KEY_CHARS = 4
# Expanding nested alternations multiplies them; a pattern past this stays whole.
_MAX_ALTERNATIVES = 400
_QUANTIFIERS = "?*+{"
# What may follow a short literal so that the literal is a whole word.
_WORD_ENDS = (r"\W", r"\b", r"\s", r"(?:\W", r"(?:\s", ":", " ", r"[ \t]")


def _skip(source: str, at: int) -> int:
    """The index after the token at `at`: an escape, a character class or one character."""
    if source[at] == "\\":
        return at + 2
    if source[at] == "[":
        end = at + 1
        if end < len(source) and source[end] == "^":
            end += 1
        if end < len(source) and source[end] == "]":
            end += 1
        while source[end] != "]":
            end = end + 2 if source[end] == "\\" else end + 1
        return end + 1
    return at + 1


def _top_level(source: str) -> tuple[list[str], int]:
    """`source` split at its top-level `|`, and where its first group closes (or -1)."""
    parts: list[str] = []
    depth, start, at, first_close = 0, 0, 0, -1
    while at < len(source):
        char = source[at]
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0 and first_close < 0:
                first_close = at
        elif char == "|" and depth == 0:
            parts.append(source[start:at])
            start = at + 1
        at = _skip(source, at)
    parts.append(source[start:])
    return parts, first_close


def _expanded(source: str) -> list[str]:
    """`source`'s alternatives, with each opening `(?:a|b)` spread into its own."""
    parts, close = _top_level(source)
    if len(parts) > 1:
        return [alternative for part in parts for alternative in _expanded(part)]
    if not source.startswith("(?:") or close < 0:
        return [source]
    rest = source[close + 1 :]
    if rest[:1] and rest[0] in _QUANTIFIERS:
        return [source]
    inner, _ = _top_level(source[3:close])
    return [alternative for part in inner for alternative in _expanded(part + rest)]


def _spread(alternative: str) -> list[str]:
    """The alternative with a small class after its opening word spread: `car[oa]` ->
    `caro`, `cara`."""
    word, rest = _literal(alternative)
    simple = re.match(r"\[([^\]\\^-]{1,3})\](?![?*+{])", rest)
    if simple is None or len(word) >= KEY_CHARS:
        return [alternative]
    tail = rest[simple.end() :]
    return [spread for char in simple.group(1) for spread in _spread(word + char + tail)]


def _literal(source: str) -> tuple[str, str]:
    """The literal word `source` opens with (letters and digits), and what follows it."""
    at = 0
    while at < len(source) and source[at].isalnum():
        at += 1
    if at < len(source) and source[at] in _QUANTIFIERS:
        at -= 1  # the last letter is optional ("reviewers?")
    return source[:at], source[at:]


def _keyed(alternative: str) -> tuple[str | None, str]:
    """The alternative's key and the alternative to search for, or None and as it was.

    A leading `\\b` moves behind the word, so that the word is the literal the
    engine scans for: `\\bverdict` becomes `verdict(?<!\\wverdict)`.
    """
    bounded = alternative.startswith(r"\b")
    word, rest = _literal(alternative[2:] if bounded else alternative)
    if len(word) < KEY_CHARS and not rest.startswith(_WORD_ENDS):
        return None, alternative
    if not word:
        return None, alternative
    if bounded:
        return word[:KEY_CHARS], rf"{word}(?<!\w{word}){rest}"
    return word[:KEY_CHARS], alternative


class Leads:
    """A phrase pattern split into parts keyed by the word they start with."""

    __slots__ = ("_compiled", "_flags", "_sources", "keys")

    def __init__(self, pattern: str, flags: int = re.MULTILINE) -> None:
        alternatives = [spread for part in _expanded(pattern) for spread in _spread(part)]
        if len(alternatives) > _MAX_ALTERNATIVES:
            alternatives = [pattern]
        by_key: dict[str | None, list[str]] = {}
        for alternative in alternatives:
            key, source = _keyed(alternative)
            by_key.setdefault(key, []).append(source)
        self._sources = {key: "|".join(parts) for key, parts in by_key.items()}
        self._flags = flags
        # Compiled on first use: a text holds few of the keys, and importing stays quick.
        self._compiled: dict[str | None, re.Pattern[str]] = {}
        self.keys = frozenset(key for key in by_key if key is not None)

    def _pattern(self, key: str | None) -> re.Pattern[str]:
        pattern = self._compiled[key] = re.compile(self._sources[key], self._flags)
        return pattern

    def finditer(self, present: set[str] | frozenset[str], text: str) -> Iterator[re.Match[str]]:
        """Every match in `text` of the parts whose key is present, part by part (so not
        in the text's order)."""
        keys: list[str | None] = [*(self.keys & present)]
        if None in self._sources:
            keys.append(None)
        for key in keys:
            yield from (self._compiled.get(key) or self._pattern(key)).finditer(text)

    def search(self, present: set[str] | frozenset[str], text: str) -> re.Match[str] | None:
        """The leftmost match in `text`, looking only for the parts whose key is present."""
        keys: list[str | None] = [*(self.keys & present)]
        if None in self._sources:
            keys.append(None)
        best = None
        for key in keys:
            pattern = self._compiled.get(key) or self._pattern(key)
            match = pattern.search(text)
            if match is not None and (best is None or match.start() < best.start()):
                best = match
        return best
