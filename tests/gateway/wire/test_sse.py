from __future__ import annotations

import itertools

import pytest

from gateway.wire import sse
from gateway.wire.sse import DONE, SSEDecoder, SSEEvent, encode_event

LINE_ENDINGS = pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])


def decode(*chunks: bytes) -> list[SSEEvent]:
    """Feeds every chunk, then flushes; the flush must add nothing to a whole stream."""
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.flush()


def lines(*text: str, eol: str = "\n") -> bytes:
    return "".join(line + eol for line in text).encode()


def sample_stream(eol: str) -> bytes:
    # Every feature the decoder has, plus multi-byte characters a split can land inside.
    return lines(
        ": keep-alive",
        "event: greeting",
        "id: 7",
        "retry: 1500",
        "data: héllo",
        "data:wörld €",
        "",
        "data: 😀 second",
        ": comment in the middle",
        "data",
        "",
        "event: ignored, no data",
        "",
        'data: {"choices": [{"delta": {"content": "a:b"}}]}',
        "",
        f"data: {DONE}",
        "",
        eol=eol,
    )


SAMPLE_EVENTS = [
    SSEEvent("héllo\nwörld €", event="greeting", id="7", retry=1500),
    SSEEvent("😀 second\n", id="7"),
    SSEEvent('{"choices": [{"delta": {"content": "a:b"}}]}', id="7"),
    SSEEvent(DONE, id="7"),
]


def test_module_exports_are_sorted_and_exist() -> None:
    assert sse.__all__ == sorted(sse.__all__)
    assert all(hasattr(sse, name) for name in sse.__all__)


@LINE_ENDINGS
def test_sample_stream_in_one_feed(eol: str) -> None:
    assert decode(sample_stream(eol)) == SAMPLE_EVENTS


@LINE_ENDINGS
def test_every_single_split_point_gives_the_same_events(eol: str) -> None:
    stream = sample_stream(eol)
    for cut in range(len(stream) + 1):
        assert decode(stream[:cut], stream[cut:]) == SAMPLE_EVENTS, f"split at byte {cut}"


@LINE_ENDINGS
def test_every_pair_of_split_points_gives_the_same_events(eol: str) -> None:
    stream = sample_stream(eol)
    for first, second in itertools.combinations(range(len(stream) + 1), 2):
        chunks = (stream[:first], stream[first:second], stream[second:])
        assert decode(*chunks) == SAMPLE_EVENTS, f"split at bytes {first} and {second}"


@LINE_ENDINGS
def test_byte_by_byte_feed_gives_the_same_events(eol: str) -> None:
    stream = sample_stream(eol)
    assert decode(*(stream[i : i + 1] for i in range(len(stream)))) == SAMPLE_EVENTS


@LINE_ENDINGS
def test_events_arrive_as_soon_as_their_blank_line_does(eol: str) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(f"data: a{eol}".encode()) == []
    assert decoder.feed(eol.encode()) == [SSEEvent("a")]
    assert decoder.feed(f"data: b{eol}{eol}data: c{eol}{eol}".encode()) == [
        SSEEvent("b"),
        SSEEvent("c"),
    ]


def test_mixed_line_endings_in_one_stream() -> None:
    stream = b"data: a\rdata: b\r\ndata: c\n\r\ndata: d\r\rdata: e\n\n"
    assert decode(stream) == [SSEEvent("a\nb\nc"), SSEEvent("d"), SSEEvent("e")]


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        # CR ending one chunk and LF starting the next are a single line ending.
        ((b"data: a\r", b"\ndata: b\r\n\r\n"), [SSEEvent("a\nb")]),
        ((b"data: a\r", b"\n", b"data: b\n\n"), [SSEEvent("a\nb")]),
        ((b"data: a\r", b"", b"\ndata: b\n\n"), [SSEEvent("a\nb")]),
        ((b"data: a\r\n\r", b"\ndata: b\n\n"), [SSEEvent("a"), SSEEvent("b")]),
        # Two CRs are two line endings, however they are split.
        ((b"data: a\r", b"\rdata: b\n\n"), [SSEEvent("a"), SSEEvent("b")]),
        ((b"data: a\r", b"\r", b"\ndata: b\n\n"), [SSEEvent("a"), SSEEvent("b")]),
        # An LF after LF is a blank line, not half of a CRLF.
        ((b"data: a\n", b"\ndata: b\n\n"), [SSEEvent("a"), SSEEvent("b")]),
    ],
    ids=["cr|lf", "cr|lf|", "cr|empty|lf", "crlfcr|lf", "cr|cr", "cr|cr|lf", "lf|lf"],
)
def test_cr_and_lf_split_across_feeds(chunks: tuple[bytes, ...], expected: list[SSEEvent]) -> None:
    assert decode(*chunks) == expected


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        (b": keep-alive\n\n", []),
        (b":\n\n", []),
        (b":data: hidden\n\n", []),
        (b"data: a\n: between\ndata: b\n\n", [SSEEvent("a\nb")]),
        (b": before\ndata: a\n\n: after\n\n", [SSEEvent("a")]),
    ],
    ids=["keep-alive", "bare-colon", "looks-like-data", "between", "around"],
)
def test_comments_are_ignored(stream: bytes, expected: list[SSEEvent]) -> None:
    assert decode(stream) == expected


