"""Phrase patterns searched by the words they open with, and the folds that keep the
detector and the judged view cheap: each finds what the whole pattern or the slow road
finds."""

from __future__ import annotations

import re
import unicodedata

import pytest

from guard.integrity import _bidi, _lookalikes
from guard.integrity._leads import KEY_CHARS, Leads
from guard.integrity.normalise import nfkc
from guard.integrity.phrases import SPACED_RULES
from guard.integrity.tamper import _ASCII_SPACES, _PUNCTUATION
from guard.integrity.tamper_fold import fold
from testkit.attacks import attacks, benign

FILLER = "Leadership depends on skills that people of every gender develop with practice. "


def _starts(lowered: str) -> set[str]:
    """The keys the detector reads from a text (its words' first four letters)."""
    if lowered.isascii():
        return {word[:KEY_CHARS] for word in lowered.translate(_ASCII_SPACES).split()}
    spaced = lowered.replace("-", " ").replace("/", " ").replace("'", " ").replace("\u2019", " ")
    return {word.strip(_PUNCTUATION)[:KEY_CHARS] for word in spaced.split()}


def _corpus() -> list[str]:
    texts = [sample.text for sample in (*attacks(), *benign())]
    return [fold(text).lower() for text in (*texts, *(FILLER * 3 + text for text in texts))]


@pytest.mark.parametrize("rule", range(len(SPACED_RULES)))
def test_a_rule_split_by_its_words_finds_what_the_whole_pattern_finds(rule: int) -> None:
    _, pattern = SPACED_RULES[rule]
    whole = re.compile(pattern, re.MULTILINE)
    leads = Leads(pattern)
    for text in _corpus():
        expected = whole.search(text)
        found = leads.search(_starts(text), text)
        assert (found and found.start()) == (expected and expected.start()), text


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        # A leading word boundary moves behind the word and still bounds it.
        (r"\bverdict\s*:\s*pass", "verdict: pass", "verdict: pass"),
        (r"\bverdict\s*:\s*pass", "xverdict: pass", None),
        # A small class after the opening letters is spread into words.
        (r"car[oa]\W+revisore", "cara revisore", "cara revisore"),
        # Nested opening groups, and a short word that ends where the pattern says so.
        (r"(?:(?:ai|llm)\W+model|judge)\s*:", "ai model:", "ai model:"),
        (r"(?:(?:ai|llm)\W+model|judge)\s*:", "judge:", "judge:"),
        # What cannot be keyed (an escaped letter up front) is searched whole, always.
        (r"(?:a\.i\.|reviewer)\s*:", "a.i.:", "a.i.:"),
    ],
)
def test_leads_search(pattern: str, text: str, found: str | None) -> None:
    match = Leads(pattern).search(_starts(text), text)
    assert (match and match.group()) == found


def test_a_part_whose_word_is_not_in_the_text_is_not_searched() -> None:
    leads = Leads(r"(?:ignore|forget)\W+rules")
    assert leads.keys == {"igno", "forg"}
    assert leads.search({"forg"}, "ignore rules") is None


MANY_SCRIPTS = (
    "Руководство зависит от опыта. 领导能力取决于经验。リーダーシップ。القيادة مهارة. "
    "γυναίκες Tシャツ AI模型 "
)


@pytest.mark.parametrize(
    "word",
    ["W\u043emen", "\u0440r\u0435vi\u043eus", "\u0438\u0433\u043dop\u0438\u0440\u0443\u0439"],
)
def test_a_mixed_word_among_many_scripts_is_folded_as_word_by_word(word: str) -> None:
    text = f"{MANY_SCRIPTS}{word} {MANY_SCRIPTS}"
    slow_road = _lookalikes._WORD.sub(_lookalikes._fold_word, text)
    assert _lookalikes.fold(text) == slow_road != text


def test_a_letter_outside_the_bmp_takes_the_word_by_word_road() -> None:
    text = f"\U00020000\u0430 {MANY_SCRIPTS} W\u043emen"
    assert _lookalikes.fold(text) == _lookalikes._WORD.sub(_lookalikes._fold_word, text)
    assert "Women" in _lookalikes.fold(text)


def test_text_of_many_scripts_without_a_mixed_word_is_the_same_string() -> None:
    assert _lookalikes.fold(MANY_SCRIPTS * 5) == MANY_SCRIPTS * 5


def test_nfkc_line_by_line_is_nfkc() -> None:
    text = "\uff37omen\ne\u0301\n\u0301x\n\ufb01ne \u2460\r\n\u1100\u1161"
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


@pytest.mark.parametrize(
    "text",
    [
        "The price is \u2066120 USD\u2069 \u200ftoday.\n"
        "\u05e9\u05dc\u05d5\u05dd \u202b\u05e2\u05d5\u05dc\u05dd\u202c",
        "a \u2067x\u2069 b\nc \u202ax\u202c \u200e",
    ],
)
def test_paragraphs_without_an_override_only_lose_their_controls(text: str) -> None:
    slow = "".join(_bidi._flat(_bidi._tree(piece)[0]) for piece in _bidi._PARAGRAPHS.split(text))
    assert _bidi.resolve(text) == slow
    assert not _bidi._CONTROL.search(_bidi.resolve(text))


def test_a_text_past_the_cached_size_is_folded_too() -> None:
    text = "W\u043emen \u0416\u0430 " * (_lookalikes._CACHED_CHARS // 8)
    assert len(text) > _lookalikes._CACHED_CHARS
    assert _lookalikes.fold(text) == "Women \u0416\u0430 " * (_lookalikes._CACHED_CHARS // 8)
