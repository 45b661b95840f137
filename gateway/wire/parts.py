"""A text that arrives in parts: appended cheaply, joined once per read.

A stream's answer comes a few characters an event, and windowed enforcing reads
the whole text so far after every event. Joining every part on every read costs
the length of the answer times its number of parts: about a second of the event
loop for an answer of 100,000 characters in 4-character pieces
(`python -m bench.stream_texts`). Here a read joins only the parts that came since
the last one onto the text it returned then.
"""

from __future__ import annotations

__all__ = ["TextParts"]


class TextParts:
    """Parts of one text, in order; `text()` is their concatenation."""

    __slots__ = ("_joined", "_parts", "_text")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._text = ""
        self._joined = 0  # parts already in `_text`

    def append(self, part: str) -> None:
        self._parts.append(part)

    def __bool__(self) -> bool:
        return bool(self._parts)

    def text(self) -> str:
        parts = self._parts
        if self._joined < len(parts):
            if self._joined == len(parts) - 1:
                self._text += parts[-1]
            else:
                self._text += "".join(parts[self._joined :])
            self._joined = len(parts)
        return self._text
