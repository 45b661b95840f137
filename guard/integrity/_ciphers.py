"""Letter ciphers a model reads at a glance: ROT13, ROT47, the alphabet's numbers
(A1Z26) and words written backwards.

"Jbzra ner gbb rzbgvbany gb yrnq." is noise to a judge that reads what it is shown,
and a sentence to the model that wrote it or to an agent told to decode it. Unlike
base64 (`guard.integrity._encoded`), these ciphers have no alphabet of their own, so
a run is not found by its shape: it is found by what it says once deciphered. A
stretch of text is read as a cipher when its deciphered words hold the short words
every sentence of a European language is made of ("the", "are", "to", "que", "und"
…; `_FUNCTION_WORDS`), at least one in `_SHARE` of them, and the stretch as written
holds few:

- ROT13 and words written backwards, a clause at a time (the stops and commas
  between clauses are the same after either): "nemoW era oot lanoitome" is read
  word by word, and a clause whose first letter is a capital ending its last word
  (".dael ot lanoitome oot era nemoW") as the whole clause reversed;
- ROT47, a word at a time: a word that reads as letters after ROT47 and does not
  before ("(@>6?" is "Women"), in runs of at least `_FEWEST` such words;
- A1Z26, runs of at least `_FEWEST` words of numbers 1 to 26 joined by hyphens
  ("23-15-13-5-14 1-18-5 …").

Each cipher is first looked for by its deciphered short words as written (ROT13's
"gur", "naq"; backwards "eht", "dna"; ROT47's "E96", "2C6"; a word of A1Z26): a text
that holds none costs one split into words.

>>> decipher("Translated: Jbzra ner gbb rzbgvbany gb yrnq.")
('Translated: Women are too emotional to lead.', frozenset({'rot13'}))
>>> decipher("The report is due on Friday.")
('The report is due on Friday.', frozenset())
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Literal

__all__ = ["Cipher", "decipher"]

Cipher = Literal["rot13", "rot47", "a1z26", "reversed"]

# The commonest short words of English, Spanish, French, German, Italian and
# Portuguese (our own list): articles, conjunctions, prepositions, pronouns and the
# forms of "to be". Short words that are one language's word written backwards or
# in ROT13 in another ("si" and "is", "te" and "et") are in it, so that a text in
# either language reads as written.
_FUNCTION_WORDS_BY_LANGUAGE = """
    the a an and or but are is was were be been not no to of in on at for with by from
    as that this these those they them their it its he she his her we our you your all
    than so should can will have has had who which
    el la los las de del que y en es son un una por para con su sus se lo al muy si te
    me mi tu ti ni ya más mas
    le les des et est sont une pour pas ne du dans qui ce au aux je il elle nous vous ou
    der die das und ist sind nicht zu ein eine mit sie den von auf dem nur ich du er wir
    auch oder aber wie im
    il di che sono non per gli nel della io ho ha
    o os as um uma com não são eu ele ela na da do em
"""
_FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_BY_LANGUAGE.split())
# At least this share of a deciphered stretch's words are function words.
_SHARE = 0.2
# At least this many words make a stretch worth deciphering.
_FEWEST = 3

_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)
_ROT47 = str.maketrans(
    "".join(chr(code) for code in range(33, 127)),
    "".join(chr(33 + (code - 33 + 47) % 94) for code in range(33, 127)),
)


# Function words frequent in prose and rare as other words once ciphered: a text that
# holds none of them ciphered is not read further.
_HINT_WORDS = (
    *("the", "and", "are", "that", "with", "para", "las", "son", "por", "que", "une", "pour"),
    *("est", "les", "und", "ist", "sind", "nicht", "der", "sono", "della", "não", "to", "of"),
    "is",
)
# What may stand around a word: `str.strip`'s argument.
_AROUND = "\"'()[]{}.,;:!?\u00ab\u00bb\u201c\u201d\u2018\u2019\u00bf\u00a1"


def _as_written(words: Iterable[str]) -> frozenset[str]:
    """`words` as a text's split may hold them: in small letters, capitalised or in
    capitals, perhaps after a bracket or quote, perhaps before a stop or comma."""
    return frozenset(
        f"{before}{cased}{after}"
        for word in words
        for cased in (word, word.capitalize(), word.upper())
        for before in ("", "(", '"')
        for after in ("", ".", ",", ";", ":", "!", "?", ")", '"')
    )


_ROT13_HINTS = _as_written(word.translate(_ROT13) for word in _HINT_WORDS)
# "non" reads the same backwards, and "red" is a word of its own.
_REVERSED_HINTS = _as_written(word[::-1] for word in _HINT_WORDS if word not in ("der", "non"))
_ROT47_HINTS = frozenset(word.translate(_ROT47) for word in _HINT_WORDS)


def _plain_words(written: set[str]) -> set[str]:
    """A text's distinct words without what stands around them, in small letters."""
    return {word.strip(_AROUND).lower() for word in written}


