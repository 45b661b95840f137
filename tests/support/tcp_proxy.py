"""A TCP proxy on 127.0.0.1 that adds latency to every chunk either way, for a database
that answers slowly (`delay`), and can cut every connection and refuse new ones for a
while (`cut`, `restore`), as a network partition does."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from concurrent.futures import Future
from typing import Any

__all__ = ["TcpProxy"]


class TcpProxy:
    def __init__(self, target_host: str, target_port: int, *, delay: float = 0.0) -> None:
        self.target = (target_host, target_port)
        self.delay = delay
        self.port = 0
        self.connections = 0  # accepted so far
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._refusing = False

    def start(self) -> TcpProxy:
        self._thread.start()
        self._call(self._listen()).result(10)
        return self

    def stop(self) -> None:
        self._call(self._close_all(stop=True)).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def cut(self) -> None:
        """End every connection now and refuse new ones until `restore()`."""
        self._refusing = True
        self._call(self._close_all(stop=False)).result(10)

    def restore(self) -> None:
        self._refusing = False

    def _call(self, coroutine: Any) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _close_all(self, *, stop: bool) -> None:
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()
        if stop and self._server is not None:
            self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._refusing:
            writer.transport.abort()
            return
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._open |= {writer, up_writer}
        pumps = [
            asyncio.create_task(self._pump(reader, up_writer)),
            asyncio.create_task(self._pump(up_reader, writer)),
        ]
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for pump in pumps:
            pump.cancel()
        for each in (writer, up_writer):
            self._open.discard(each)
            each.transport.abort()

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while chunk := await source.read(65536):
                if self.delay:
                    await asyncio.sleep(self.delay)
                sink.write(chunk)
                await sink.drain()
