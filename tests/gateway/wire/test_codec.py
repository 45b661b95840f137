import json
import math
import re

import pytest

from gateway.wire.codec import loads, with_field


@pytest.mark.parametrize(
    "text",
    [
        b'{"model": "m", "messages": [{"role": "user", "content": "caf\\u00e9"}]}',
        '{"n": 1, "ok": true, "none": null, "list": [1.5, "x"]}',
        b"[1e400]",  # overflows to inf in both
    ],
)
def test_agrees_with_the_standard_library(text: bytes | str) -> None:
    assert loads(text) == json.loads(text)


def test_accepts_what_only_the_standard_library_accepts() -> None:
    value = loads(b'{"t": NaN, "i": -Infinity}')
    assert math.isnan(value["t"])
    assert value["i"] == -math.inf


def test_reads_integers_wider_than_64_bits_as_floats() -> None:
    # The documented difference from json.loads; re-encoded bodies use json instead.
    assert loads(b'{"seed": 18446744073709551616}') == {"seed": float(2**64)}


@pytest.mark.parametrize("text", [b"{not json", b"", b'{"a": 1', b"\xff\xfe"])
def test_bad_json_raises_value_error_with_the_standard_librarys_message(text: bytes) -> None:
    try:
        json.loads(text)
    except ValueError as exc:
        expected = exc
    with pytest.raises(type(expected), match=re.escape(str(expected))):
        loads(text)


@pytest.mark.parametrize(
    "text", [b"[" * 1025 + b"]" * 1025, b"[" * 100_000, b'{"a":' * 5000 + b"1" + b"}" * 5000]
)
def test_nesting_too_deep_for_either_parser_is_a_value_error(text: bytes) -> None:
    with pytest.raises(ValueError, match=r"nested too deeply|recursion|Expecting|Unterminated"):
        loads(text)


def test_with_field_keeps_wide_integers_exact() -> None:
    out = with_field(b'{"model": "a", "seed": 123456789012345678901234567890}', "model", "b")
    assert json.loads(out) == {"model": "b", "seed": 123456789012345678901234567890}


def test_with_field_refuses_what_it_cannot_re_encode() -> None:
    deep = b'{"model": "a", "x": ' + b"[" * 1000 + b"]" * 1000 + b"}"
    with pytest.raises(ValueError, match="nested too deeply"):
        with_field(deep, "model", "b")