@pytest.mark.parametrize(
    ("line", "data"),
    [
        (b"data: x", "x"),
        (b"data:x", "x"),
        (b"data:  x", " x"),
        (b"data: x ", "x "),
        (b"data:\tx", "\tx"),
        (b"data: ", ""),
        (b"data:", ""),
        (b"data", ""),
        (b"data: a:b: c", "a:b: c"),
        (b'data: {"a": 1}', '{"a": 1}'),
    ],
)
def test_field_value_parsing(line: bytes, data: str) -> None:
    assert decode(line + b"\n\n") == [SSEEvent(data)]


@pytest.mark.parametrize(
    ("stream", "data"),
    [
        (b"data: a\ndata: b\ndata: c\n\n", "a\nb\nc"),
        (b"data: a\ndata\n\n", "a\n"),
        (b"data\ndata: b\n\n", "\nb"),
        (b"data\ndata\n\n", "\n"),
        (b"data: a\nevent: e\ndata: b\n\n", "a\nb"),
    ],
)
def test_multiple_data_lines_join_with_lf(stream: bytes, data: str) -> None:
    [event] = decode(stream)
    assert event.data == data


@pytest.mark.parametrize(
    "stream",
    [
        b"event: update\n\n",
        b"id: 3\n\n",
        b"retry: 10\n\n",
        b"unknown: x\n\n",
        b"\n\n\n",
        b"Data: wrong case\n\n",
        b" data: leading space makes another field\n\n",
    ],
)
def test_blocks_without_data_are_not_dispatched(stream: bytes) -> None:
    assert decode(stream) == []


def test_event_type_does_not_leak_from_an_undispatched_block() -> None:
    assert decode(b"event: stale\n\ndata: x\n\n") == [SSEEvent("x")]


@pytest.mark.parametrize(
    ("field", "event"),
    [
        (b"event: delta", "delta"),
        (b"event:delta", "delta"),
        (b"event: ", None),
        (b"event", None),
        (b"event: first\nevent: second", "second"),
    ],
)
def test_event_type(field: bytes, event: str | None) -> None:
    assert decode(field + b"\ndata: x\n\n") == [SSEEvent("x", event=event)]


def test_unknown_fields_are_ignored() -> None:
    stream = b"foo: bar\ndata: x\nbaz\nDATA: y\n\n"
    assert decode(stream) == [SSEEvent("x")]


@pytest.mark.parametrize(
    ("value", "retry"),
    [
        (b"1500", 1500),
        (b"0", 0),
        (b"007", 7),
        (b"99999999999999999999", 99999999999999999999),
        (b"", None),
        (b"abc", None),
        (b"10a", None),
        (b"-1", None),
        (b"+1", None),
        (b"1.5", None),
        (b"1 000", None),
        (b" 10", None),  # the second space is part of the value
        (b"10 ", None),
        ("\u0661\u0660".encode(), None),  # Arabic-Indic 10: str.isdigit() alone takes it
        ("²".encode(), None),
    ],
)
def test_retry_must_be_ascii_digits(value: bytes, retry: int | None) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"retry: " + value + b"\ndata: x\n\n") == [SSEEvent("x", retry=retry)]
    assert decoder.retry == retry


