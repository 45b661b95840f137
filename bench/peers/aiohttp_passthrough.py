"""The floor: a minimal Starlette + aiohttp pass-through, the fastest design in DESIGN.md §4.

BENCH_UPSTREAM=http://127.0.0.1:9100 uvicorn --factory bench.peers.aiohttp_passthrough:create_app
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator

import aiohttp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route


def create_app() -> Starlette:
    upstream = os.environ["BENCH_UPSTREAM"]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            app.state.session = session
            yield

    async def chat(request: Request) -> Response:
        response = await request.app.state.session.post(
            upstream + request.url.path,
            data=await request.body(),
            headers={"content-type": "application/json"},
        )
        if response.content_type != "text/event-stream":
            body = await response.read()
            return Response(body, response.status, media_type=response.content_type)

        async def relay() -> AsyncIterator[bytes]:
            async with response:
                async for chunk in response.content.iter_any():
                    yield chunk

        return StreamingResponse(relay(), response.status, media_type=response.content_type)

    routes = [Route("/v1/chat/completions", chat, methods=["POST"])]
    return Starlette(routes=routes, lifespan=lifespan)
