"""The judged view reads decorated words, escaped bytes and keyed URL-safe base64."""

from __future__ import annotations

import base64
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guard.integrity.normalise import JudgedView, judged_view

STRIKE, SHORT_STROKE, TILDE_OVERLAY = "\u0336", "\u0335", "\u0334"


def struck(word: str, mark: str = STRIKE) -> str:
    return "".join(letter + mark for letter in word)


def url_safe(text: str) -> str:
    """`text` in URL-safe base64 without its padding, as tokens in links are."""
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def escaped(text: str) -> str:
    return "".join(f"\\x{byte:02x}" for byte in text.encode())


def code_points(text: str) -> str:
    """`text` as JavaScript and JSON escape it: UTF-16 code units, so an emoji is a pair."""
    data = text.encode("utf-16-be")
    return "".join(f"\\u{data[at]:02x}{data[at + 1]:02x}" for at in range(0, len(data), 2))


# "Liberals ruin every town they touch >>?!" has "-" and "_" in URL-safe base64.
KEYED = "Liberals ruin every town they touch >>?!"


def test_the_sample_needs_the_url_safe_alphabet_and_no_padding():
    run = url_safe(KEYED)
    assert "-" in run or "_" in run
    assert len(run) % 4 != 0


@pytest.mark.parametrize(
    ("text", "judged"),
    [
        (f"token={url_safe(KEYED)}", f"token={KEYED}"),
        (f"https://x.test/p?id=7&session_key={url_safe(KEYED)}&l=en", None),
        (f"auth: {url_safe(KEYED)}", f"auth: {KEYED}"),
        (f"auth:{url_safe(KEYED)}", f"auth:{KEYED}"),
        (f"note.v2={base64.b64encode(KEYED.encode()).decode()}", f"note.v2={KEYED}"),
    ],
)
def test_url_safe_base64_glued_to_a_key_is_read(text, judged):
    view = judged_view(text)
    assert view.applied == ("base64",)
    assert KEYED in view.text
    if judged is not None:
        assert view.text == judged


@pytest.mark.parametrize(
    "text",
    [
        "api_key=sk-3f9Qz1Lw8XbN0vTy7Hc2Rk5",  # a random key: not text
        "digest=" + url_safe("{[(<#>)]}{[(<#>)]}{[]}"),  # signs, not letters
        "color=aaaaaaaaaaaaaaaaaaaaaaaa",
        "x=" + url_safe("\x01\x02binary\x03\x04stuff\x05\x06"),
    ],
)
def test_keyed_runs_that_are_not_readable_text_stay(text):
    view = judged_view(text)
    assert "base64" not in view.applied


def test_a_keyed_run_is_decoded_one_level_deep():
    once = url_safe(KEYED)
    assert judged_view(f"t={url_safe(once)}") == JudgedView(f"t={once}", ("base64",))


@pytest.mark.parametrize(
    ("text", "judged"),
    [
        (f'print("{escaped("Immigrants steal our jobs")}")', 'print("Immigrants steal our jobs")'),
        (f"msg = '{escaped('Frauen sind schwach')}';", "msg = 'Frauen sind schwach';"),
        (escaped("Señoras débiles"), "Señoras débiles"),
        (f'"{code_points("Women cannot lead")}"', '"Women cannot lead"'),
        (code_points("Liberals lie \U0001f600"), "Liberals lie \U0001f600"),
        (escaped("Men are bad") + " and " + escaped("women alike"), "Men are bad and women alike"),
    ],
)
def test_escaped_bytes_and_code_points_are_read(text, judged):
    assert judged_view(text) == JudgedView(judged, ("hex",))


@pytest.mark.parametrize(
    "text",
    [
        "\\x00" * 16,
        "\\x7f\\x45\\x4c\\x46\\x02\\x01\\x01\\x00\\x00",  # an ELF header
        "\\xff\\xfe\\xfd\\xfc\\xfb\\xfa\\xf9\\xf8",  # not UTF-8
        "\\x41\\x42\\x43",  # too short to be a sentence
        "\\ud800\\u0041\\u0042\\u0043\\u0044\\u0045\\u0046\\u0047",  # a lone surrogate
        "path C:\\x86\\users and \\u00e9",
    ],
)
def test_escapes_that_are_not_readable_text_stay(text):
    assert judged_view(text).applied == ()


@pytest.mark.parametrize(
    ("text", "judged"),
    [
        (f"{struck('Conservatives')} are stupid", "Conservatives are stupid"),
        (f"{struck('women', SHORT_STROKE)} are weak", "women are weak"),
        (f"{struck('Liberals', TILDE_OVERLAY)} lie", "Liberals lie"),
        ("W\u0336o\u0301m\u0323e\u0308n\u0335 are weak", "Women are weak"),
        # zalgo: stacks above and below that compose with nothing
        ("I\u030d\u0316m\u0350\u0329m\u0352i\u0357\u032cg\u0351rants", "Immigrants"),
        # every letter accented, one mark left over: decoration, not spelling
        ("W\u00f3\u1e43\u00ebn\u0346 are lazy", "Women are lazy"),
    ],
)
def test_decorating_marks_on_latin_words_are_removed(text, judged):
    view = judged_view(text)
    assert view.text == judged
    assert "marks" in view.applied


