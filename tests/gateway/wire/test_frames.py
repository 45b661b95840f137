"""`EventFramer`: an SSE byte stream cut into whole events, every byte kept."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.wire.frames import EventFramer
from gateway.wire.sse import SSEDecoder


def frames_of(chunks: list[bytes]) -> list[bytes]:
    framer = EventFramer()
    frames = [frame for chunk in chunks for frame in framer.feed(chunk)]
    return frames + framer.flush()


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        ([b"data: a\n\ndata: b\n\n"], [b"data: a\n\n", b"data: b\n\n"]),
        ([b"data: a\r\n\r\n"], [b"data: a\r\n\r\n"]),
        ([b"data: a\r", b"\n\r", b"\n"], [b"data: a\r\n\r\n"]),
        ([b"data: a\r\rdata: b\r\r"], [b"data: a\r\r", b"data: b\r\r"]),
        (
            [b": keep-alive\n\n", b"event: x\ndata: {}\n\n"],
            [b": keep-alive\n\n", b"event: x\ndata: {}\n\n"],
        ),
        ([b"data: a\n", b"\n"], [b"data: a\n\n"]),
        ([b"data: a"], [b"data: a"]),  # no closing blank line: the rest, at the end
        ([b"\n", b"data: a\n\n"], [b"\n", b"data: a\n\n"]),
        ([b"data: caf\xc3", b"\xa9\n\n"], [b"data: caf\xc3\xa9\n\n"]),
        ([], []),
    ],
)
def test_cuts_at_the_blank_line_ending_each_event(
    chunks: list[bytes], expected: list[bytes]
) -> None:
    assert frames_of(chunks) == expected


_PIECES = st.sampled_from(
    [
        b"data: x",
        b'data: {"a": 1}',
        b"event: e",
        b": c",
        b"id: 7",
        b"\n",
        b"\r",
        b"\r\n",
        b"\xc3\xa9",
    ]
)


@given(st.lists(_PIECES, max_size=40), st.lists(st.integers(0, 200), max_size=6))
def test_frames_are_the_stream_and_decode_as_it_does(pieces: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(pieces)
    points = sorted({min(cut, len(stream)) for cut in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    frames = frames_of(chunks)
    assert b"".join(frames) == stream
    whole, framed = SSEDecoder(), SSEDecoder()
    expected = whole.feed(stream) + whole.flush()
    got = [event for frame in frames for event in framed.feed(frame)] + framed.flush()
    assert got == expected
    # Every frame but the last ends an event block: none ends inside a line.
    for frame in frames[:-1]:
        assert frame.endswith((b"\n", b"\r"))
