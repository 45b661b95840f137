"""Combining marks that decorate Latin words, removed for the judge.

"C\\u0336o\\u0336n\\u0336s\\u0336" (struck through) and "zalgo" stacks of marks above
and below letters survive NFKC, and a judge may read them as noise where a person
reads the word. The text reaching this step is in NFKC, so a mark left after a
Latin letter is one that does not compose with it: a leftover. A Latin word (its
letters and the marks of the combining diacritical blocks after them) is
decorated when it carries a leftover that no orthography puts on a Latin letter:

- an overlay (U+0334..U+0338: tilde, short and long stroke, slashes), or
- two leftovers or more on one letter, or
- a leftover, while more than half of its letters (four at least) carry marks,
  composed or not ("W\\u00f3\\u1e43\\u00ebn\\u0335").

A decorated word loses all its marks. A single leftover on a few letters of a
word stays (Yoruba's "e\\u0323\\u0301" has no precomposed form); so does every
accent that composes (Vietnamese stacks, French, Czech), and every mark outside
Latin words: Devanagari, Thai, Arabic and Hebrew points, Korean.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["OVERLAY", "may_decorate", "strip_decoration"]

_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_LATIN = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff"
_LEFTOVER = re.compile(f"[{_LATIN}][{_MARKS}]")
_WORD = re.compile(f"(?:[{_LATIN}][{_MARKS}]*)+")
_STACK = re.compile(f"[{_MARKS}]{{2,}}")
OVERLAY = re.compile("[\u0334-\u0338]")
_MARK = re.compile(f"[{_MARKS}]")
_LETTER = re.compile(f"[{_LATIN}][{_MARKS}]*")


def _decorated(word: str) -> bool:
    if not _MARK.search(word):
        return False
    if OVERLAY.search(word) or _STACK.search(word):
        return True
    letters = _LETTER.findall(word)
    marked = sum(len(letter) > 1 or _composed(letter) for letter in letters)
    return len(letters) >= 4 and marked * 2 > len(letters)


def _composed(letter: str) -> bool:
    return len(unicodedata.normalize("NFD", letter)) > 1


def _plain(match: re.Match[str]) -> str:
    word = match.group()
    if not _decorated(word):
        return word
    return unicodedata.normalize("NFC", _MARK.sub("", unicodedata.normalize("NFD", word)))


def strip_decoration(text: str) -> str:
    """`text` (in NFKC) with the marks of its decorated Latin words removed; the same
    string when there are none.

    >>> strip_decoration("C\\u0336o\\u0336n\\u0336s\\u0336 ok")
    'Cons ok'
    """
    if not may_decorate(text):
        return text
    stripped = _WORD.sub(_plain, text)
    return text if stripped == text else stripped


def may_decorate(text: str) -> bool:
    """Whether `text` (in NFKC) has a mark left after a Latin letter (a quick look)."""
    # Most texts have no mark at all: a search for one alone is the quick part.
    return (
        not text.isascii() and _MARK.search(text) is not None and _LEFTOVER.search(text) is not None
    )