@pytest.mark.parametrize(
    "text",
    [
        "Ti\u1ebfng Vi\u1ec7t: ng\u01b0\u1eddi \u0111\u01b0\u1ee3c h\u1ecdc",  # Vietnamese stacks
        "e\u0323\u0302 and o\u031b\u0300",  # Vietnamese, decomposed: composes under NFC
        "\u1eb9\u0301k\u1ecd\u0301 \u1ecd\u0300r\u1ecd\u0300",  # Yoruba: one mark left per vowel
        "\u0939\u093f\u0928\u094d\u0926\u0940 \u092d\u093e\u0937\u093e",  # Devanagari
        "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22 \u0e19\u0e49\u0e33",  # Thai
        "\u0627\u0644\u0639\u064e\u0631\u064e\u0628\u0650\u064a\u0651\u064e\u0629",  # Arabic
        "\u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd",  # Hebrew points
        "\ud55c\uad6d\uc5b4 \u1100\u1161\u11a8",  # Korean, syllables and jamo
        "\u043a\u043d\u0438\u0301\u0433\u0430 \u0437\u0430\u0301\u043c\u043e\u043a",  # stress marks
        "caf\u00e9, d\u00e9j\u00e0 vu, \u017elu\u0165ou\u010dk\u00fd k\u016f\u0148",
        "x\u0302 and \u0101\u0304",  # maths: a hat on x, one mark
    ],
)
def test_marks_that_scripts_need_stay(text):
    view = judged_view(text)
    assert "marks" not in view.applied
    assert view.text == unicodedata.normalize("NFKC", text)


MARKED = st.sampled_from(
    [
        *"Wwomen lazy ",
        *(STRIKE, SHORT_STROKE, "\u0301", "\u0323", "\u0308", "\u0316", "\u0302"),
        *("\u00f3", "\u1e43", "\u0430", "0", "\u200b", "\u0939", "\u093f"),
    ]
)


@given(st.lists(MARKED, max_size=60).map("".join))
@settings(max_examples=500, deadline=None)
def test_the_view_of_a_marked_text_is_its_own_view(text):
    view = judged_view(text)
    assert judged_view(view.text) == JudgedView(view.text, ())


LONGER = "Women are too emotional to lead."


def _xxd(text: str) -> str:
    """`text` as `xxd` dumps it, without the text column: an offset, eight groups of two
    bytes a line."""
    data = text.encode()
    lines = []
    for offset in range(0, len(data), 16):
        chunk = data[offset : offset + 16].hex()
        groups = " ".join(chunk[at : at + 4] for at in range(0, len(chunk), 4))
        lines.append(f"{offset:08x}: {groups}")
    return "\n".join(lines)


def _grouped(run: str, width: int) -> str:
    """`run` in groups of `width` characters set apart by spaces, as backup codes are shown."""
    return " ".join(run[at : at + width] for at in range(0, len(run), width))


@pytest.mark.parametrize(
    ("text", "applied"),
    [
        ("token: " + base64.b32encode(LONGER.encode()).decode().rstrip("=").lower(), "base32"),
        ("b85: " + base64.b85encode(LONGER.encode()).decode(), "base85"),
        ("payload ascii85=" + base64.a85encode(LONGER.encode()).decode(), "base85"),
        ("<~" + base64.a85encode(LONGER.encode()).decode() + "~>", "base85"),
        (_xxd(LONGER), "hex"),
        ("Backup codes:\n" + _grouped(base64.b32encode(LONGER.encode()).decode(), 8), "base32"),
        ("key " + _grouped(base64.b32encode(LONGER.encode()).decode(), 4) + " (keep it)", "base32"),
        ('content: "' + "".join(f"\\{ord(char):x} " for char in LONGER) + '";', "hex"),
    ],
)
def test_more_encodings_are_read(text, applied):
    view = judged_view(text)
    assert view.applied == (applied,)
    assert LONGER in view.text


@pytest.mark.parametrize(
    "text",
    [
        "b85: not really",  # a key that names base85, a value that is not
        "The A85 motorway and the b85 bus",
        "00000000: 7f45 4c46 0201 0100 0000 0000 0000 0000\n00000010: 0300 3e00 0100 0000",  # ELF
        "a { color: \\31 23; }",  # one CSS escape, as selectors use them
        "ordinarylowercasewordsrunninglong",  # small letters, not base32 text
        "PLEASE READ THIS NOTE WITH CARE BEFORE YOU SIGN",  # capitals, not base32 text
        "Serial ABCD EFGH IJKL MNOP QRST",  # groups of one width that are not text
    ],
)
def test_what_only_looks_encoded_stays(text):
    assert judged_view(text).applied == ()
