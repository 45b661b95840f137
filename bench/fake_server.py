"""The project's fake upstream and judge, set up for load: `python -m bench.fake_server --port N`.

Differences from `tests.support.fake_openai`'s own `main()`: streams have
`--chunks` content chunks, the request log is bounded (the tests' unbounded
list would grow by a record per request), and `GET /bench/last-stream` returns
the bytes of the last stream the fake sent, for the byte-identity check.
"""

from __future__ import annotations

import argparse
from collections import deque

import uvicorn
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support.fake_openai import FakeOpenAI

__all__ = ["build_fake", "main"]


def build_fake(chunks: int) -> FakeOpenAI:
    """A `FakeOpenAI` that streams `chunks` content chunks and keeps a bounded log."""
    fake = FakeOpenAI()
    fake.chunks = chunks
    # Long reply, so that it splits into `chunks` pieces of a few characters each.
    fake.reply = " ".join(f"word{index}" for index in range(chunks))
    fake.requests = deque(maxlen=64)  # type: ignore[assignment]  # append() is all it needs
    fake.stream_endings = deque(maxlen=64)  # type: ignore[assignment]

    async def last_stream(request: Request) -> Response:
        return Response(b"".join(fake.sent), media_type="application/octet-stream")

    fake.app.router.routes.append(Route("/bench/last-stream", last_stream, methods=["GET"]))
    return fake


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fake_server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=50)
    args = parser.parse_args()
    uvicorn.run(
        build_fake(args.chunks).app,
        host="127.0.0.1",
        port=args.port,
        workers=1,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
