"""An answer judged window by window while its stream arrives: `StreamJudgement`.

It asks its request for what it needs through `Verdicts` (a `ScoredCall` is
one): the scoring side of its windows (`gateway.scoring.window_judge`), which
judges each in enforce's lane and merges them, and the answer's conclusion.

It is fed the upstream's bytes as they come (`feed`), cuts them into whole SSE
events (`gateway.wire.frames`), reads each with the surface's `StreamReader`,
and closes windows over the text (`gateway.scoring.windows`). Windows are
judged concurrently, at most `max_inflight_windows` at a time (waiting ones
coalesce), and their results are merged in order (`gateway.scoring.merge`): a
window passes while the answer up to its end stays below the block threshold.

What a delivery reads from it:
- `frames[:released]`: the upstream's own bytes, event by event, that may go out
  (under `hold: window`, those of passed windows);
- `refused`: a prefix blocked, or the judge failed; `changed` is set on any news;
- `await outcome()` once the stream ended (`end`) or was cut: the answer's
  outcome, recorded. An answer shorter than one window is judged whole, as it
  would be without windows, so it costs no more.

The stream's last event (`[DONE]`, `response.completed`, `message_stop`) is held
back in `held` for the surface's trailer, as a passthrough stream holds it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Protocol

from gateway.config import Policy
from gateway.domain import Hold
from gateway.proxy.tap import StreamTap
from gateway.scoring.outcome import Outcome
from gateway.scoring.window_judge import WindowJudge
from gateway.scoring.windows import Window, WindowSplitter, coalesce
from gateway.wire.frames import EventFramer
from gateway.wire.holding import ToolCallHold
from gateway.wire.sse import SSEEvent
from gateway.wire.tools import with_tool_lines
from guard import BiasResult

__all__ = ["StreamJudgement", "Verdicts"]


class Verdicts(Protocol):
    """What a `StreamJudgement` asks of the request whose answer it judges."""

    @property
    def policy(self) -> Policy: ...

    def window_judge(self) -> WindowJudge:
        """The scoring side of the answer's windows."""
        ...

    async def conclude(
        self, tap: StreamTap, windows: WindowJudge | None, *, partial: bool
    ) -> Outcome:
        """The answer's outcome, recorded: from its `windows`, or judged whole (None)."""
        ...

    async def settle(self, tap: StreamTap, *, partial: bool) -> Outcome:
        """Queue a cut answer's text, judged by no window, for scoring."""
        ...


_Judged = tuple[Window, "asyncio.Task[tuple[list[BiasResult], float]]"]


