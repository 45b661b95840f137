"""The event-loop plumbing of the store's writer: the thread an engine may run the
writer's loop on (`WriterThread`), and releasing a waiter from whichever thread."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["WriterThread", "release"]

T = TypeVar("T")


def release(barrier: asyncio.Future[None]) -> None:
    """Release a `flush` waiting on `barrier`, from whichever loop's thread."""
    loop = barrier.get_loop()
    if loop is _running_loop():
        _resolve(barrier)
    else:
        with contextlib.suppress(RuntimeError):  # its loop closed: nobody waits
            loop.call_soon_threadsafe(_resolve, barrier)


def _resolve(barrier: asyncio.Future[None]) -> None:
    if not barrier.done():  # a cancelled flush() leaves a done future behind
        barrier.set_result(None)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class WriterThread:
    """A thread of an engine's own that runs the writer's event loop (SQLite: the one
    thread that uses the write connection)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name="gateway-store-writer", daemon=True
        )
        self._thread.start()
        ready.wait()
        assert self._thread.ident is not None
        self.ident = self._thread.ident

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    async def call(self, function: Callable[..., T], *args: object) -> T:
        """`function(*args)` on this thread."""

        async def run() -> T:
            return function(*args)

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), self.loop))

    async def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        await asyncio.to_thread(self._thread.join)
        self.loop.close()
