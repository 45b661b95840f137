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

__all__ = ["EventFramer"]

_CR, _LF = 0x0D, 0x0A


class EventFramer:
    """Incremental: feed chunks of any size; get back each event's bytes once it ended."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._scanned = 0  # bytes of `_buffer` already split into lines
        self._line_start = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """The events `chunk` completed, each with its closing blank line."""
        if not chunk:
            return []
        buffer = self._buffer
        buffer += chunk
        frames: list[bytes] = []
        block_start = 0
        index = self._scanned
        size = len(buffer)
        while index < size:
            byte = buffer[index]
            if byte != _CR and byte != _LF:
                index += 1
                continue
            if byte == _CR:
                if index + 1 == size:
                    break  # a CR at the end may be the first half of a CRLF
                end = index + 2 if buffer[index + 1] == _LF else index + 1
            else:
                end = index + 1
            if index == self._line_start:  # an empty line ends the event
                frames.append(bytes(buffer[block_start:end]))
                block_start = end
            self._line_start = end
            index = end
        del buffer[:block_start]
        self._scanned = index - block_start
        self._line_start -= block_start
        return frames

    def flush(self) -> list[bytes]:
        """The stream ended: whatever is left, an event without its blank line."""
        rest = bytes(self._buffer)
        self._buffer = bytearray()
        self._scanned = self._line_start = 0
        return [rest] if rest else []