def test_retry_belongs_to_its_block_but_the_decoder_remembers_it() -> None:
    decoder = SSEDecoder()
    assert decoder.retry is None
    assert decoder.feed(b"retry: 100\n\n") == []
    assert decoder.retry == 100
    assert decoder.feed(b"data: a\n\n") == [SSEEvent("a")]
    assert decoder.feed(b"retry: 200\ndata: b\n\n") == [SSEEvent("b", retry=200)]
    assert decoder.feed(b"retry: bad\ndata: c\n\n") == [SSEEvent("c")]
    assert decoder.retry == 200


@pytest.mark.parametrize(
    ("stream", "ids"),
    [
        (b"data: a\n\n", [None]),
        (b"id: 1\ndata: a\n\n", ["1"]),
        (b"id:1\ndata: a\n\ndata: b\n\n", ["1", "1"]),  # the last event ID persists
        (b"id: 1\ndata: a\n\nid: 2\ndata: b\n\n", ["1", "2"]),
        (b"id: 1\ndata: a\n\nid\ndata: b\n\n", ["1", ""]),  # an empty id resets it
        (b"id: 1\ndata: a\n\nid: 2\0\ndata: b\n\n", ["1", "1"]),  # NUL: field ignored
        (b"id: 5\n\ndata: a\n\n", ["5"]),  # set even by a block that is not dispatched
    ],
)
def test_last_event_id(stream: bytes, ids: list[str | None]) -> None:
    assert [event.id for event in decode(stream)] == ids


@pytest.mark.parametrize(
    "chunks",
    [
        (b"\xef\xbb\xbfdata: a\n\n",),
        (b"\xef", b"\xbb\xbfdata: a\n\n"),
        (b"\xef\xbb", b"\xbf", b"data: a\n\n"),
        (b"\xef\xbb\xbfdata: a",),  # and through flush
    ],
)
def test_a_leading_byte_order_mark_is_skipped(chunks: tuple[bytes, ...]) -> None:
    assert decode(*chunks) == [SSEEvent("a")]


def test_only_the_first_byte_order_mark_is_skipped() -> None:
    # The second one makes "\ufeffdata" an unknown field name.
    assert decode(b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n") == [SSEEvent("b")]
    assert decode(b"data: a\n\n\xef\xbb\xbfdata: b\n\n") == [SSEEvent("a")]


@pytest.mark.parametrize("char", ["é", "€", "😀", "𝄞"])
def test_a_character_split_across_feeds_is_reassembled(char: str) -> None:
    encoded = char.encode()
    assert len(encoded) > 1
    for cut in range(1, len(encoded)):
        chunks = (b"data: <" + encoded[:cut], encoded[cut:] + b">\n\n")
        assert decode(*chunks) == [SSEEvent(f"<{char}>")], f"split at byte {cut}"


def test_invalid_utf8_becomes_replacement_characters() -> None:
    assert decode(b"data: a\xffb\xe2\x82\n\n") == [SSEEvent("a\ufffdb\ufffd")]


def test_only_cr_and_lf_end_lines() -> None:
    # str.splitlines would break on each of these; SSE does not.
    data = "a\x0bb\x0cc\x1cd\x1de\x1ef\x85g\u2028h\u2029i"
    assert decode(f"data: {data}\n\n".encode()) == [SSEEvent(data)]


def test_a_long_line_in_tiny_chunks() -> None:
    payload = "x" * 10_000 + "é"
    stream = f"data: {payload}\n\n".encode()
    assert decode(*(stream[i : i + 3] for i in range(0, len(stream), 3))) == [SSEEvent(payload)]


def test_empty_feeds_change_nothing() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"") == []
    assert decoder.feed(b"data: a") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\n\n") == [SSEEvent("a")]
    assert decoder.feed(b"") == []