class StreamJudgement:
    """One streamed answer, judged in windows as it arrives (see the module's doc).

    `hold` says which events `released` counts: `window` those of passed
    windows, `none` every event (live; windows still judged, to cut at once).
    """

    def __init__(self, verdicts: Verdicts, tap: StreamTap, *, hold: Hold = "window") -> None:
        policy = verdicts.policy
        self.verdicts = verdicts
        self.policy = policy
        self.tap = tap
        self.hold = hold
        self.judge = verdicts.window_judge()
        self.splitter = WindowSplitter(
            window_chars=policy.windows.chars,
            context_chars=policy.windows.context_chars,
            margin=max(1, policy.windows.chars // 4),
        )
        self.framer = EventFramer()
        self.chunks: list[bytes] = []  # every byte, as it came (a buffered answer's body)
        self.frames: list[bytes] = []  # the events a client may be sent, in order
        self.held: list[SSEEvent] = []
        self.passed = 0  # frames cleared by the windows judged so far
        self.tool_hold = ToolCallHold(enabled=policy.judge_tool_arguments)
        self.ended = False
        self.changed = asyncio.Event()
        self._waiting: deque[Window] = deque()
        self._running: deque[_Judged] = deque()
        self._dispatched = 0
        self._abandoned = False
        self._final: asyncio.Task[Outcome] | None = None

    # -- fed by the delivery ---------------------------------------------------------

    def feed(self, chunk: bytes) -> None:
        """Some of the upstream's bytes."""
        self.tap.arrived()
        self.chunks.append(chunk)
        for frame in self.framer.feed(chunk):
            self._take(frame)
        self.changed.set()

    def end(self) -> None:
        """The upstream's stream ended (or broke off): the rest is the last window."""
        for frame in self.framer.flush():
            self._take(frame)
        self.tap.close()
        self.ended = True
        if not self._dispatched:
            self._waiting.clear()  # no window judged yet: the answer is judged whole
        elif self.judge.open:
            tail = self.splitter.finish(self._texts_with_tools(), len(self.frames))
            if tail is not None:
                self._waiting.append(tail)
            self._dispatch()
        self.changed.set()

    def cancel(self) -> None:
        """The client left: judgements in flight end now."""
        self._waiting.clear()
        for _, task in self._running:
            task.cancel()

    # -- read by the delivery -----------------------------------------------------------

    @property
    def refused(self) -> bool:
        """A prefix blocked, or a window's judgement failed under `on_judge_error: block`."""
        return self.judge.refused

    @property
    def released(self) -> int:
        """How many of `frames` may be sent now."""
        if self.judge.failure is not None:
            return len(self.frames)
        return self.tool_hold.cap(len(self.frames)) if self.hold == "none" else self.passed

    @property
    def settled(self) -> bool:
        """Nothing is left to judge in windows: the answer's outcome can be concluded."""
        if self.refused or self._abandoned:
            return True
        return self.ended and not self._waiting and not self._running

    async def outcome(self) -> Outcome:
        """The answer's outcome, recorded once; waits for the windows still judged. A
        client that leaves meanwhile does not cancel it (the record must be written)."""
        if self._final is None:
            self._final = asyncio.ensure_future(self._conclude())
        return await asyncio.shield(self._final)

    async def abandon(self) -> None:
        """The client left before the outcome was asked for: judgements in flight end,
        and the record keeps what was judged, marked partial (the text alone, queued,
        when no window was judged yet)."""
        if self._final is not None:
            await self._final
            return
        self._abandoned = True
        self.cancel()
        if not self.judge.entries:
            self.tap.close(cut=True)
            await self.verdicts.settle(self.tap, partial=True)
            return
        await self.outcome()

    async def _conclude(self) -> Outcome:
        while not self.settled:
            await self.changed.wait()
            self.changed.clear()
        self.cancel()  # a block or a failure leaves later windows unwanted
        # Shorter than a window: judged whole, as without windows.
        windows = self.judge if self._dispatched else None
        return await self.verdicts.conclude(self.tap, windows, partial=self._abandoned)

    # -- windows ----------------------------------------------------------------------

    def _texts_with_tools(self) -> list[str]:
        """The answer's texts, then its tool-call arguments (`judge_tool_arguments`): the
        last window judges the arguments, which no window before it could (a call's
        arguments are whole only at its end)."""
        if not self.policy.judge_tool_arguments:
            return self.tap.texts()
        return with_tool_lines(self.tap.texts(), self.tap.reader.tool_arguments())

    def _take(self, frame: bytes) -> None:
        last = tool = False
        reader = self.tap.reader
        for event in self.tap.decoder.feed(frame):
            if reader.add(event.event, event.data):
                self.held.append(event)
                last = True
            # An event that begins a tool call names it, on every API (tool_calls,
            # function_call, tool_use, custom_tool_call): the reader is asked only then,
            # since this runs for every event of every held stream.
            tool = tool or "tool" in event.data or "function_call" in event.data
        hold = self.tool_hold
        if tool and hold.enabled and hold.at is None:
            hold.see(reader.has_tool_calls(), len(self.frames))
        if not last:
            self.frames.append(frame)
        if not self.judge.open:
            return
        window = self.splitter.offer(self.tap.texts(), len(self.frames))
        if window is not None:
            self._waiting.append(window)
            self._dispatch()

    def _dispatch(self) -> None:
        policy = self.policy
        in_flight = sum(not task.done() for _, task in self._running)
        while self._waiting and in_flight < policy.windows.max_inflight:
            last_call = self._dispatched >= policy.windows.max_count - 1
            if last_call and not self.ended:
                return  # past `windows.max_count`, the rest is judged once the stream ends
            window = coalesce(
                self._waiting, 1 << 62 if last_call else policy.windows.max_coalesced_chars
            )
            task = asyncio.ensure_future(self.judge.judge(window))
            task.add_done_callback(self._judged)
            self._running.append((window, task))
            self._dispatched += 1
            in_flight += 1

    def _judged(self, _task: asyncio.Task[tuple[list[BiasResult], float]]) -> None:
        """Merge, in window order, every judgement that has come back."""
        judge = self.judge
        while self._running and self._running[0][1].done():
            window, task = self._running.popleft()
            if task.cancelled() or not judge.open:
                continue
            exc = task.exception()
            if exc is not None:
                judge.fail(exc)
                self.cancel()
                break
            results, ms = task.result()
            judge.add(window, results, ms)
            if judge.blocked:
                self.cancel()
                break
            if self.tap.readable:
                self.passed = max(self.passed, self.tool_hold.cap(window.events))
        self._dispatch()
        self.changed.set()
