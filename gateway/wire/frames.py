"""Cutting an SSE byte stream into whole events, byte for byte. Pure code.

A gateway that holds events back and releases them later must send the
upstream's own bytes, not a re-encoding: `EventFramer` splits the stream at
the blank line that ends each event, keeping every byte (comments, `id:`
lines, `\\r\\n` endings), so the frames joined are the stream.

>>> framer = EventFramer()
>>> framer.feed(b"data: a\\n\\ndata: b")
[b'data: a\\n\\n']
>>> framer.flush()
[b'data: b']
"""

from __future__ import annotations

import re

__all__ = ["EventFramer"]

_CR = 0x0D
# A line ending, then another one: a blank line, which ends an event. A CR followed
# by a LF is one ending (CRLF), never a CR ending and then a blank line.
_BLANK_LINE = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r|\n)")
_ENDING = re.compile(rb"\r\n|\r|\n")


class EventFramer:
    """Incremental: feed chunks of any size; get back each event's bytes once it ended."""

    def __init__(self) -> None:
        self._buffer = b""
        self._scanned = 0  # no blank line starts before this offset of `_buffer`

    def feed(self, chunk: bytes) -> list[bytes]:
        """The events `chunk` completed, each with its closing blank line."""
        if not chunk:
            return []
        buffer = self._buffer + chunk
        frames: list[bytes] = []
        start = 0
        scan = self._scanned
        size = len(buffer)
        while start < size:
            # A blank line right where an event would start ends an (empty) event too.
            lead = _ENDING.match(buffer, start)
            found = lead if lead is not None else _BLANK_LINE.search(buffer, max(scan, start))
            if found is None:
                break
            end = found.end()
            if end == size and buffer[end - 1] == _CR:
                break  # a CR at the end may be the first half of a CRLF
            frames.append(buffer[start:end])
            start = end
        self._buffer = buffer[start:]
        # A blank line found later may begin up to three bytes before the end (CRLF, CR).
        self._scanned = max(0, len(self._buffer) - 3)
        return frames

    def flush(self) -> list[bytes]:
        """The stream ended: whatever is left, an event without its blank line."""
        rest = self._buffer
        self._buffer = b""
        self._scanned = 0
        return [rest] if rest else []
