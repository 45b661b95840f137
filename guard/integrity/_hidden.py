"""Invisible characters in judged text: removed, and hidden tag text brought into view.

A character no reader sees can still steer a model: zero-width spaces split a word so
a judge misses it, and Unicode tag characters (U+E0020..E007E, an invisible copy of
ASCII) carry whole sentences that a model reads and a reviewer never does. The judged
view drops them, except where they do visible work:

- the zero-width joiner between two emoji (👩‍💻, ❤️‍🔥, 🏳️‍🌈) and, with the
  zero-width non-joiner, between the letters of a script that shapes with them
  (Arabic, Persian, the Indic scripts);
- one variation selector right after the symbol, digit or ideograph it styles (❤️, the
  keycap 1️⃣, an ideographic variant); a second one, or one after a Latin letter, is
  a payload, not a style;
- the tag characters of a subdivision flag (🏴 then two to seven tag letters or digits,
  then CANCEL TAG: 🏴󠁧󠁢󠁳󠁣󠁴󠁿).

Other tag characters are decoded to the ASCII they shadow and put in their place,
spaced from the visible text, so the judge judges the hidden sentence too.

The set removed is Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt)
less the bidirectional controls (`guard.integrity._bidi` resolves those), plus the
interlinear annotation controls U+FFF9..FFFB (format characters a reader never sees).
"""

from __future__ import annotations

import re
import unicodedata

from guard.integrity._scripts import NEUTRAL, script_of

__all__ = ["may_hide", "reveal"]

_BMP_INVISIBLE = (
    "\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200d\u2060-\u2065"
    "\u206a-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb"
)
_ASTRAL_INVISIBLE = "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
_INVISIBLE_RUN = re.compile(f"[{_BMP_INVISIBLE}{_ASTRAL_INVISIBLE}]+")
# A quick look: a pattern with astral ranges is slow on every character, so those are
# looked for by the first bytes of their UTF-8 (U+1BCA0.., U+1D173.., U+E0000..E0FFF).
_BMP_FORMAT = re.compile(f"[{_BMP_INVISIBLE}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_ASTRAL_UTF8 = (b"\xf0\x9b\xb2", b"\xf0\x9d\x85", b"\xf3\xa0")

_ZWNJ, _ZWJ = "\u200c", "\u200d"
_BLACK_FLAG = "\U0001f3f4"
_CANCEL_TAG = "\U000e007f"
_TAG_OFFSET = 0xE0000
_FLAG_TAGS = re.compile("[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,7}\U000e007f")
_HIDDEN_ASCII = range(0xE0020, 0xE007F)


def _is_variation_selector(char: str) -> bool:
    code = ord(char)
    return (
        0xFE00 <= code <= 0xFE0F
        or 0xE0100 <= code <= 0xE01EF
        or (0x180B <= code <= 0x180F and code != 0x180E)
    )


def _is_tag(char: str) -> bool:
    return 0xE0000 <= ord(char) <= 0xE007F


# Scripts whose spelling never needs a joiner: there a joiner only hides a word.
_UNJOINED = frozenset({"LATIN", "GREEK", "CYRILLIC", "ARMENIAN", "CHEROKEE"}) | NEUTRAL


def _is_emoji(char: str) -> bool:
    # Emoji are symbols (So); the skin-tone modifiers that follow a base are Sk.
    return bool(char) and unicodedata.category(char) in ("So", "Sk")


def _shapes_with_joiners(char: str) -> bool:
    return (
        bool(char)
        and unicodedata.category(char)[0] in "LM"
        and not char.isascii()
        and script_of(char) not in _UNJOINED
    )


def _joins(joiner: str, before: str, after: str) -> bool:
    """Whether a joiner between `before` and `after` does visible work."""
    if joiner == _ZWJ and _is_emoji(before) and _is_emoji(after):
        return True
    return _shapes_with_joiners(before) and _shapes_with_joiners(after)


def _styles(base: str) -> bool:
    """Whether a variation selector right after `base` is a style a reader sees."""
    if not base:
        return False
    kind = unicodedata.category(base)[0]
    if kind not in "LM":
        return True  # emoji and other symbols, digits of a keycap
    return kind == "L" and script_of(base) in ("HAN", "MONGOLIAN")


def _spaced(hidden: str, before: str, after: str) -> str:
    if not hidden:
        return ""
    head = "" if not before or before.isspace() else " "
    tail = "" if not after or after.isspace() else " "
    return f"{head}{hidden}{tail}"


def _kept(run: str, before: str, after: str) -> str:
    """What stays of one run of invisible characters between `before` and `after`."""
    kept: list[str] = []
    hidden: list[str] = []
    index = 0
    if before == _BLACK_FLAG and (flag := _FLAG_TAGS.match(run)):
        kept.append(flag.group())
        index = flag.end()
    while index < len(run):
        char = run[index]
        if _is_tag(char):
            if ord(char) in _HIDDEN_ASCII:
                hidden.append(chr(ord(char) - _TAG_OFFSET))
        elif _is_variation_selector(char):
            if index == 0 and _styles(before):
                kept.append(char)
        elif (char == _ZWJ and _is_emoji(before) and _is_emoji(after)) or (
            char in (_ZWJ, _ZWNJ) and _shapes_with_joiners(before) and _shapes_with_joiners(after)
        ):
            kept.append(char)
        index += 1
    if hidden:  # the hidden text now stands between what a joiner would join
        kept = [char for char in kept if char not in (_ZWJ, _ZWNJ)]
    return "".join(kept) + _spaced("".join(hidden), before, after)


def may_hide(text: str) -> bool:
    """Whether `text` may hold an invisible or bidirectional control character (a quick
    look: never false when it does)."""
    if text.isascii():
        return False
    if _BMP_FORMAT.search(text):
        return True
    data = text.encode("utf-8", "surrogatepass")
    return any(prefix in data for prefix in _ASTRAL_UTF8)


def reveal(text: str) -> str:
    """`text` without its invisible characters, hidden tag text decoded in their place.

    >>> reveal("Wo\\u200bmen")
    'Women'
    >>> reveal("👩\\u200d💻")
    '👩\\u200d💻'
    """
    if not may_hide(text) or _INVISIBLE_RUN.search(text) is None:
        return text
    pieces: list[str] = []
    last = 0
    for match in _INVISIBLE_RUN.finditer(text):
        start, end = match.span()
        before = text[start - 1] if start else ""
        after = text[end] if end < len(text) else ""
        pieces += [text[last:start], _kept(match.group(), before, after)]
        last = end
    pieces.append(text[last:])
    revealed = "".join(pieces)
    return text if revealed == text else revealed
