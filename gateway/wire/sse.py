"""Server-Sent Events codec, after the WHATWG EventSource spec. Pure code.

>>> decoder = SSEDecoder()
>>> decoder.feed(b"data: hel") + decoder.feed(b"lo\\n\\n")
[SSEEvent(data='hello', event=None, id=None, retry=None)]
>>> encode_event("hello")
b'data: hello\\n\\n'
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DONE", "SSEDecoder", "SSEEvent", "encode_event"]

DONE = "[DONE]"
"""The `data` of OpenAI's last stream event. It is a sentinel, not JSON."""

_BOM = b"\xef\xbb\xbf"
_LINE_ENDINGS = (b"\n", b"\r")


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event. `event` is None for the default type, "message"."""

    data: str
    event: str | None = None
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Incremental decoder: feed it bytes as they arrive, in chunks of any size.

    As the spec says, `id` is the stream's last event ID, so it carries over to
    later events that have no `id:` line; `retry` is set only on the event whose
    block held it, and `decoder.retry` keeps the latest value, since a block
    with no `data:` is never dispatched. `ignored_lines` counts the lines with
    a field name the spec does not know, which it ignores.
    """

    def __init__(self) -> None:
        self._tail: list[bytes] = []  # an unfinished line, in pieces to avoid quadratic joins
        self._after_cr = False
        self._started = False
        self._data: list[str] = []
        self._event = ""
        self._last_event_id: str | None = None
        self._block_retry: int | None = None
        self._retry: int | None = None
        self.ignored_lines = 0

    @property
    def retry(self) -> int | None:
        """The latest reconnection time in milliseconds the server asked for."""
        return self._retry

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode `chunk` and return the events it completed."""
        if not chunk:
            return []
        if self._after_cr:
            self._after_cr = False
            # A CRLF split across two chunks is one line ending, not two.
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
                if not chunk:
                    return []
        # bytes.splitlines splits on \r\n, \r and \n only, whereas str.splitlines would
        # also split on \x0b, U+2028 and others. Neither \r nor \n occurs inside a
        # multi-byte UTF-8 sequence, so a character split across chunks waits in the tail.
        lines = chunk.splitlines()
        tail = None
        if chunk.endswith(_LINE_ENDINGS):
            self._after_cr = chunk[-1] == 0x0D
        else:
            tail = lines.pop()
        if self._tail and lines:
            self._tail.append(lines[0])
            lines[0] = b"".join(self._tail)
            self._tail = []
        if tail is not None:
            self._tail.append(tail)
        return self._process(lines)

    def discard(self) -> None:
        """End a stream that was cut off: what came of an unfinished event is dropped, as
        the spec drops the event a stream ends in (`flush` is for a stream that ended)."""
        self._tail = []
        self._after_cr = False
        self._data, self._event, self._block_retry = [], "", None

    def flush(self) -> list[SSEEvent]:
        """End the stream, dispatching an event left without its closing blank line.

        The spec discards such an event. Some OpenAI-compatible servers close the
        stream right after the last `data:` line, so this deviates on purpose.
        """
        lines = [b"".join(self._tail)] if self._tail else []
        self._tail = []
        self._after_cr = False
        events = self._process(lines)
        event = self._dispatch()
        if event is not None:
            events.append(event)
        return events

    def _process(self, lines: list[bytes]) -> list[SSEEvent]:
        if not self._started and lines:
            self._started = True
            if lines[0].startswith(_BOM):
                lines[0] = lines[0][len(_BOM) :]
        events: list[SSEEvent] = []
        for line in lines:
            if not line:
                event = self._dispatch()
                if event is not None:
                    events.append(event)
                continue
            if line[0] == 0x3A:  # ":" starts a comment, often a keep-alive
                continue
            name, _, raw = line.partition(b":")
            if raw[:1] == b" ":
                raw = raw[1:]
            value = raw.decode("utf-8", errors="replace")
            if name == b"data":
                self._data.append(value)
            elif name == b"event":
                self._event = value
            elif name == b"id":
                if "\0" not in value:
                    self._last_event_id = value
            elif name == b"retry":
                if value.isascii() and value.isdigit():
                    self._block_retry = self._retry = int(value)
            else:
                # The spec ignores unknown fields; counting them tells a caller that
                # the body was likely not SSE at all (an HTML error page, say).
                self.ignored_lines += 1
        return events

    def _dispatch(self) -> SSEEvent | None:
        data, event, retry = self._data, self._event, self._block_retry
        self._data, self._event, self._block_retry = [], "", None
        if not data:
            return None
        return SSEEvent("\n".join(data), event or None, self._last_event_id, retry)


def encode_event(data: str, *, event: str | None = None) -> bytes:
    """Frame `data` as one event; each of its lines becomes a `data:` line.

    Any of `\\r\\n`, `\\r` or `\\n` in `data` ends a line, so a decoder gives
    back `data` with every line ending turned into `\\n`.
    """
    if "\r" in data:
        data = data.replace("\r\n", "\n").replace("\r", "\n")
    frame = "".join(f"data: {line}\n" for line in data.split("\n"))
    if event is not None:
        if "\n" in event or "\r" in event:
            raise ValueError(f"an event type cannot span lines: {event!r}")
        frame = f"event: {event}\n{frame}"
    return f"{frame}\n".encode()
