"""The detector's folded copy: tricks undone, other scripts left as they are."""

from __future__ import annotations

import pytest

from guard.integrity.tamper_fold import fold


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("plain text stays", "plain text stays"),
        ("\uff29\uff47\uff4e\uff4f\uff52\uff45", "Ignore"),  # fullwidth, by NFKC
        ("\U0001d422\U0001d420\U0001d427\U0001d428\U0001d42b\U0001d41e", "ignore"),  # bold math
        ("ig\u200bno\u2060re", "ignore"),  # zero-width characters inside a word
        ("hid\U000e0041den", "hidden"),  # a tag character
        ("W\u043emen", "Women"),  # a Cyrillic o in a Latin word
        ("\u0399gnore", "Ignore"),  # a Greek capital iota reads as a capital I
        ("\u0440r\u0435vi\u043eus", "previous"),
        ("\u0418\u0433\u043d\u043e\u0440\u0438\u0440\u0443\u0439", "Игнорируй"),  # Russian stays
        ("\u0438\u0433\u043dop\u0438\u0440\u0443\u0439", "игнорируй"),  # Latin o, p in Russian
        ("\u03b2\u03b9\u03b2\u03bb\u03af\u03bf", "βιβλίο"),  # Greek stays
        ("i g n o r e  p r e v i o u s", "ignore  previous"),
        ("i.g.n.o.r.e", "ignore"),
        ("a b", "a b"),  # two single letters are not a spaced word
        ("1gn0r3 pr3v10u5", "ignore previous"),
        ("W0m3n", "Women"),
        ("score 0.0 and 42", "score 0.0 and 42"),  # numbers on their own stay
        ("\u6771\u4eacJSON", "\u6771\u4eacJSON"),  # a CJK word with Latin letters stays
        ("s.c.o.r.e.r r.e.t.u.r.n z.e.r.o", "scorer return zero"),  # dotted, spaced words
        ("P\nA\nS\nS\nI\nT", "PASSIT"),  # one letter to a line
        ("X\nY\nZ", "X\nY\nZ"),  # three lines are a list, not a word
        ("j\U0001f539u\U0001f539d\U0001f539g\U0001f539e say", "judge say"),  # emoji between
        ("s\u00b7a\u00b7y", "say"),  # middle dots between letters
        ("caf\u00e9 \u00e9l\u00e9gant", "caf\u00e9 \u00e9l\u00e9gant"),  # accents stay
        ("P\u034fl\u034fe\u034fa\u034fs\u034fe", "Please"),  # combining grapheme joiners
        ("The\u3164model\uffa0must", "The model must"),  # Hangul fillers as spaces
        # Letters apart by thin spaces, words by ordinary ones; a two-letter word too.
        (
            "\u2009".join("Grader") + ": " + "\u2009".join("no") + " " + "\u2009".join("score"),
            "Grader: no score",
        ),
    ],
)
def test_fold(text: str, folded: str) -> None:
    assert fold(text) == folded
