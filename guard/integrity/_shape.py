"""A text's shape: its characters sorted into a few classes, for a quick first look.

`shape(text, codes)` is the text's bytes with each ASCII character replaced by its
class in `codes`, and every other character by the class of "?". Searching a shape
for a short byte string is much cheaper than running a pattern over the text, so a
fold first looks there for what it needs (b"a1": a letter beside a digit) and runs
its pattern only on a hit. A shape never misses what the pattern would find; it may
see what is not there.
"""

from __future__ import annotations

import string

__all__ = ["LETTERS", "shape", "table"]

LETTERS = string.ascii_letters


def table(default: str, classes: dict[str, str]) -> bytes:
    """A translation table: each character of `classes[name]` -> `name`, the rest -> `default`.

    >>> shape("W0men!", table(".", {"a": "Wmen", "1": "0"}))
    b'a1aaa.'
    """
    codes = bytearray(default.encode("ascii") * 256)
    for name, chars in classes.items():
        for char in chars:
            codes[ord(char)] = ord(name)
    return bytes(codes)


def shape(text: str, codes: bytes) -> bytes:
    """`text`'s classes under `codes` (a `table`), one byte a character."""
    return text.encode("ascii", "replace").translate(codes)
