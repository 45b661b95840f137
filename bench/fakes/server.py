"""The project's fake upstream and judge, set up for load: `python -m bench.fakes.server --port N`.

Differences from `testkit.fake_openai`'s own `main()`:
- every chat reply is unique (a counter leads it), so the gateway's score cache
  cannot hide the judge's cost; a request whose prompt holds `REPEAT_MARK` gets
  the same reply every time, for the cache's own measurement;
- replies are 50 fixed-width words, so a stream has exactly `--chunks` content chunks;
- the judge finds the text unbiased, so enforce mode passes responses on;
- the request log is bounded (the tests' list grows by a record per request);
- `GET /bench/last-stream` returns the bytes of the last stream sent, for the
  byte-identity check.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections import deque
from pathlib import Path
from typing import Any

import uvicorn
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.harness.procs import Processes, ServerProcess, free_port
from testkit.fake_openai import FakeOpenAI

__all__ = ["REPEAT_MARK", "BenchFake", "main", "start_fake"]

REPEAT_MARK = "[bench:repeat]"
_WORD = 8  # characters per word, so that a reply splits into equal chunks


class BenchFake(FakeOpenAI):
    """A `FakeOpenAI` with unique replies of `chunks` words and a bounded request log."""

    def __init__(self, chunks: int) -> None:
        super().__init__()
        self.chunks = chunks
        self.verdicts = [("no", "A neutral description.")]
        self.requests = deque(maxlen=64)  # type: ignore[assignment]  # append() is all it needs
        self.stream_endings = deque(maxlen=64)  # type: ignore[assignment]
        self._serials = itertools.count(1)
        self._tail = "".join(f"w{index:0{_WORD - 2}d} " for index in range(1, chunks))

        async def last_stream(request: Request) -> Response:
            return Response(b"".join(self.sent), media_type="application/octet-stream")

        # First: the test fake ends with a catch-all route that would answer it otherwise.
        self.app.router.routes.insert(0, Route("/bench/last-stream", last_stream, methods=["GET"]))

    def _answer(self, step: str, body: dict[str, Any]) -> str:
        if step != "chat":
            return super()._answer(step, body)
        serial = 0 if REPEAT_MARK in str(body.get("messages")) else next(self._serials)
        return f"{serial:0{_WORD - 1}d} {self._tail}"


def start_fake(
    procs: Processes, work_dir: Path, *, chunks: int, name: str = "fake"
) -> ServerProcess:
    """The fake as a process of its own, on a free port, ready once it answers."""
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "bench.fakes.server",
        "--port",
        str(port),
        "--chunks",
        str(chunks),
    ]
    return procs.start(name, argv, port=port, ready_path="/v1/models", log_dir=work_dir)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fakes.server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=50)
    args = parser.parse_args()
    uvicorn.run(
        BenchFake(args.chunks).app,
        host="127.0.0.1",
        port=args.port,
        workers=1,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
