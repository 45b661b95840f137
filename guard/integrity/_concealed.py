"""Characters that hide text from a reader: the tamper detector's `hidden_text` and
`bidi` findings (`guard.integrity.tamper`).

- hidden text: tag characters, runs of zero-width characters or variation selectors
  (a run encodes bits), a zero-width character between two letters of the scripts
  that never need one, soft hyphens after single letters; the tag characters of a
  subdivision flag (🏴 then its tag letters) are an emoji's, and stay;
- bidirectional controls in text that is not right-to-left at all, and in
  right-to-left text an override that reverses Latin letters and nothing else.
"""

from __future__ import annotations

import re

__all__ = ["bidi", "hidden"]


def _first(patterns: tuple[re.Pattern[str], ...], text: str) -> re.Match[str] | None:
    found = [match for pattern in patterns if (match := pattern.search(text))]
    return min(found, key=lambda match: match.start()) if found else None


# -- hidden characters ---------------------------------------------------------------

# A subdivision flag: the black flag, tag letters or digits, the cancel tag.
_FLAG = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,8}\U000e007f")
_TAG = re.compile("[\U000e0001\U000e0020-\U000e007f]")
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
# Two or more invisible characters in a row: one hides nothing, a run encodes bits. (Each
# pattern opens with a class, which the regex engine skips ahead to.)
_ZERO_WIDTH_RUN = re.compile(f"[{_ZERO_WIDTH}][{_ZERO_WIDTH}]+")
_SELECTOR_RUN = re.compile(
    "[\ufe00-\ufe0f\U000e0100-\U000e01ef][\ufe00-\ufe0f\U000e0100-\U000e01ef]+"
)
# A zero-width character between two letters of the scripts that never need one.
_LETTERS = "A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff"
_ZERO_WIDTH_IN_WORD = re.compile(f"[{_ZERO_WIDTH}](?<=[{_LETTERS}].)(?=[{_LETTERS}])")
# Soft hyphens after single letters, three in a row ("W\u00adr\u00ado\u00adn\u00adg"): a
# hyphenation hint sits between syllables, never after every letter.
_SOFT_HYPHEN_LETTERS = re.compile(f"\u00ad(?<=[{_LETTERS}]\u00ad)(?:[{_LETTERS}\\s]\u00ad){{2,}}")
_ANY_HIDDEN = re.compile(
    f"[{_ZERO_WIDTH}\u00ad\ufe00-\ufe0f\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef]"
)


def hidden(text: str) -> re.Match[str] | None:
    if not _ANY_HIDDEN.search(text):
        return None
    without_flags = _FLAG.sub(lambda match: "\u2063" * len(match.group()), text)
    return _first(
        (_TAG, _ZERO_WIDTH_RUN, _SELECTOR_RUN, _ZERO_WIDTH_IN_WORD, _SOFT_HYPHEN_LETTERS),
        without_flags,
    )


# -- bidirectional controls ------------------------------------------------------------

_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_RIGHT_TO_LEFT = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
# An override, then what it reorders up to its pop or the line's end.
_OVERRIDE = re.compile("[\u202d\u202e][^\u202c\n]*")


def bidi(text: str) -> re.Match[str] | None:
    control = _BIDI.search(text)
    if control is None or not _RIGHT_TO_LEFT.search(text):
        return control
    # In right-to-left text, embeddings and isolates are how numbers and Latin words
    # are laid out; an override that reverses Latin letters and nothing else is not.
    for override in _OVERRIDE.finditer(text):
        scope = override.group()
        if re.search("[A-Za-z]", scope) and not _RIGHT_TO_LEFT.search(scope):
            return override
    return None
