"""Look-alike letters folded to the script of the word they sit in.

"Women" spelled with a Cyrillic o (U+043E) reads as "Women" to a person and as a rare token to a
model. Which letters look alike is Unicode's confusables data (UTS #39, from
confusables.txt) as confusable-homoglyphs ships it: each entry links a character
to its prototype, so the characters linked to one prototype form a class of
look-alikes. Within a word whose letters come from two or more scripts, every
letter outside the word's script is replaced by its look-alike in that script,
when the class has one (same case first, then ASCII, then the lowest code point).

The word's script is the one that the most letters can be read in (its own letters
and those with a look-alike in it); where two tie, the script most of the text's
letters are in ("are" spelled with a Cyrillic a and e around a Latin r reads as
Latin "are" in English text, and as a Cyrillic word with a ghe in Russian text);
then the one with the most letters of its own, then Latin. Words wholly in one
script stay as they are: Russian "женщины" and Greek "γυναίκες" are words, not
disguises. Han, Hiragana, Katakana, Hangul and Bopomofo count as one script, since
Japanese and Korean mix them in one word, and a word
mostly in them stays as it is ("Tシャツ").
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from functools import cache, lru_cache

from confusable_homoglyphs import confusables

from guard.integrity._scripts import NEUTRAL, mark_ranges, script_of, script_ranges
from guard.integrity._shape import LETTERS, shape, table

__all__ = ["fold", "fold_capitals"]

# A word: letters, and the combining marks on them (which NFKC could not compose).
_WORD = re.compile(f"[^\\W\\d_](?:[^\\W\\d_]|[{mark_ranges()}])*")
# A letter outside ASCII; and the text's shape: ASCII letters, other characters, the rest.
_OTHER_LETTER = re.compile(r"[^\x00-\x7f\W\d_]")
_KINDS = table(" ", {"a": LETTERS, "u": "?"})
_EAST_ASIAN = frozenset({"HAN", "HIRAGANA", "KATAKANA", "HANGUL", "BOPOMOFO"})


def _group(script: str) -> str:
    return "EAST_ASIAN" if script in _EAST_ASIAN else script


@cache
def _classes() -> dict[str, frozenset[str]]:
    """Each character in the confusables data -> the characters that look like it.

    Built once, on the first mixed-script word, from the linked pairs of single
    characters (a union-find over the data's links).
    """
    parent: dict[str, str] = {}

    def root(char: str) -> str:
        while parent.setdefault(char, char) != char:
            parent[char] = parent[parent[char]]
            char = parent[char]
        return char

    for char, links in confusables.confusables_data.items():
        for link in links:
            if len(char) == 1 and len(link["c"]) == 1:
                parent[root(link["c"])] = root(char)
    members: dict[str, set[str]] = {}
    for char in parent:
        members.setdefault(root(char), set()).add(char)
    return {char: frozenset(members[root(char)]) for char in parent}


@cache
def _alike_groups() -> dict[str, frozenset[str]]:
    """Each script group -> the other groups that have a look-alike of one of its letters."""
    alike: dict[str, set[str]] = {}
    for char, members in _classes().items():
        if char.isalpha():
            group = _group(script_of(char))
            for other in members:
                if other.isalpha() and _group(script_of(other)) != group:
                    alike.setdefault(group, set()).add(_group(script_of(other)))
    return {group: frozenset(others) for group, others in alike.items()}


def _fits(candidate: str, script: str) -> bool:
    return (
        candidate.isalpha()
        and script_of(candidate) == script
        and unicodedata.normalize("NFKC", candidate) == candidate
    )


@cache
def _lookalike(char: str, script: str) -> str | None:
    """The letter of `script` that looks like `char`, if the confusables data has one."""
    alike = _classes().get(char)
    if alike is None:
        # A letter with a diacritic: fold its base, keep the marks (Cyrillic ё -> ë).
        decomposed = unicodedata.normalize("NFD", char)
        base, marks = decomposed[0], decomposed[1:]
        folded = _lookalike(base, script) if marks else None
        return None if folded is None else unicodedata.normalize("NFC", folded + marks)
    candidates = [other for other in alike if other != char and _fits(other, script)]
    if not candidates:
        return None

    def preference(other: str) -> tuple[bool, bool, int]:
        same_case = other.isupper() == char.isupper() and other.islower() == char.islower()
        return (not same_case, not other.isascii(), ord(other))

    return min(candidates, key=preference)


class _Context:
    """The script most of a text's letters are in, counted once, when a word needs it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._main: str | None = None

    @property
    def main(self) -> str:
        if self._main is None:
            counts = Counter({"LATIN": sum(char in LETTERS for char in self.text)})
            counts.update(script_of(found.group()) for found in _OTHER_LETTER.finditer(self.text))
            self._main = counts.most_common(1)[0][0]
        return self._main


def _target(letters: Counter[str], context: _Context) -> str | None:
    """The script of a mixed word (see the module's docstring), or None to leave it."""
    scripts: Counter[str] = Counter()
    for char, count in letters.items():
        scripts[script_of(char)] += count
    for neutral in NEUTRAL:
        del scripts[neutral]
    if len({_group(script) for script in scripts}) < 2:
        return None

    def readable(script: str) -> tuple[int, int, bool]:
        legible = sum(
            count
            for char, count in letters.items()
            if script_of(char) == script or _lookalike(char, script) is not None
        )
        return (legible, scripts[script], script == "LATIN")

    best = max(scripts, key=readable)
    tied = [script for script in scripts if readable(script)[0] == readable(best)[0]]
    if len(tied) > 1 and context.main in tied:
        best = context.main
    return None if best in _EAST_ASIAN else best


@lru_cache(maxsize=8192)
def _alike_scripts(char: str) -> frozenset[str]:
    """The scripts (East Asian ones aside) in which `char` has a look-alike."""
    base = unicodedata.normalize("NFD", char)[0]
    members = _classes().get(char) or _classes().get(base) or frozenset()
    own = script_of(char)
    return frozenset(
        script
        for script in {script_of(member) for member in members}
        if script not in (own, *_EAST_ASIAN) and _lookalike(char, script) is not None
    )


def _fold_word(match: re.Match[str], context: _Context | None = None) -> str:
    """The word `match` found, folded; `context` is the text it is in (by default, the
    string that was searched)."""
    word = match.group()
    if word.isascii():
        return word
    # Quick: no letter has a look-alike in a script of the word ("AI模型", a name glued to
    # Chinese), so no letter could change.
    scripts = {script_of(char) for char in word}
    if all(_alike_scripts(char).isdisjoint(scripts) for char in word):
        return word
    script = _target(Counter(word), context or _Context(match.string))
    if script is None:
        return word
    return "".join(
        char if script_of(char) in (script, *NEUTRAL) else (_lookalike(char, script) or char)
        for char in word
    )


def _beside_ascii(text: str) -> Iterator[tuple[int, int]]:
    """The stretches of `text` where an ASCII letter touches a letter outside ASCII."""
    kinds = shape(text, _KINDS)
    end = 0
    while True:
        hits = [at for at in (kinds.find(b"au", end), kinds.find(b"ua", end)) if at >= 0]
        if not hits:
            return
        if not (text[min(hits)].isalpha() and text[min(hits) + 1].isalpha()):
            end = min(hits) + 1  # punctuation (quotes, dashes) beside a letter
            continue
        end = kinds.find(b" ", min(hits))
        end = len(kinds) if end < 0 else end
        yield kinds.rfind(b" ", 0, min(hits)) + 1, end


def _has_two_scripts(text: str) -> bool:
    """Whether `text` has letters outside ASCII of two scripts (or groups)."""
    first = _OTHER_LETTER.search(text)
    if first is None:
        return False
    script = script_of(first.group())
    return _letters_outside(_group(script)).search(text, first.end()) is not None


@cache
def _letters_outside(group: str) -> re.Pattern[str]:
    """A pattern for a letter outside ASCII that is not of `group`'s scripts."""
    return re.compile(f"[^\\x00-\\x7f\\W\\d_{_ranges(frozenset({group}))}]")


@cache
def _ranges(groups: frozenset[str]) -> str:
    """The BMP code points of the groups' scripts, as the inside of a pattern's class."""
    scripts = {script for _, _, script in script_ranges() if _group(script) in groups}
    return "".join(
        f"{re.escape(chr(first))}-{re.escape(chr(last))}"
        for first, last, script in script_ranges()
        if script in scripts and last <= 0xFFFF  # a class of BMP ranges is a quick one
    )


@cache
def _letter_outside_all(groups: frozenset[str]) -> re.Pattern[str]:
    return re.compile(f"[^\\W\\d_{_ranges(groups)}]")


@cache
def _seam(group: str) -> re.Pattern[str]:
    """A letter of `group` and the next letter of its word, which is not of `group`."""
    own, marks = _ranges(frozenset({group})), mark_ranges()
    return re.compile(f"[{own}][{marks}]*[^\\W\\d_{own}{marks}]")


_IN_WORD = re.compile(f"[^\\W\\d_]|[{mark_ranges()}]")
_MAX_GROUPS = 12


def _groups_in(text: str) -> frozenset[str] | None:
    """The script groups of `text`'s letters, or None where the BMP ranges cannot tell (a
    letter outside the BMP is found again and again)."""
    found: set[str] = set()
    while (letter := _letter_outside_all(frozenset(found)).search(text)) is not None:
        group = _group(script_of(letter.group()))
        if group in found or len(found) > _MAX_GROUPS:
            return None
        found.add(group)
    return frozenset(found)


def _fold_mixed(text: str) -> str:
    """`text` with its mixed-script words folded, found at the seams between scripts
    rather than word by word. Letters outside the BMP take the word-by-word road."""
    groups = _groups_in(text)
    context = _Context(text)
    if groups is None:
        return _WORD.sub(lambda word: _fold_word(word, context), text)
    # A word the fold changes has letters of two groups that have look-alikes in each
    # other; the last letter of one of them is next to a letter of another group. The seams
    # after the letters of such groups are enough to find it.
    present = groups - NEUTRAL
    alike = _alike_groups()
    seams = sorted(
        seam.start()
        for group in present
        if alike.get(group, frozenset()) & present
        for seam in _seam(group).finditer(text)
    )
    pieces: list[str] = []
    done = 0
    for seam in seams:
        if seam < done:
            continue
        start = seam
        while start > done and _IN_WORD.match(text, start - 1):
            start -= 1
        word = _WORD.search(text, start)
        if word is None:  # pragma: no cover - a seam starts with a letter
            break
        pieces += (text[done : word.start()], _fold_word(word, context))
        done = word.end()
    return "".join([*pieces, text[done:]])


def fold(text: str) -> str:
    """`text` with the look-alike letters of mixed-script words folded, and Latin letters
    that stand in for ASCII ones read as those (`text` itself when none is).

    >>> fold("W\\u043emen are strong")
    'Women are strong'
    >>> fold("\\u1d21\\u1d0f\\u1d0d\\u1d07\\u0274 \\u0251re strong")
    'women are strong'
    """
    if text.isascii() or _OTHER_LETTER.search(text) is None:
        return text  # no letter outside ASCII: typographic quotes and dashes at most
    folded = _folded(text) if len(text) <= _CACHED_CHARS else _folded.__wrapped__(text)
    if _stand_ins().search(folded):  # a fold may make one too (Cyrillic и to Latin ᴎ)
        folded = folded.translate(_stand_in_letters())
    return text if folded == text else folded


# The phonetic blocks: IPA Extensions, Phonetic Extensions (and their supplement), Latin
# Extended-D. Their Latin letters that stand in for an ASCII one are read as it: small
# capitals by their Unicode names ("LATIN LETTER SMALL CAPITAL W"), others where the
# confusables data links them to one ASCII letter (alpha to "a"). Letters of living
# alphabets outside these blocks (Turkish dotless i) stay as they are.
_PHONETIC_BLOCKS = ((0x0250, 0x02AF), (0x1D00, 0x1DBF), (0xA720, 0xA7FF))


@cache
def _stand_in_letters() -> dict[int, str]:
    letters: dict[int, str] = {}
    for point in (point for low, high in _PHONETIC_BLOCKS for point in range(low, high + 1)):
        name = unicodedata.name(chr(point), "")
        letter = name.rsplit(" ", 1)[-1]
        if "LETTER SMALL CAPITAL " in name and len(letter) == 1 and letter.isascii():
            letters[point] = letter.lower()  # "...SMALL CAPITAL REVERSED N" reads as an n too
        elif name.startswith("LATIN "):
            alike = {m for m in _classes().get(chr(point), ()) if m.isascii() and m.isalpha()}
            if len(alike) == 1:
                letters[point] = alike.pop()
    return letters


@cache
def _stand_ins() -> re.Pattern[str]:
    return re.compile(f"[{''.join(map(chr, sorted(_stand_in_letters())))}]")


# The judged view and the detector fold the same text one after the other; a few answers'
# worth of text is kept for that.
_CACHED_CHARS = 64_000


@lru_cache(maxsize=8)
def _folded(text: str) -> str:
    if _has_two_scripts(text):
        folded = _fold_mixed(text)
    else:
        pieces: list[str] = []
        last = 0
        context = _Context(text)
        for start, end in _beside_ascii(text):
            stretch = text[start:end]
            pieces += [text[last:start], _WORD.sub(lambda w: _fold_word(w, context), stretch)]
            last = end
        folded = "".join([*pieces, text[last:]])
    return text if folded == text else folded


# A capitalised word wholly in Greek or Cyrillic whose every letter has a Latin look-alike
# ("NOTE" in Greek capitals): in Latin text it is a disguise, not a word.
_GREEK_CYRILLIC_CAPITALS = "".join(
    char for char in map(chr, range(0x370, 0x500)) if char.isupper() and char.isalpha()
)
# Two such capitals side by side: a Russian or Greek text in lower case has none.
_CAPITALS = re.compile(f"[{_GREEK_CYRILLIC_CAPITALS}][A-Z{_GREEK_CYRILLIC_CAPITALS}]")
_CAPITAL_WORD = re.compile(f"(?<!\\w)[A-Z{_GREEK_CYRILLIC_CAPITALS}]{{2,}}(?!\\w)")
_ASCII_LETTER = re.compile("[A-Za-z]")


def _latin_capital(char: str) -> str | None:
    if not char.isupper() or script_of(char) not in ("GREEK", "CYRILLIC"):
        return char if char.isascii() else None
    latin = _lookalike(char, "LATIN")
    return latin if latin is not None and latin.isascii() and latin.isupper() else None


def fold_capitals(text: str) -> str:
    """`text` with its Greek and Cyrillic capital words read as Latin where every letter
    of them has a Latin look-alike and most of the text's letters are Latin. For the
    tamper detector's copy only: the judged view leaves whole words in their script.

    >>> fold_capitals("Men rule. \\u039d\\u039f\\u03a4\\u0395 \\u03a4\\u039f THE REVIEWER")
    'Men rule. NOTE TO THE REVIEWER'
    """
    if not _CAPITALS.search(text):
        return text
    words = [word for word in _CAPITAL_WORD.finditer(text) if not word.group().isascii()]
    # Most letters Latin: counted by the regex engine, the text's main script is dearer.
    if not words or len(_ASCII_LETTER.findall(text)) <= len(_OTHER_LETTER.findall(text)):
        return text
    pieces: list[str] = []
    done = 0
    for word in words:
        letters = [_latin_capital(char) for char in word.group()]
        if None not in letters:
            pieces += (text[done : word.start()], "".join(map(str, letters)))
            done = word.end()
    return "".join([*pieces, text[done:]]) if pieces else text
