"""The judged view: what a judge reads of an answer, which is what a person would see.

The client always gets the upstream's bytes; the judge reads a view of them in which
the tricks that hide text from a judge, or show it a different text than a reader,
are undone. `judged_view` applies, in this order:

1. NFKC (`"nfkc"`): fullwidth and mathematical letters (U+FF37, U+1D416) and other
   compatibility forms become the letters they show.
2. Bidirectional controls resolved (`"bidi"`): the text in the order a reader sees
   it, without overrides, embeddings, isolates or marks (`guard.integrity._bidi`).
3. Invisible characters removed (`"invisible"`), except inside emoji sequences and
   the scripts that shape with joiners; hidden tag text decoded in its place
   (`guard.integrity._hidden`).
   Combining marks that decorate Latin words (strikethrough, stacks of marks) removed
   (`"marks"`; `guard.integrity._marks`); accents that compose and the marks of
   scripts that need them stay.
4. Base64, base32, base85, hex (also "0x41 0x73 ...", a hex dump, CSS escapes),
   percent-escaped runs and HTML character references that decode to readable text
   replaced by it (`"base64"`, `"base32"`, `"base85"`, `"hex"`, `"percent"`, `"html"`;
   `guard.integrity._encoded`), one level deep; steps
   1..3 then read the decoded text too. Markdown comments (`[//]: # (...)`), which a
   rendered page does not show, read as the text they hold (`"comments"`).
   Clauses in ROT13 or ROT47, in the alphabet's numbers (A1Z26) or written backwards
   that read as text once deciphered, read as that text (`"rot13"`, `"rot47"`,
   `"a1z26"`, `"reversed"`; `guard.integrity._ciphers`).
5. Letters spelled out one by one joined (`"spacing"`; letters kept apart by narrow
   spaces are joined before step 1, which would make those spaces ordinary),
   look-alike letters folded to the script of their word, and small capitals and
   phonetic letters that stand in for ASCII ones read as those (`"confusables"`;
   `guard.integrity._lookalikes`), digits and signs inside words read as letters
   (`"digits"`; `guard.integrity._spelling`).

NFKC runs again after the steps that remove or replace characters, since a removed
character may have kept a letter and its mark apart.
`JudgedView.applied` names the steps that changed the text, in `NORMALISATIONS`'
order. Ordinary text comes back as the same string with nothing applied; ASCII text
skips the character steps, which cannot change it.

    >>> judged_view("\\uff37\\uff4fmen are 1azy")
    JudgedView(text='Women are lazy', applied=('nfkc', 'digits'))
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

from guard.integrity._bidi import resolve
from guard.integrity._ciphers import decipher
from guard.integrity._encoded import decode_runs
from guard.integrity._hidden import may_hide, reveal
from guard.integrity._lookalikes import fold
from guard.integrity._marks import may_decorate, strip_decoration
from guard.integrity._spelling import fold_digits, join_narrow_spaced, join_spaced

__all__ = ["NORMALISATIONS", "JudgedView", "Normalisation", "judged_view", "nfkc"]

Normalisation = Literal[
    "nfkc",
    "invisible",
    "bidi",
    "marks",
    "confusables",
    "digits",
    "spacing",
    "base64",
    "base32",
    "base85",
    "hex",
    "percent",
    "comments",
    "html",
    "binary",
    "morse",
    "rot13",
    "rot47",
    "a1z26",
    "reversed",
]
NORMALISATIONS: tuple[Normalisation, ...] = get_args(Normalisation)


@dataclass(frozen=True, slots=True)
class JudgedView:
    """The text a judge reads, and the normalisations that made it (`Normalisation`s)."""

    text: str
    applied: tuple[str, ...]


def nfkc(text: str) -> str:
    """`text` in NFKC, line by line: a line break neither composes nor reorders with what
    is around it, and most lines of a text that needs NFKC are in it already.

    >>> nfkc("\\uff37omen\\nare")
    'Women\\nare'
    """
    if unicodedata.is_normalized("NFKC", text):
        return text
    return "\n".join(
        line if unicodedata.is_normalized("NFKC", line) else unicodedata.normalize("NFKC", line)
        for line in text.split("\n")
    )


_Step = tuple[Normalisation, Callable[[str], str]]
_CHARACTER_STEPS: tuple[_Step, ...] = (
    ("nfkc", nfkc),
    ("bidi", resolve),
    ("invisible", reveal),
    ("marks", strip_decoration),
)
# A fold can make a new word for another ("W 0 m e n" -> "W0men" -> "Women"): the word
# steps run again while they change something, a few rounds at most.
_WORD_ROUNDS = 4
_REVEAL_STEPS = (_CHARACTER_STEPS[0], *_CHARACTER_STEPS[2:])
_WORD_STEPS: tuple[_Step, ...] = (
    ("spacing", join_spaced),
    ("confusables", fold),
    ("digits", fold_digits),
)


def _characters(text: str, applied: set[Normalisation]) -> str:
    if text.isascii() or (
        unicodedata.is_normalized("NFKC", text) and not may_hide(text) and not may_decorate(text)
    ):
        return text
    # Before NFKC, which makes a narrow space between spelled-out letters an ordinary one.
    if (joined := join_narrow_spaced(text)) is not text:
        applied.add("spacing")
        text = joined
    revealed = _run(_CHARACTER_STEPS, text, applied)
    # A removed character may have kept a letter and its mark apart.
    return _run(_CHARACTER_STEPS[:1], revealed, applied)


def _run(steps: tuple[_Step, ...], text: str, applied: set[Normalisation]) -> str:
    for name, step in steps:
        changed = step(text)
        if changed is not text:
            applied.add(name)
            text = changed
    return text


# A markdown comment: a link reference to "#" or "<>" whose title a page never shows.
_MARKDOWN_COMMENT = re.compile(
    r"^[ \t]*\[(?://|comment|_|#)\]:[ \t]*(?:#|<>)[ \t]*"
    r"(?:\((?P<paren>.*)\)|\"(?P<quote>.*)\")[ \t]*$",
    re.MULTILINE,
)


def _comment_text(match: re.Match[str]) -> str:
    return match.group("paren") if match.group("paren") is not None else match.group("quote")


def judged_view(text: str) -> JudgedView:
    """What a judge should read of `text` (see the module's docstring)."""
    applied: set[Normalisation] = set()
    view = _characters(text, applied)
    if "]:" in view and (shown := _MARKDOWN_COMMENT.sub(_comment_text, view)) != view:
        applied.add("comments")
        view = shown
    decoded, encodings = decode_runs(view)
    if encodings:
        applied |= encodings
        view = _characters(decoded, applied)
    deciphered, ciphers = decipher(view)
    if ciphers:
        applied |= ciphers
        view = deciphered
    for _ in range(_WORD_ROUNDS):
        folded = _run(_WORD_STEPS, view, applied)
        if folded is view:
            break
        # A folded letter may leave a mark or selector that only an emoji could keep
        # ("0\ufe0f" is one; "O\ufe0f" is not), and its going may join two words.
        view = _run(_REVEAL_STEPS, folded, applied)
    if not applied:
        return JudgedView(text, ())
    view = _run(_CHARACTER_STEPS[:1], view, applied)
    return JudgedView(view, tuple(name for name in NORMALISATIONS if name in applied))
