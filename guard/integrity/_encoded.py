"""Base64, base32 and hex runs that decode to readable text, judged as that text.

A judge shown "V29tZW4gYXJlIHRvbyBlbW90aW9uYWw=" sees a blob, and the model that
wrote it, or the agent that reads it, sees a sentence. A run is decoded when:

- it is one unbroken run of 16..`LONGEST` characters of the base64 alphabet
  (standard or URL-safe, not both, padding allowed), or of hex digits (even
  length, "0x" allowed), or eight or more hex bytes set apart by spaces or colons
  ("57 6f 6d 65 6e ..."), or eight or more escaped bytes or code points as source
  code writes them ("\\x57\\x6f...", "\\u0057\\u006f..."), or eight or more code
  points as Unicode writes them ("U+0057 U+006F ...");
- a base64 or hex run may be glued to a key ("token=" then the run, as in a URL's
  query or a config line): the key stays, the run after it is read;
- a run that is not base64 text may be base32 (RFC 4648: capitals and 2..7, or all
  in small letters, padding allowed), also in groups of one width set apart by
  spaces, as backup codes are shown ("JFWW22LH OJQW45DT ...");
- base85 after a key that names it ("b85: ...", "ascii85=..."; RFC 1924's alphabet or
  Ascii85's), and Ascii85 between its delimiters ("<~...~>");
- a hex dump as xxd writes it, without its text column ("00000000: 4173 6961 ...");
- eight or more code points as CSS escapes them ("\\57 \\6f \\6d ...");
- a run may be wrapped over lines, as e-mail and PEM wrap base64: lines of one
  length (a multiple of 4, or of 8 for base32), then a last line no longer, are
  read as one run;
- eight or more bytes written "0x41 0x73 ..." (or with commas), as code lists them;
- six or more HTML character references in a row ("&#87;&#111;", "&#x57;");
- a run of a URL's characters with three or more percent-escaped bytes in it
  ("%57%6F%6D%65%6E%20...", "Women%20are%20...") is read as the text they escape;
- six or more bytes in binary digits ("01010111 01101111 ..."), and eight or more
  letters of Morse code ("-- . -. / .- .-. ."), read in lower case;
- its bytes are UTF-8 text of printable characters (tabs and line breaks allowed),
  at least half of its visible characters letters.

A run that is all hex digits is read as hex only. Hashes, UUIDs, keys and random
tokens decode to bytes that are not such text, so they stay as they are; so do
JWTs, whose JSON is mostly punctuation. Decoding is one level: decoded text is not
decoded again. The runs of one text are tried until `MOST_CHARS` characters of them
have been: a bound on the work, not on where in an answer a run may hide.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import unicodedata
from collections.abc import Callable
from typing import Literal
from urllib.parse import unquote_to_bytes

from guard.integrity._shape import LETTERS, shape, table

__all__ = ["LONGEST", "MOST_CHARS", "Encoding", "decode_runs"]

Encoding = Literal["base64", "base32", "base85", "hex", "percent", "html", "binary", "morse"]

LONGEST = 8192
MOST_CHARS = 65536

# Runs are found in the text's shape (`guard.integrity._shape`): a run of base64 is a
# run of "a" at least `_SHORTEST` long; hex bytes set apart are "hh:hh:...".
_SHORTEST = b"a" * 16
_RUN_SHAPE = table(" ", {"a": f"{LETTERS}0123456789+/_=-"})
_PAIRS_SHAPE = table(".", {"h": "0123456789abcdefABCDEF", ":": " :"})
_PAIRS_HINT = b"hh:" * 7 + b"hh"
_PAIRS = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{2}[ :]){7,}[0-9A-Fa-f]{2}(?![\w:])")
_HEX = re.compile(r"(?:0x)?((?:[0-9A-Fa-f]{2})+)")
_STANDARD = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_URL_SAFE = re.compile(r"[A-Za-z0-9_-]+={0,2}")
_KEYED = re.compile(r"([A-Za-z][\w.-]{0,63}=)([A-Za-z0-9+/_-]{16,}={0,2})")
_BASE32 = re.compile(r"[A-Z2-7]{16,}={0,6}")
# Base32 in groups of one width set apart by spaces, as backup codes and keys are shown
# ("JFWW22LH OJQW45DT ..."), and where such a run may be (two groups in a row).
_GROUPED = re.compile(r"(?<![\w=])(?:[A-Z2-7]{4,8} ){3,}[A-Z2-7]{1,8}(?: ?=){0,7}(?![\w=])")
_GROUPED_SHAPE = table(".", {"A": "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", " ": " "})
_GROUPED_HINT = b"AAAA AAAA"
# Two or more lines of the base64 alphabet, the first at least 16 long (`_wrapped` checks
# that they are wrapped: every line but the last of one length).
_WRAPPED = re.compile(
    r"(?<![\w+/=-])[A-Za-z0-9+/]{16,}(?:\r?\n[A-Za-z0-9+/]{2,})+={0,6}(?![\w+/=-])"
)
_ESCAPED = re.compile(r"(?:\\x[0-9A-Fa-f]{2}){8,}|(?:\\u[0-9A-Fa-f]{4}){8,}")
# Eight or more code points as CSS escapes them ("\\57 \\6f \\6d"): a backslash, one to six
# hex digits, and the space that ends an escape.
_CSS_ESCAPED = re.compile(r"(?:\\[0-9A-Fa-f]{1,6} ){7,}\\[0-9A-Fa-f]{1,6} ?")
_CSS_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{1,6}) ?")
# Base85 after a key that names it ("b85: ...", "ascii85=..."), or Ascii85 between its
# delimiters ("<~...~>").
_BASE85 = re.compile(
    r"(?i:\b(?:b|base|ascii|a)85)[\"']?[ \t]*[:=][ \t]*[\"']?([!-~]{10,}?)[\"']?(?=\s|$)"
    r"|<~([!-u\sz]{10,}?)~>"
)
# A hex dump as xxd writes it without its text column: an offset, then groups of hex.
_DUMP = re.compile(r"(?:^[0-9a-f]{7,8}: (?:[0-9a-f]{2,4} ?){1,8}[ \t]*(?:\n|$)){2,}", re.MULTILINE)
_DUMP_OFFSET = re.compile(r"^[0-9a-f]{7,8}: ", re.MULTILINE)
_PREFIXED = re.compile(r"(?<!\w)(?:0[xX][0-9A-Fa-f]{2}[ ,]+){7,}0[xX][0-9A-Fa-f]{2}(?!\w)")
_ENTITIES = re.compile(r"(?:&#(?:\d{1,7}|[xX][0-9A-Fa-f]{1,6});?){6,}")
_PERCENT = re.compile(r"[\w.~+-]*(?:%[0-9A-Fa-f]{2}[\w.~+-]*){3,}")
# Eight or more Unicode code points written U+0057 U+006F ... (a space or comma apart).
_CODE_POINTS = re.compile(r"(?<!\w)(?:[Uu]\+[0-9A-Fa-f]{4,6}[ ,]+){7,}[Uu]\+[0-9A-Fa-f]{4,6}(?!\w)")
_CODE_POINT = re.compile(r"[Uu]\+([0-9A-Fa-f]{4,6})")
_EVEN_HEX = re.compile("(?:[0-9A-Fa-f]{2})+")
# Six or more bytes written as eight binary digits each, apart or not.
_BINARY = re.compile(r"(?<![01])(?:[01]{8}[ ]?){5,}[01]{8}(?![01])")
# Eight or more Morse letters, one space between letters and a slash, a bar or three
# spaces between words; dots and dashes as typed or as typography writes them.
_DOTS, _DASHES = ".\u00b7\u2022", "-\u2212\u2013\u2014_"
_MORSE_LETTER = f"[{re.escape(_DOTS + _DASHES)}]{{1,6}}"
# A dot beside a dash: where a Morse run may be.
_MORSE_HINT = re.compile(
    f"[{re.escape(_DOTS)}][{re.escape(_DASHES)}]|[{re.escape(_DASHES)}][{re.escape(_DOTS)}]"
)
_MORSE = re.compile(
    f"(?<![^\\s/|]){_MORSE_LETTER}(?:(?: | ?[/|] ?|   ){_MORSE_LETTER}){{7,}}(?![^\\s/|])"
)
# The letters and digits of International Morse code (ITU-R M.1677-1, part 1).
_MORSE_LETTERS = (
    ".- -... -.-. -.. . ..-. --. .... .. .--- -.- .-.. -- -. --- .--. --.- .-. ... - ..- "
    "...- .-- -..- -.-- --.. ----- .---- ..--- ...-- ....- ..... -.... --... ---.. ----."
)
_MORSE_CODE = dict(
    zip(_MORSE_LETTERS.split(" "), "abcdefghijklmnopqrstuvwxyz0123456789", strict=True)
)
_MORSE_WORDS = re.compile(r" ?[/|] ?|   ")
_MORSE_MARKS = str.maketrans({**dict.fromkeys(_DOTS[1:], "."), **dict.fromkeys(_DASHES[1:], "-")})


def _readable(data: bytes) -> str | None:
    try:
        return _legible(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def _legible(text: str) -> str | None:
    visible = [char for char in text if not char.isspace()]
    if len(visible) < 4 or not all(
        char.isprintable() or char in "\t\n\r" or unicodedata.category(char) == "Cf"
        for char in text
    ):
        return None
    letters = sum(char.isalpha() for char in visible)
    return text if letters * 2 >= len(visible) else None


def _from_base64(run: str) -> str | None:
    if _STANDARD.fullmatch(run):
        altchars = b"+/"
    elif _URL_SAFE.fullmatch(run):
        altchars = b"-_"
    else:
        return None
    body = run.rstrip("=")
    if len(body) % 4 == 1:
        return None
    try:
        data = base64.b64decode(body + "=" * (-len(body) % 4), altchars=altchars, validate=True)
    except binascii.Error:
        return None
    return _readable(data)


def _from_base32(run: str) -> str | None:
    if run.islower():  # the alphabet in small letters, as some libraries write it
        run = run.upper()
    if not _BASE32.fullmatch(run):
        return None
    body = run.rstrip("=")
    try:
        return _readable(base64.b32decode(body + "=" * (-len(body) % 8)))
    except binascii.Error:
        return None


def _unwrapped(run: str) -> tuple[str, Encoding] | None:
    """A run wrapped over lines, read as one run if its lines are wrapped at one width."""
    lines = run.replace("\r\n", "\n").split("\n")
    width = len(lines[0])
    if any(len(line) != width for line in lines[1:-1]) or len(lines[-1]) > width:
        return None
    joined = "".join(lines)
    if width % 4 == 0 and (text := _from_base64(joined)) is not None:
        return text, "base64"
    if width % 8 == 0 and (text := _from_base32(joined)) is not None:
        return text, "base32"
    return None


def _from_groups(run: str) -> str | None:
    """Base32 in groups of one width (the last no wider), read as one run; its padding
    may be a group of its own."""
    groups = [group for group in run.replace("=", "").split(" ") if group]
    width = len(groups[0])
    if any(len(group) != width for group in groups[1:-1]) or len(groups[-1]) > width:
        return None
    return _from_base32("".join(groups))


def _unescaped(run: str) -> str | None:
    if run[1] == "x":
        return _readable(bytes.fromhex(run.replace("\\x", "")))
    try:
        text = "".join(chr(int(run[at : at + 4], 16)) for at in range(2, len(run), 6))
        return _legible(text.encode("utf-16", "surrogatepass").decode("utf-16"))
    except UnicodeDecodeError:
        return None  # a lone surrogate


def _from_morse(run: str) -> str | None:
    words = []
    for word in _MORSE_WORDS.split(run.translate(_MORSE_MARKS)):
        letters = [_MORSE_CODE.get(code, "") for code in word.split()]
        if not all(letters):
            return None
        words.append("".join(letters))
    return _legible(" ".join(words))


def _from_css(run: str) -> str | None:
    try:
        return _legible("".join(chr(int(point, 16)) for point in _CSS_ESCAPE.findall(run)))
    except (ValueError, OverflowError):
        return None  # past the last code point


def _a85(data: bytes) -> bytes:
    return base64.a85decode(data, ignorechars=b" \t\r\n")


def _from_base85(run: str) -> str | None:
    """A base85 run after its key (RFC 1924's alphabet, or Ascii85's), or Ascii85 between
    its delimiters; the key stays."""
    found = _BASE85.fullmatch(run)
    if found is None:
        return None
    decoders: list[Callable[[bytes], bytes]]
    if (body := found.group(2)) is not None:
        decoders, key = [_a85], ""
    else:
        body, key = found.group(1), run[: found.start(1)]
        decoders = [base64.b85decode, _a85]
    for decoder in decoders:
        try:
            text = _readable(decoder(body.encode("ascii")))
        except ValueError:
            continue
        if text is not None:
            return key + text
    return None


def _from_dump(run: str) -> str | None:
    return _readable(bytes.fromhex(re.sub(r"\s", "", _DUMP_OFFSET.sub("", run))))


def _decoded(run: str, pairs: bool) -> tuple[str, Encoding] | None:
    if _DUMP.fullmatch(run):
        text = _from_dump(run)
        return None if text is None else (text, "hex")
    if "85" in run[:12] or run.startswith("<~"):
        text = _from_base85(run)
        if text is not None:
            return text, "base85"
    if run[0] in "01" and _BINARY.fullmatch(run):
        digits = run.replace(" ", "")
        text = _readable(int(digits, 2).to_bytes(len(digits) // 8))
        return None if text is None else (text, "binary")
    if run[0] in _DOTS + _DASHES:
        text = _from_morse(run)
        return None if text is None else (text, "morse")
    if "\n" in run:
        return _unwrapped(run)
    if " " in run and _GROUPED.fullmatch(run):
        text = _from_groups(run)
        return None if text is None else (text, "base32")
    if run.startswith("&#"):
        text = _legible(html.unescape(run))
        return None if text is None else (text, "html")
    if run[:2] in ("0x", "0X") and (" " in run or "," in run):
        text = _readable(bytes.fromhex(re.sub("0[xX]|[ ,]", "", run)))
        return None if text is None else (text, "hex")
    if "%" in run:
        text = _readable(unquote_to_bytes(run.replace("+", " ")))
        return None if text is None else (text, "percent")
    if run.startswith("\\"):
        text = _unescaped(run) if run[1] in "xu" else _from_css(run)
        return None if text is None else (text, "hex")
    if keyed := _KEYED.fullmatch(run):
        value = keyed.group(2)
        # Hex digits are base64 letters too: a value that is not hex text may be base64.
        if _EVEN_HEX.fullmatch(value) and (text := _readable(bytes.fromhex(value))):
            return keyed.group(1) + text, "hex"
        text = _from_base64(value)
        return None if text is None else (keyed.group(1) + text, "base64")
    if run[:2] in ("U+", "u+"):
        text = _legible("".join(chr(int(point, 16)) for point in _CODE_POINT.findall(run)))
        return None if text is None else (text, "hex")
    if pairs:
        text = _readable(bytes.fromhex(re.sub("[ :]", "", run)))
        return None if text is None else (text, "hex")
    if hexadecimal := _HEX.fullmatch(run):
        text = _readable(bytes.fromhex(hexadecimal.group(1)))
        return None if text is None else (text, "hex")
    if re.fullmatch("(?:0x)?[0-9A-Fa-f]+", run):
        return None  # odd-length hex: a number or an id, not text
    if (text := _from_base64(run)) is not None:
        return text, "base64"
    text = _from_base32(run)
    return None if text is None else (text, "base32")


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int, bool]]:
    """Where `pattern` matches in `text`, as runs that are not hex bytes set apart."""
    return [(match.start(), match.end(), False) for match in pattern.finditer(text)]


def _runs(text: str) -> list[tuple[int, int, bool]]:
    """Where the candidate runs are: (start, end, whether it is hex bytes set apart);
    escaped runs start with a backslash."""
    found: list[tuple[int, int, bool]] = []
    runs = shape(text, _RUN_SHAPE)
    at = runs.find(_SHORTEST)
    while at >= 0:
        end = runs.find(b" ", at)
        end = len(runs) if end < 0 else end
        found.append((runs.rfind(b" ", 0, at) + 1, end, False))
        at = runs.find(_SHORTEST, end)
    if _PAIRS_HINT in shape(text, _PAIRS_SHAPE):
        found += [(match.start(), match.end(), True) for match in _PAIRS.finditer(text)]
    if "\\x" in text or "\\u" in text:
        found += _spans(_ESCAPED, text)
    if "\\" in text:
        found += _spans(_CSS_ESCAPED, text)
    if "85" in text or "<~" in text:
        found += _spans(_BASE85, text)
    if "0: " in text:
        found += _spans(_DUMP, text)
    if _GROUPED_HINT in shape(text, _GROUPED_SHAPE):
        found += _spans(_GROUPED, text)
    if "&#" in text:
        found += _spans(_ENTITIES, text)
    if "0x" in text or "0X" in text:
        found += _spans(_PREFIXED, text)
    if "%" in text:
        found += _spans(_PERCENT, text)
    if "U+" in text or "u+" in text:
        found += _spans(_CODE_POINTS, text)
    # A letter's byte starts 011 (or, past ASCII, holds 0111): a quick test for a run.
    if "0110" in text or "0111" in text:
        found += _spans(_BINARY, text)
    if ".-" in text or "-." in text or (not text.isascii() and _MORSE_HINT.search(text)):
        found += _spans(_MORSE, text)
    if found and "\n" in text:
        found += _spans(_WRAPPED, text)
    # Of two runs from one place, the longer first: a wrapped run before its first line.
    return sorted(found, key=lambda run: (run[0], -run[1]))


def decode_runs(text: str) -> tuple[str, frozenset[Encoding]]:
    """`text` with its encoded runs replaced by their text, and which encodings they were.

    >>> decode_runs("says V29tZW4gYXJlIHRvbyBlbW90aW9uYWw=")
    ('says Women are too emotional', frozenset({'base64'}))
    """
    found: set[Encoding] = set()
    pieces: list[str] = []
    last = tried = 0
    for start, end, pairs in _runs(text):
        tried += end - start
        if tried > MOST_CHARS:
            break
        decoded = (
            None if start < last or end - start > LONGEST else _decoded(text[start:end], pairs)
        )
        if decoded is None:
            continue
        pieces += [text[last:start], decoded[0]]
        found.add(decoded[1])
        last = end
    if not found:
        return text, frozenset()
    pieces.append(text[last:])
    return "".join(pieces), frozenset(found)
