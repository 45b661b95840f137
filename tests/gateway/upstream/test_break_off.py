"""An upstream that breaks off mid-stream: what it sent before the break is still read,
however far behind the gateway's reads are when the connection drops."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest

from gateway.errors import UpstreamProtocolError
from gateway.upstream.client import _iter_chunks
from testkit.waiting import eventually

FRAMES = [b'data: {"n": %d}\n\n' % n for n in range(3)]


async def test_the_bytes_before_a_break_are_read_after_it() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for frame in FRAMES:
            writer.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        writer.close()  # no last chunk: the stream breaks off

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    async with server, aiohttp.ClientSession() as session:
        response = await session.post(url, data=b"{}")
        # The break is known before anything was read: every read now raises first.
        await eventually(lambda: response.content.exception() is not None, "the break seen")
        received: list[bytes] = []
        with pytest.raises(UpstreamProtocolError, match="broke off"):
            await _read_into(received, _iter_chunks(response, url, 5))
    assert b"".join(received) == b"".join(FRAMES)


async def _read_into(received: list[bytes], chunks: AsyncIterator[bytes]) -> None:
    async for chunk in chunks:
        received.append(chunk)