_WORD = re.compile(r"[^\W\d_]+")
# Where a clause ends: a stop, a comma, a colon or a line break.
_CLAUSE_END = re.compile(r"[.!?,;:\n]")
# Where a clause written backwards ends: its stops and commas come before a word, not
# after, so only those before a space or the line's end part it from the next.
_BACKWARDS_END = re.compile(r"[.!?,;:](?=[ \t\n]|$)|\n")
# How far back a clause's start is first looked for (then twice as far, and so on).
_CLAUSE_REACH = 400
_SPACE = re.compile(r"\S+")
# A word of ROT47: a run of printable ASCII but for the space.
_ROT47_WORD = re.compile(r"[!-~]+")
# Letters, perhaps with a sentence's punctuation after them (or quotes around).
_LETTERS = re.compile(r"[\"'(]?[A-Za-z]+(?:'[A-Za-z]+)?[\"')]?[.,;:!?]?")
# A letter's number, 1 to 26, and a word of them.
_NUMBER = r"(?:2[0-6]|1[0-9]|[1-9])"
_A1Z26 = re.compile(
    rf"(?<![\w-]){_NUMBER}(?:-{_NUMBER})*(?:(?:[ \t]+|[ \t]*/[ \t]*){_NUMBER}(?:-{_NUMBER})*)"
    rf"{{{_FEWEST - 1},}}(?![\w-])"
)
_A1Z26_WORD = re.compile(rf"{_NUMBER}(?:-{_NUMBER})*")


def _share(text: str) -> tuple[int, int]:
    """How many words `text` has, and how many of them are function words."""
    words = _WORD.findall(text.lower())
    return len(words), sum(word in _FUNCTION_WORDS for word in words)


def _reads(text: str) -> bool:
    """Whether `text` has enough words, at least one and a share of them function
    words."""
    count, function = _share(text)
    return count >= _FEWEST and function >= max(1, _SHARE * count)


def _deciphered(written: str, read: str, *, cued: bool = False) -> bool:
    """Whether `read`, a letter-for-letter deciphering of `written`, reads as text and
    `written` does not. Uncued: four words or more, two function words at least and
    more than written has, which has too few to read by itself. Where something says
    a cipher is in use, three words and more function words than written. (A
    cipher of letters for letters keeps a word's length, so a short word may read
    either way: "si" and "is".)"""
    count, function = _share(read)
    if cued:
        return count >= _FEWEST and function > _share(written)[1]
    if count < _FEWEST + 1 or function < max(2, _SHARE * count):
        return False
    written_function = _share(written)[1]
    return written_function < function and written_function < max(2, _SHARE * count)


def _backwards(clause: str) -> str:
    """A clause written backwards, read the right way: the whole clause when its last
    word ends with its only capital, else each word (with the marks around it)."""
    words = _WORD.findall(clause)
    last = words[-1] if words else ""
    if last[-1:].isupper() and not any(char.isupper() for char in clause[: clause.rfind(last)]):
        stripped = clause.strip()
        start = clause.find(stripped)
        return clause[:start] + stripped[::-1] + clause[start + len(stripped) :]
    return _SPACE.sub(lambda word: word.group()[::-1], clause)


# A text that names its cipher ("ROT13:", "read it backwards") is cued; so is a clause
# with a word whose last letter alone is a capital ("nemoW"), a word written backwards.
_NAMES = (
    *("rot13", "rot 13", "rot-13", "backward", "reversed", "in reverse", "rückwärts"),
    *("ruckwarts", "al revés", "al reves", "à l'envers", "a l'envers"),
)
_CAPITAL_LAST = re.compile(r"(?<![^\W\d_])[^\W\d_A-Z]+[A-Z](?![^\W\d_])")


def _by_clause(
    text: str,
    read: Callable[[str], str],
    present: set[str],
    cue: re.Pattern[str] | None = None,
    ends: re.Pattern[str] = _CLAUSE_END,
) -> str:
    """`text` with each clause that reads once deciphered by `read` deciphered. Only a
    clause holding one of the text's function words as the cipher writes them
    (`present`) is tried; `ends` finds where clauses end. A text that names its
    cipher, or in which a clause was deciphered, is cued throughout."""
    lowered = text.lower()
    spans = _clauses_with(text, lowered, present, ends)
    if not spans:
        return text
    named = any(name in lowered for name in _NAMES)
    read_text = _read_clauses(text, spans, read, named, cue)
    if read_text is not text and not named:
        read_text = _read_clauses(text, spans, read, True, cue)
    return read_text


def _read_clauses(
    text: str,
    spans: list[tuple[int, int]],
    read: Callable[[str], str],
    named: bool,
    cue: re.Pattern[str] | None,
) -> str:
    pieces: list[str] = []
    last = 0
    for start, stop in spans:
        written = text[start:stop]
        cued = named or (cue is not None and cue.search(written) is not None)
        if _deciphered(written, deciphered := read(written), cued=cued):
            pieces += [text[last:start], deciphered]
            last = stop
    return "".join([*pieces, text[last:]]) if pieces else text


