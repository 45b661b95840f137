"""The soak's fake upstream or judge: `python -m bench.fakes.soak --port N ...`.

`bench.fakes.server`'s fake (unique replies, bounded logs) with the pace and the
failures a long mixed run needs:
- the upstream answers after `--ttft` seconds; a stream then sends its pieces
  `--chunk-interval` seconds apart, and a whole answer comes after the same total;
- a judge call takes `--judge-latency` seconds ± `--jitter` (uniform);
- every `--judge-429-every`-th judge call answers 429 with a short
  `x-ratelimit-reset-requests`, which pauses the gateway's judge calls that long;
- the client asks for its own failures with marks in its prompt, so it knows
  what each answer should be: `FAIL_MARK` gets a 500 from the upstream,
  `CUT_MARK` a stream the upstream cuts after two pieces, and `BIASED_MARK` a
  reply the judge finds biased (enforce blocks it);
- `GET /bench/stats`: judge calls and 429s sent.
Every log the test fake keeps is bounded here, so the fake's own memory stays flat.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
from collections import deque
from contextvars import ContextVar
from typing import Any

import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bench.fakes.server import BenchFake
from gateway.demo.apis import Surface
from testkit.fake_openai import Fault

__all__ = ["BIASED_MARK", "CUT_MARK", "FAIL_MARK", "INJECTED", "SoakFake", "main"]

FAIL_MARK = "[soak:fail]"
CUT_MARK = "[soak:cut]"
BIASED_MARK = "[soak:biased]"
INJECTED = "soak: injected upstream failure"  # the message of a FAIL_MARK answer
_JUDGE_STEPS = frozenset({"preprocess", "analyze", "assess", "reason"})

# The request being answered, per task (its raw body, and whether it asked for a stream):
# the fake's faults and delays are chosen without the body.
_BODY: ContextVar[tuple[str, bool]] = ContextVar("soak_body", default=("", False))


class SoakFake(BenchFake):
    def __init__(
        self,
        *,
        chunks: int,
        ttft: float,
        chunk_interval: float,
        judge_latency: float,
        jitter: float,
        judge_429_every: int,
        seed: int = 11,
    ) -> None:
        super().__init__(chunks)
        self.ttft = ttft
        self.chunk_delay = chunk_interval
        self.judge_latency = judge_latency
        self.jitter = jitter
        self.judge_429_every = judge_429_every
        self.verdicts_for = {BIASED_MARK: [("yes", "A stereotype.", ["gender"])]}
        self.languages = deque(maxlen=64)  # type: ignore[assignment]  # append() is all it needs
        self._random = random.Random(seed)
        self._judge_calls = itertools.count(1)
        self.judge_answered = 0
        self.injected_429s = 0

        async def stats(request: Request) -> Response:
            return JSONResponse(
                {"judge_calls": self.judge_answered, "rate_limited": self.injected_429s}
            )

        self.app.router.routes.insert(0, Route("/bench/stats", stats, methods=["GET"]))

    async def _chat(self, request: Request) -> Response:
        await _remember(request)
        return await super()._chat(request)

    async def _upstream(self, request: Request, surface: Surface) -> Response:
        await _remember(request)
        return await super()._upstream(request, surface)

    def _take_fault(self, step: str, *, exact: bool = False) -> Fault | None:
        body, _ = _BODY.get()
        if step == "chat" and FAIL_MARK in body:
            error = {"error": {"message": INJECTED, "type": "server_error", "code": None}}
            return Fault(status=500, body=json.dumps(error))
        if step == "chat" and CUT_MARK in body:
            return Fault(disconnect_after=2)
        if step in _JUDGE_STEPS and next(self._judge_calls) % self.judge_429_every == 0:
            self.injected_429s += 1
            error = {"error": {"message": "Rate limit reached", "type": "requests", "code": None}}
            return Fault(
                status=429, body=json.dumps(error), headers={"x-ratelimit-reset-requests": "20ms"}
            )
        return None

    async def _scripted(
        self, step: str, fault: Fault | None, failure: dict[str, Any]
    ) -> Response | None:
        if step == "chat":
            _, streamed = _BODY.get()
            await asyncio.sleep(
                self.ttft if streamed else self.ttft + self.chunk_delay * self.chunks
            )
        elif fault is None:  # a 429 comes at once
            spread = self.judge_latency * self.jitter
            await asyncio.sleep(
                max(0.0, self.judge_latency + self._random.uniform(-spread, spread))
            )
            self.judge_answered += 1
        return await super()._scripted(step, fault, failure)

    def _answer(self, step: str, body: dict[str, Any]) -> str:
        reply = super()._answer(step, body)
        if step == "chat" and BIASED_MARK in _BODY.get()[0]:
            return f"{reply} {BIASED_MARK}"
        return reply


async def _remember(request: Request) -> None:
    raw = (await request.body()).decode("utf-8", "replace")  # Starlette keeps it for the handler
    try:
        body = json.loads(raw)
    except json.JSONDecodeError:
        body = None
    _BODY.set((raw, isinstance(body, dict) and body.get("stream") is True))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fakes.soak")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--ttft", type=float, default=0.1)
    parser.add_argument("--chunk-interval", type=float, default=0.01)
    parser.add_argument("--judge-latency", type=float, default=0.3)
    parser.add_argument("--jitter", type=float, default=0.3)
    parser.add_argument("--judge-429-every", type=int, default=200)
    args = parser.parse_args()
    fake = SoakFake(
        chunks=args.chunks,
        ttft=args.ttft,
        chunk_interval=args.chunk_interval,
        judge_latency=args.judge_latency,
        jitter=args.jitter,
        judge_429_every=args.judge_429_every,
    )
    uvicorn.run(
        fake.app,
        host="127.0.0.1",
        port=args.port,
        workers=1,
        log_level="warning",
        access_log=False,
        backlog=4096,
    )


if __name__ == "__main__":
    main()
