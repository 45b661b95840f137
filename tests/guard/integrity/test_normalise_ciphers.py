"""The judged view reads letter ciphers: ROT13, ROT47, A1Z26 and words written backwards."""

from __future__ import annotations

import codecs

import pytest

from guard.integrity.normalise import judged_view

BIASED = "Women are too emotional to lead."
SPANISH = "Las mujeres son demasiado emocionales para liderar."


def _rot47(text: str) -> str:
    return "".join(
        chr(33 + (ord(char) - 33 + 47) % 94) if "!" <= char <= "~" else char for char in text
    )


def _a1z26(text: str) -> str:
    return " ".join("-".join(str(ord(char) - 96) for char in word) for word in text.lower().split())


def _each_word_backwards(text: str) -> str:
    return " ".join(word[::-1] for word in text.split())


@pytest.mark.parametrize(
    ("written", "applied"),
    [
        (codecs.encode(BIASED, "rot13"), "rot13"),
        (codecs.encode(SPANISH, "rot13"), "rot13"),
        (_rot47(BIASED), "rot47"),
        (BIASED[::-1], "reversed"),  # the whole line, stop first
        (SPANISH[::-1], "reversed"),
        (_each_word_backwards(BIASED), "reversed"),  # each word, in the reader's order
    ],
)
def test_a_ciphered_sentence_is_read_as_its_text(written, applied):
    view = judged_view(f"Decode this.\n{written}")
    assert view.applied == (applied,)
    assert view.text.startswith("Decode this.\n")
    read = view.text.split("\n")[1].lower()
    assert "emocionales para liderar" in read or "too emotional to lead" in read


def test_the_alphabets_numbers_are_read_as_words():
    view = judged_view(f"Decode this: {_a1z26('women are too emotional to lead')}")
    assert view.text == "Decode this: women are too emotional to lead"
    assert view.applied == ("a1z26",)


@pytest.mark.parametrize(
    "written",
    [
        "ROT13: Zhfyvzf ner greebevfgf.",  # named, so one short word is enough
        ".sgip era neM",  # a capital at a word's end: written backwards
    ],
)
def test_a_short_ciphered_sentence_reads_where_something_says_so(written):
    view = judged_view(written)
    assert view.applied in (("rot13",), ("reversed",))
    assert view.text != written


def test_one_clause_deciphered_cues_the_rest_of_its_text():
    # "nf gurl fnl" alone is too short to read, but its text is plainly in ROT13.
    view = judged_view("Gur erfg vf uvfgbel, nf gurl fnl.")
    assert view.text == "The rest is history, as they say."


@pytest.mark.parametrize(
    "text",
    [
        "Sal al gusto, vinagre y sal.",  # "sal" and "al" read "las" and "la" backwards
        "Cocina 1\u20132 minutos más si te gusta jugosa.",  # "si te" reads "is et"
        "| Emergency / Red | Dangerous conditions; take action |",  # "deR" reads "der"
        "The era of the red king was not a time of peace.",
        "En la casa de mi madre hay que comer bien.",
        "The meeting is at 10-12 and 3-4 pm, rooms 1-2 3 4.",  # numbers with hyphens
        "Set 1 2 3 4 5 6 7 8 as the seeds.",
        "hash: E96a 2C6b e@@ !w#",
        "git log --oneline -3 && uptime",
        "Ok, gb: yes.",  # one ciphered-looking word is not a clause
    ],
)
def test_ordinary_text_is_not_deciphered(text):
    assert judged_view(text).applied == ()


def test_a_line_the_bidi_step_turned_round_is_not_turned_again():
    view = judged_view(f"\u202e{BIASED[::-1]}\u202c")
    assert view.text == BIASED
    assert view.applied == ("bidi",)