def _clauses_with(
    text: str, lowered: str, present: set[str], ends: re.Pattern[str]
) -> list[tuple[int, int]]:
    """Where the clauses that hold a word of `present` (whole, in any case: `lowered` is
    the text in small letters) are."""
    spans: set[tuple[int, int]] = set()
    for word in present:
        at = lowered.find(word)
        while at >= 0:
            after = at + len(word)
            if (at == 0 or not lowered[at - 1].isalnum()) and (
                after == len(lowered) or not lowered[after].isalnum()
            ):
                spans.add(_clause_at(text, at, after, ends))
            at = lowered.find(word, after)
    ordered: list[tuple[int, int]] = []
    for span in sorted(spans):
        if not ordered or span[0] >= ordered[-1][1]:
            ordered.append(span)
    return ordered


def _clause_at(text: str, at: int, after: int, ends: re.Pattern[str]) -> tuple[int, int]:
    """The clause around text[at:after]: from the end of the one before to its own end."""
    end = ends.search(text, after)
    stop = len(text) if end is None else end.start()
    reach = _CLAUSE_REACH
    while True:
        before = [found.end() for found in ends.finditer(text, max(0, at - reach), at)]
        if before or at - reach <= 0:
            return (before[-1] if before else 0), stop
        reach *= 2


# Function words as each cipher writes them, but for those that are function words
# as written too ("a", "on" and "no"): a clause holds one of these, or is not tried.
_ROT13_FUNCTION = frozenset(word.translate(_ROT13) for word in _FUNCTION_WORDS) - _FUNCTION_WORDS
_REVERSED_FUNCTION = frozenset(word[::-1] for word in _FUNCTION_WORDS) - _FUNCTION_WORDS


def _rot13(text: str, hints: set[str]) -> str:
    present = _plain_words(hints) & _ROT13_FUNCTION
    return _by_clause(text, lambda clause: clause.translate(_ROT13), present)


def _ends_capital(line: str) -> bool:
    """Whether a line's last word ends with a capital after small letters ("nemoW")."""
    last = line.rstrip(_AROUND + " \t")
    return last[-1:].isupper() and last[-2:-1].islower()


def _reversed(text: str, hints: set[str]) -> str:
    """Lines written backwards whole, then clauses written backwards."""
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if _ends_capital(line) and _deciphered(line, line[::-1], cued=True):
            lines[index] = line[::-1]
    present = _plain_words(hints) & _REVERSED_FUNCTION
    return _by_clause("\n".join(lines), _backwards, present, _CAPITAL_LAST, _BACKWARDS_END)


def _rot47(text: str, hints: set[str]) -> str:
    """Runs of words that read as letters after ROT47, and not before, deciphered."""
    words = list(_ROT47_WORD.finditer(text))
    ciphered = [
        _LETTERS.fullmatch(word.group().translate(_ROT47)) is not None
        and _LETTERS.fullmatch(word.group()) is None
        for word in words
    ]
    pieces: list[str] = []
    last = 0
    index = 0
    while index < len(words):
        if not ciphered[index]:
            index += 1
            continue
        end = index
        while end + 1 < len(words) and ciphered[end + 1]:
            end += 1
        start, stop = words[index].start(), words[end].end()
        run = text[start:stop]
        if end - index + 1 >= _FEWEST and _reads(read := run.translate(_ROT47)):
            pieces += [text[last:start], read]
            last = stop
        index = end + 1
    return "".join([*pieces, text[last:]]) if pieces else text


def _a1z26_word(match: re.Match[str]) -> str:
    return "".join(chr(ord("a") + int(number) - 1) for number in match.group().split("-"))


def _a1z26(text: str, hints: set[str]) -> str:
    def run(match: re.Match[str]) -> str:
        read = _A1Z26_WORD.sub(_a1z26_word, match.group()).replace("/", " ")
        return " ".join(read.split()) if _reads(read) else match.group()

    return _A1Z26.sub(run, text)


_HYPHENED = re.compile(f"{_NUMBER}(?:-{_NUMBER})+")
_CIPHERS: tuple[tuple[Cipher, Callable[[set[str]], bool], Callable[[str, set[str]], str]], ...] = (
    ("rot13", lambda words: not words.isdisjoint(_ROT13_HINTS), _rot13),
    ("reversed", lambda words: not words.isdisjoint(_REVERSED_HINTS), _reversed),
    ("rot47", lambda words: not words.isdisjoint(_ROT47_HINTS), _rot47),
    ("a1z26", lambda words: any(map(_HYPHENED.fullmatch, words)), _a1z26),
)


def decipher(text: str) -> tuple[str, frozenset[Cipher]]:
    """`text` with its ciphered stretches read, and which ciphers they were in."""
    found: set[Cipher] = set()
    hints = set(text.split())
    for name, may_hold, read in _CIPHERS:
        if may_hold(hints) and (read_text := read(text, hints)) != text:
            found.add(name)
            text = read_text
    return text, frozenset(found)
