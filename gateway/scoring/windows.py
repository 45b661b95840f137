"""An answer cut into windows as it arrives, for judging while it streams. Pure code.

`WindowSplitter` is offered the answer's texts (one per choice or output
message) after each stream event. A window closes once `window_chars` new
characters have come, at the end of an event (so it never splits an event, nor
a character inside one), preferably where a sentence or a line ends: past
`window_chars` it waits up to `margin` more characters for such an end. Each
window carries, per text, its new text and up to `context_chars` of the text
before it, which the judge reads as context only.

Windows that wait for the judge coalesce (`coalesce`): the next judgement
covers everything not yet judged, up to a bound, so a slow judge makes the
client wait for about one judgement, never for a queue.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Window", "WindowPart", "WindowSplitter", "coalesce", "ends_sentence"]

# Full stops, question and exclamation marks (CJK ones too: U+3002, U+FF01, U+FF1F,
# U+FF1B), colons, semicolons, the ellipsis; then what may close after them.
_SENTENCE_ENDS = frozenset(".!?;:\n\u3002\uff01\uff1f\uff1b\u2026")
_CLOSERS = "\"')]}\u00bb\u201d\u2019*_` \t"


def ends_sentence(text: str) -> bool:
    """Whether `text` ends where a sentence or a line does (closing quotes and
    brackets after the stop allowed)."""
    if text.endswith("\n"):
        return True
    stripped = text.rstrip(_CLOSERS)
    return bool(stripped) and stripped[-1] in _SENTENCE_ENDS


@dataclass(frozen=True, slots=True)
class WindowPart:
    """One text's share of a window: characters `start` to `end` of text `index`."""

    index: int
    start: int
    end: int
    text: str
    context: str  # up to `context_chars` of the text before `start`


@dataclass(frozen=True, slots=True)
class Window:
    """Characters `start` to `end` of the answer (its texts counted one after another),
    closed after the answer's first `events` stream events."""

    number: int
    start: int
    end: int
    events: int
    parts: tuple[WindowPart, ...]

    @property
    def chars(self) -> int:
        return self.end - self.start


class WindowSplitter:
    """Closes windows over an answer offered event by event."""

    def __init__(self, *, window_chars: int, context_chars: int, margin: int) -> None:
        if window_chars < 1 or context_chars < 0 or margin < 0:
            raise ValueError("window_chars must be positive, context_chars and margin not negative")
        self.window_chars = window_chars
        self.context_chars = context_chars
        self.margin = margin
        self._cut: list[int] = []  # per text, where the last window ended
        self._seen: list[int] = []  # per text, its length at the last offer
        # Per text, the events after which it grew and the length it grew to: how far the
        # stream may be released when a window ends a text short of its length.
        self._grew_at: list[list[int]] = []
        self._grew_to: list[list[int]] = []
        self._start = 0  # the answer's offset where the next window starts
        self.closed = 0  # windows closed so far

    def offer(self, texts: Sequence[str], events: int) -> Window | None:
        """The window the answer's `texts`, after `events` events, close; or None."""
        grown = [
            text
            for index, text in enumerate(texts)
            if len(text) > (self._seen[index] if index < len(self._seen) else 0)
        ]
        self._seen = [len(text) for text in texts]
        while len(self._grew_to) < len(texts):
            self._grew_at.append([])
            self._grew_to.append([])
        for index, text in enumerate(texts):
            lengths = self._grew_to[index]
            if not lengths or lengths[-1] != len(text):
                self._grew_at[index].append(events)
                lengths.append(len(text))
        if not grown:
            return None
        new = self._new_chars(texts)
        if new < self.window_chars:
            return None
        if new < self.window_chars + self.margin and not any(map(ends_sentence, grown)):
            return None
        return self._close(texts, events)

    def finish(self, texts: Sequence[str], events: int) -> Window | None:
        """The last window: whatever the answer added since the one before, if anything."""
        self._seen = [len(text) for text in texts]
        return self._close(texts, events, whole=True) if self._new_chars(texts) else None

    def _new_chars(self, texts: Sequence[str]) -> int:
        cut = self._cut
        return sum(
            len(text) - (cut[index] if index < len(cut) else 0) for index, text in enumerate(texts)
        )

    def _close(self, texts: Sequence[str], events: int, *, whole: bool = False) -> Window:
        """Each text up to its end if it ends a sentence there (or `whole`, at the
        stream's end, or when its own new part ran past the window and its margin),
        else up to its last sentence end: with several choices (`n` > 1) streaming in
        turns, the others are mid-sentence when one ends a sentence, and a sentence cut
        in two is judged as neither half. If no text has a sentence end, all go whole
        (the margin ran out). The stream is released as far as every text was judged."""
        starts = [self._cut[index] if index < len(self._cut) else 0 for index in range(len(texts))]
        ends = [
            len(text)
            if whole or ends_sentence(text) or len(text) - start >= self.window_chars + self.margin
            else _last_sentence_end(text, start)
            for text, start in zip(texts, starts, strict=True)
        ]
        if ends == starts:
            ends = [len(text) for text in texts]
        parts = []
        released = events
        for index, (text, start, end) in enumerate(zip(texts, starts, ends, strict=True)):
            if end > start:
                context = text[max(0, start - self.context_chars) : start]
                parts.append(WindowPart(index, start, end, text[start:end], context))
            if end < len(text):
                released = min(released, self._released(index, end))
        self._cut = ends
        end = sum(ends)
        window = Window(self.closed, self._start, end, released, tuple(parts))
        self._start = end
        self.closed += 1
        return window

    def _released(self, index: int, length: int) -> int:
        """How many events went by while text `index` was within `length` characters:
        up to the one that took it past them."""
        past = bisect.bisect_right(self._grew_to[index], length)
        return self._grew_at[index][past] - 1


def _last_sentence_end(text: str, start: int) -> int:
    """Where the last sentence or line in `text[start:]` ends (closers after its stop
    included); `start` when none does."""
    for at in range(len(text) - 1, start - 1, -1):
        if text[at] in _SENTENCE_ENDS:
            end = at + 1
            while end < len(text) and text[end] in _CLOSERS:
                end += 1
            return end
    return start


def coalesce(waiting: deque[Window], max_chars: int) -> Window:
    """The windows at the head of `waiting` (one at least, more while their characters
    stay within `max_chars`) taken off it and joined into one."""
    taken = [waiting.popleft()]
    chars = taken[0].chars
    while waiting and chars + waiting[0].chars <= max_chars:
        chars += waiting[0].chars
        taken.append(waiting.popleft())
    if len(taken) == 1:
        return taken[0]
    parts: dict[int, WindowPart] = {}
    for window in taken:
        for part in window.parts:
            before = parts.get(part.index)
            parts[part.index] = (
                part
                if before is None
                else WindowPart(
                    part.index, before.start, part.end, before.text + part.text, before.context
                )
            )
    first, last = taken[0], taken[-1]
    return Window(
        first.number, first.start, last.end, last.events, tuple(parts[i] for i in sorted(parts))
    )
