"""The tap that reads a streamed answer's text as it passes: `StreamTap`.

Every surface streams SSE; what its events mean is the surface's `StreamReader`.
"""

from __future__ import annotations

import time

from gateway.proxy.surfaces import Facts, StreamReader
from gateway.wire.sse import SSEDecoder

__all__ = ["StreamTap"]


class StreamTap:
    """Reads the text out of an SSE byte stream as it passes, without altering it.

    `readable` says whether the stream could be read: every event was one the
    surface's reader understood, and every line was an SSE line. With `parse`
    False it only times the first chunk (a stream nobody scores).
    """

    def __init__(self, reader: StreamReader, *, parse: bool = True) -> None:
        self.decoder = SSEDecoder()
        self.reader = reader
        self.parse = parse
        self.first_chunk_at: float | None = None

    @property
    def readable(self) -> bool:
        return self.reader.readable and not self.decoder.ignored_lines

    @property
    def done(self) -> bool:
        return self.reader.done

    def arrived(self) -> None:
        if self.first_chunk_at is None:
            self.first_chunk_at = time.perf_counter()

    def feed(self, data: bytes) -> None:
        if self.first_chunk_at is None:  # `arrived()`, inlined: this runs per chunk
            self.first_chunk_at = time.perf_counter()
        if not self.parse:
            return
        for event in self.decoder.feed(data):
            self.reader.add(event.event, event.data)

    def close(self, *, cut: bool = False) -> None:
        """The stream is over. `cut`: it was cut off (the upstream broke, or it is no
        longer read), so an event it ended in is half an event, and is dropped rather
        than read as an answer that cannot be parsed."""
        if cut:
            self.decoder.discard()
            return
        for event in self.decoder.flush():
            self.reader.add(event.event, event.data)

    def texts(self) -> list[str]:
        """The texts read so far (none from a tap that does not parse)."""
        return self.reader.texts() if self.parse else []

    def facts(self) -> Facts:
        """The answer's facts read so far (none from a tap that does not parse)."""
        return self.reader.facts() if self.parse else Facts()