@pytest.mark.parametrize(
    ("stream", "fed", "flushed"),
    [
        (b"data: a", [], [SSEEvent("a")]),
        (b"data: a\n", [], [SSEEvent("a")]),
        (b"data: a\r", [], [SSEEvent("a")]),
        (b"data: a\r\n", [], [SSEEvent("a")]),
        (b"data: a\ndata: b", [], [SSEEvent("a\nb")]),
        (b"event: e\nid: 1\nretry: 5\ndata: a", [], [SSEEvent("a", "e", "1", 5)]),
        (b"data: a\n\ndata: b", [SSEEvent("a")], [SSEEvent("b")]),
        (b"data: a\n\n", [SSEEvent("a")], []),
        (b"data: a\r\n\r\n", [SSEEvent("a")], []),
        (b"", [], []),
        (b": comment", [], []),
        (b"event: e\nid: 1", [], []),
        (b"data: a\n: comment", [], [SSEEvent("a")]),
        (b"data: caf\xc3", [], [SSEEvent("caf\ufffd")]),  # a truncated character
    ],
)
def test_flush_dispatches_an_unterminated_event(
    stream: bytes, fed: list[SSEEvent], flushed: list[SSEEvent]
) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(stream) == fed
    assert decoder.flush() == flushed
    assert decoder.flush() == []


def test_flush_leaves_the_decoder_ready_for_more() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"id: 9\ndata: a\r")
    assert decoder.flush() == [SSEEvent("a", id="9")]
    assert decoder.feed(b"\ndata: b\n\n") == [SSEEvent("b", id="9")]
    assert decoder.flush() == []


@pytest.mark.parametrize(
    ("data", "event", "expected"),
    [
        ("hello", None, b"data: hello\n\n"),
        ("", None, b"data: \n\n"),
        ("a\nb", None, b"data: a\ndata: b\n\n"),
        ("a\r\nb\rc", None, b"data: a\ndata: b\ndata: c\n\n"),
        ("a\n", None, b"data: a\ndata: \n\n"),
        ("\n", None, b"data: \ndata: \n\n"),
        ("x", "delta", b"event: delta\ndata: x\n\n"),
        ("x", "", b"event: \ndata: x\n\n"),
        ("é😀", None, "data: é😀\n\n".encode()),
        (DONE, None, b"data: [DONE]\n\n"),
    ],
)
def test_encode_event(data: str, event: str | None, expected: bytes) -> None:
    assert encode_event(data, event=event) == expected


@pytest.mark.parametrize("event", ["a\nb", "a\rb", "a\r\n"])
def test_encode_event_refuses_a_multi_line_event_type(event: str) -> None:
    with pytest.raises(ValueError, match="cannot span lines"):
        encode_event("x", event=event)


ROUND_TRIP_DATA = [
    "hello",
    "",
    " leading space",
    "trailing space ",
    "a\nb\nc",
    "\n",
    "\n\nx\n\n",
    ": not a comment",
    "data: nested",
    '{"choices": [{"delta": {"content": "hi"}}]}',
    "é😀€",
    "\x0b\x0c\u2028",
    DONE,
]


@pytest.mark.parametrize("data", ROUND_TRIP_DATA)
@pytest.mark.parametrize("event", [None, "delta", "with space"])
def test_encode_decode_round_trip(data: str, event: str | None) -> None:
    assert decode(encode_event(data, event=event)) == [SSEEvent(data, event=event)]


def test_round_trip_turns_every_line_ending_into_lf() -> None:
    assert decode(encode_event("a\r\nb\rc\nd")) == [SSEEvent("a\nb\nc\nd")]


def test_round_trip_of_many_events_split_everywhere() -> None:
    stream = b"".join(encode_event(data) for data in ROUND_TRIP_DATA)
    expected = [SSEEvent(data) for data in ROUND_TRIP_DATA]
    for cut in range(len(stream) + 1):
        assert decode(stream[:cut], stream[cut:]) == expected, f"split at byte {cut}"


def test_events_are_frozen_values() -> None:
    event = SSEEvent("a", event="e", id="1", retry=2)
    assert event == SSEEvent("a", "e", "1", 2)
    assert event != SSEEvent("a", "e", "1", 3)
    with pytest.raises(AttributeError):
        event.data = "b"  # type: ignore[misc]


def test_unknown_fields_are_ignored_and_counted() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"<html><body>oops</body></html>\ndata: x\n\n")
    events += decoder.feed(b"retry: soon\n: comment\nid: 1\nevent: e\ndata: y\n\n")
    assert [event.data for event in events] == ["x", "y"]
    assert decoder.ignored_lines == 1
    assert decoder.retry is None


def test_discard_drops_the_event_a_cut_off_stream_ended_in() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: a\n\ndata: {"half": ') == [SSEEvent("a")]
    decoder.discard()
    assert decoder.flush() == []
    assert decoder.feed(b"data: b\n\n") == [SSEEvent("b")]
