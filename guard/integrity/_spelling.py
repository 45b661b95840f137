"""Words spelled to slip past a reader's filter: "W0men", "1azy", "W o m e n".

Two folds, each with rules that leave ordinary text as it is:

`join_spaced` joins letters spelled out one by one: a run of at least four single
letters separated by single spaces ("W o m e n"), or all by one of `.`, `-`, `_`,
`*` ("W.o.m.e.n"), becomes one word; in a spaced phrase, runs set apart by two or
more spaces become words set apart by one ("W o m e n  a r e  l a z y" -> "Women
are lazy"). The digits and signs that stand for letters may sit among the letters
("W 0 m e n") as long as letters are the most. Kept: shorter runs ("x y z", "U.S.A."),
runs that spell the alphabet in order ("a b c d", "A B C D E").

`fold_digits` reads the digits and signs that stand for letters inside a word: 0 o,
1 i or l, 3 e, 4 a, 5 s, 7 t, @ a, $ s ("W0men" -> "Women", "1azy" -> "lazy",
"$tupid" -> "stupid"). A word is a run of ASCII letters, digits, @ and $ that is not
part of a path, address, identifier or number ("file.mp3", "a-1", "x_1", "v1.2"), and
it is read only when it has at least three letters, every other character stands for
a letter, and it is not:

- a number with a unit or suffix: two or more leading digits ("10km", "100mph"),
  trailing digits are not read ("win10", "covid19", "python3", "mp3"), except one
  after a word already spelled with signs inside it ("cr1m1nal5" -> "criminals",
  "M3x1c0" -> "Mexico": a name does not hide its letters and then add a version);
- a name with other digits ("B2B", "i18n", "k8s", "x86", "h264");
- a mention ("@all") or a ticker ("$AAPL");
- hex of eight characters or more ("deadbe3f", a hash), or a hex literal ("0xff");
- a chemical formula ("CH3OH", "NH4Cl": capitals with lower-case letters after them,
  digits 2..9). So "W0MEN" is read, "L4ZY" is not.

On a line at least half of whose words, three or more, are written with signs, the writer
writes in them: there short words ("4r3", "4nd") and words that open with signs
("57up1d") are read too.

"1" is "l" at the start before a vowel ("1azy"), after a vowel before a consonant
("a1ways") and after an "l" ("fa11s"); elsewhere it is "i" ("emot1onal",
"st1ll", "1nferior"). It is a guess that reads most such words right, not all ("b1ack").
Names spelled with such digits are read too ("log4j" -> "logaj"): the judge still
understands them, and it is the price of reading "l4zy".
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from guard.integrity._shape import LETTERS, shape, table

__all__ = ["fold_digits", "join_narrow_spaced", "join_spaced"]

_STANDS_FOR = {"0": "o", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"}
# What a "1" next to a "1" is taken for when reading the first ("wa11").
_STANDS_FOR_NEXT = {**_STANDS_FOR, "1": "l"}
_VOWELS = frozenset("aeiouy")

_CHAR = r"(?:[^\W\d_]|[013457@$])"
_SPACED_PHRASE = re.compile(
    rf"(?<![\w@$]){_CHAR}(?: {_CHAR})+(?:(?: {{2,}}|\t+){_CHAR}(?: {_CHAR})*)*(?![\w@$])"
)
_SEPARATED_RUN = re.compile(
    rf"(?<![\w@$.*-]){_CHAR}([.\-_*]){_CHAR}(?:\1{_CHAR}){{2,}}\1?(?![\w@$])"
)
# Quick looks (`guard.integrity._shape`): two single characters in a row, spaced or
# separated, where a spelled-out word may be; a sign beside a letter.
_SPELLING_SHAPE = table("#", {"a": f"{LETTERS}0123456789@$?", " ": " ", ".": ".-_*"})
_SIGNS_SHAPE = table(" ", {"a": LETTERS, "1": "013457@$", "2": "2689"})
_RUN_GAP = re.compile(r" {2,}|\t+")

# Neighbours that make a word part of a path, address, identifier, number or code.
_JOINED_BEFORE = frozenset("./\\:=#%&+~`-_")
_JOINED_AFTER = frozenset("/\\=#%&+~`-_")
_HEX = re.compile(r"[0-9A-Fa-f]{8,}")
_HEX_LITERAL = re.compile(r"0[xX][0-9A-Fa-f]+")  # "0xff", a number in code
_LETTERS_AND_SIGNS = re.compile(r"[A-Za-z013457@$]+")
_FORMULA = re.compile(r"(?:[A-Z][a-z]?[2-9]*)+")


def _is_alphabet(letters: str) -> bool:
    codes = [ord(char.lower()) for char in letters]
    return all(later == earlier + 1 for earlier, later in itertools.pairwise(codes))


def _joined_run(chars: list[str]) -> str | None:
    """`chars` as one word, or None when they are not a word spelled out."""
    letters = [char for char in chars if char.isalpha()]
    if len(chars) < 4 or len(letters) <= len(chars) - len(letters) or _is_alphabet("".join(chars)):
        return None
    return "".join(chars)


def _join_phrase(match: re.Match[str]) -> str:
    runs = [run.split(" ") for run in _RUN_GAP.split(match.group())]
    if not any(_joined_run(run) for run in runs):
        return match.group()
    if sum(char.isalpha() for run in runs for char in run) < 4:
        return match.group()
    return " ".join("".join(run) for run in runs)


def _join_separated(match: re.Match[str]) -> str:
    separator = match.group(1)
    chars = match.group().rstrip(separator).split(separator)
    joined = _joined_run(chars)
    if joined is None:
        return match.group()
    return joined + separator if match.group().endswith(separator) else joined


def join_spaced(text: str) -> str:
    """`text` with letters spelled out one by one joined into words.

    >>> join_spaced("W o m e n  a r e  l a z y.")
    'Women are lazy.'
    """
    joined = text
    spelling = shape(text, _SPELLING_SHAPE)
    if b" a a " in spelling:
        joined = _SPACED_PHRASE.sub(_join_phrase, joined)
    if b".a.a." in spelling:
        joined = _SEPARATED_RUN.sub(_join_separated, joined)
    return text if joined == text else joined


# Spaces narrower than a word's: six-per-em, thin, hair, narrow no-break, medium
# mathematical. Two or more letters kept apart by them, one by one, are a word spelled
# out where ordinary spaces part the words ("I m m i g r a n t s  s t e a l"); NFKC
# would make every gap one space, and the words would run together.
_NARROW = "\u2006\u2009\u200a\u202f\u205f"
_NARROW_SPACED = re.compile(f"(?<![^\\W\\d_])[^\\W\\d_](?:[{_NARROW}][^\\W\\d_])+(?![^\\W\\d_])")
_NARROW_GAP = re.compile(f"[{_NARROW}]")


def join_narrow_spaced(text: str) -> str:
    """`text` with the letters of words spelled out with narrow spaces joined (before
    NFKC reads those spaces as ordinary ones).

    >>> join_narrow_spaced("W\u200ao\u200am\u200ae\u200an a\u200ar\u200ae lazy, 10\u202fkm")
    'Women are lazy, 10\u202fkm'
    """
    if not any(gap in text for gap in _NARROW):
        return text
    joined = _NARROW_SPACED.sub(lambda match: _NARROW_GAP.sub("", match.group()), text)
    return text if joined == text else joined


def _one(before: str, after: str, doubled: bool = True) -> str:
    """The letter a "1" stands for, from its neighbours (read so far, lower case);
    `doubled`: whether the letter before was a "1" too ("fa11s")."""
    if (before == "l" and doubled) or (not before and after in _VOWELS):
        return "l"
    return "l" if before in _VOWELS and after not in _VOWELS else "i"


def _read(word: str, dense: bool = False) -> str:
    """`word` with the signs inside it read as letters, or `word` when the rules say no;
    `dense`: on a line written in signs, short words and leading and trailing signs too."""
    if (
        _HEX.fullmatch(word)
        or _HEX_LITERAL.fullmatch(word)
        or not _LETTERS_AND_SIGNS.fullmatch(word)
    ):
        return word
    if (
        sum(map(str.isalpha, word)) < (1 if dense else 3)
        or word[0] == "@"
        or (word[0] == "$" and not word[1:2].islower())
    ):
        return word
    if _FORMULA.fullmatch(word) and "0" not in word and "1" not in word:
        return word
    if dense:
        return "".join(_letters(word, len(word)))
    first = next(i for i, char in enumerate(word) if char.isalpha())
    last = max(i for i, char in enumerate(word) if char.isalpha())
    if first > 1:
        return word
    spelled = any(not char.isalpha() for char in word[first:last])
    if spelled and len(word) - last == 2 and word[-1] in _STANDS_FOR_NEXT:
        last += 1  # one sign after a word spelled with signs inside it: read it too
    return "".join(_letters(word, last + 1)) + word[last + 1 :]


def _letters(word: str, end: int) -> Iterator[str]:
    """The first `end` characters of `word`, each sign read as the letter it stands for
    (in capitals when the word's letters are)."""
    shouting = all(char.isupper() for char in word if char.isalpha())
    read = ""
    for index, char in enumerate(word[:end]):
        if not char.isalpha():
            following = word[index + 1 : index + 2]
            after = _STANDS_FOR_NEXT.get(following, following).lower()
            doubled = index > 0 and word[index - 1] == "1"
            char = _one(read.lower(), after, doubled) if char == "1" else _STANDS_FOR[char]
            char = char.upper() if shouting else char
        read = char
        yield char


def _stands_alone(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    beyond = text[end + 1] if end + 1 < len(text) else " "
    return not (
        before.isalnum()
        or before in _JOINED_BEFORE
        or after.isalnum()
        or after in _JOINED_AFTER
        or (after in ".:" and (beyond.isalnum() or beyond == "_"))
    )


# A line mostly of words written with signs, three or more ("W0m3n 4r3 57up1d 4nd w34k"),
# is written in them: its short words and leading signs are read too. Words that only
# end or start with a number (mp3, 5G, 1st) or are all capitals (W3C) do not count.
_DENSE = 3
_NOT_SIGNS = re.compile(r"[A-Za-z]+\d+|\d+[A-Za-z]+|[A-Z\d]{1,4}|\d+x\d+")


def _dense_lines(text: str, words: list[tuple[int, int]]) -> frozenset[int]:
    """The numbers of the lines at least half of whose words, and `_DENSE` or more, are
    written with signs."""
    if len(words) < _DENSE:
        return frozenset()
    lines = [
        text.count("\n", 0, start)
        for start, end in words
        if _LETTERS_AND_SIGNS.fullmatch(text[start:end])
        and not _NOT_SIGNS.fullmatch(text[start:end])
    ]
    dense = set()
    if lines:
        all_lines = text.split("\n")
        for line in set(lines):
            if lines.count(line) >= _DENSE and lines.count(line) * 2 >= len(
                all_lines[line].split()
            ):
                dense.add(line)
    return frozenset(dense)


def _words_with_signs(signs: bytes) -> Iterator[tuple[int, int]]:
    """Where the words with a sign beside a letter are, from the text's `_SIGNS_SHAPE`."""
    end = 0
    while True:
        hits = [at for at in (signs.find(b"a1", end), signs.find(b"1a", end)) if at >= 0]
        if not hits:
            return
        start = signs.rfind(b" ", 0, min(hits)) + 1
        end = signs.find(b" ", min(hits))
        end = len(signs) if end < 0 else end
        yield start, end


def fold_digits(text: str) -> str:
    """`text` with the digits and signs that stand for letters inside words read as letters.

    >>> fold_digits("W0men are 1azy, says v1.2 of the 10km report")
    'Women are lazy, says v1.2 of the 10km report'
    """
    pieces: list[str] = []
    last = 0
    words = [
        (start, end)
        for start, end in _words_with_signs(shape(text, _SIGNS_SHAPE))
        if _stands_alone(text, start, end)
    ]
    dense = _dense_lines(text, words)
    for start, end in words:
        word = text[start:end]
        line = text.count("\n", 0, start) if dense else 0
        if (read := _read(word, line in dense)) != word:
            pieces += [text[last:start], read]
            last = end
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)
