"""How far a judged stream may be released while it carries a tool call. Pure code.

An enforcing gateway releases a tool call whole or not at all: a client (an
agent) may act on a call's first pieces, and a half call blocked is still a
call half made. So from the event that begins the first tool call on, nothing
goes out before the whole answer, arguments included, is judged.

>>> hold = ToolCallHold()
>>> hold.see(False, 3); hold.cap(3)
3
>>> hold.see(True, 4); hold.see(True, 6); hold.cap(9)
4
>>> ToolCallHold(enabled=False).cap(9)
9
"""

from __future__ import annotations

__all__ = ["ToolCallHold"]


class ToolCallHold:
    """Where a stream's first tool-call event sits among the events that may be sent.
    Off (`enabled=False`: tool arguments are not judged), it holds nothing back."""

    __slots__ = ("at", "enabled")

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.at: int | None = None  # the index of the first event with a tool call

    def see(self, started: bool, events: int) -> None:
        """After an event: `started` whether a tool call has begun, `events` how many
        events came before this one."""
        if started and self.at is None and self.enabled:
            self.at = events

    def cap(self, released: int) -> int:
        """`released` events, fewer when the stream reached a tool call before them."""
        return released if self.at is None else min(released, self.at)
