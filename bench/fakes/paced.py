"""A fake upstream or judge with real-world pace: `python -m bench.fakes.paced --port N ...`.

`bench.fakes.server`'s fake (unique replies, bounded logs) with what the scenarios
that measure latency need, each an option of `Pace`:
- the upstream's first byte after `ttft` seconds, then stream chunks every
  `chunk_interval` seconds; a whole answer after the same total time;
- judge calls that take `judge_latency` seconds ± `jitter` (uniform), plus
  `opinion_latency` for each opinion (or verdict) the answer writes, as a real judge
  writing one line per opinion does;
- 429s from the judge: above `judge_rps` calls a second (a sliding one-second window,
  with `Retry-After` and `x-ratelimit-reset-requests`, as OpenAI's API does), or on
  every `judge_429_every`-th call (a short reset that pauses the gateway's judge calls);
- biased answers, which the judge finds biased (the rest unbiased): every
  `biased_every`-th reply, and every reply to a prompt that holds `BIASED_MARK`;
- failures a client asks for with marks in its prompt, so it knows what each answer
  should be: `FAIL_MARK` gets a 500 from the upstream, `CUT_MARK` a stream the
  upstream cuts after two pieces;
- with `long_chars`, the replies are `bench.fakes.long_text`'s long answers (every
  `long_biased_every`-th biased) and the judge reads the text it is asked about
  (`testkit.reading_judge`);
- `GET /bench/stats`: judge calls, 429s sent, tokens, the peak of calls in flight and
  the judge's median service time, so a scenario reads what the judge saw.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import json
import random
import sys
import time
from collections import deque
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bench.fakes.long_text import BIASED_WORD, OPINION_WORD, long_answer
from bench.fakes.server import BenchFake
from bench.harness.procs import Processes, ServerProcess, free_port
from bench.harness.report import percentile
from gateway.demo.apis import Surface
from testkit.fake_openai import Fault

__all__ = [
    "BIASED_MARK",
    "CUT_MARK",
    "FAIL_MARK",
    "INJECTED",
    "Pace",
    "PacedFake",
    "main",
    "start_paced",
]

BIASED_MARK = "[bench:biased]"
FAIL_MARK = "[bench:fail]"
CUT_MARK = "[bench:cut]"
INJECTED = "bench: injected upstream failure"  # the message of a FAIL_MARK answer
_JUDGE_STEPS = frozenset({"preprocess", "analyze", "assess", "assess_batch", "reason"})

# The request being answered, per task (its raw body, and its messages' characters), and
# whether it asked for a stream: the hooks that choose faults and delays are not handed it.
_BODY: ContextVar[tuple[str, int, bool]] = ContextVar("paced_body", default=("", 0, False))


@dataclass(frozen=True)
class Pace:
    """The fake's options; each is also its command line's `--option-name`."""

    chunks: int = 50
    ttft: float = 0.3
    chunk_interval: float = 0.02
    judge_latency: float = 1.0
    opinion_latency: float = 0.0
    jitter: float = 0.3
    judge_rps: float | None = None
    judge_429_every: int = 0
    biased_every: int = 0
    long_chars: int = 0
    long_biased_every: int = 0
    long_biased_at: float = 0.5
    seed: int = 7

    def argv(self) -> list[str]:
        """The options that differ from the defaults, as command-line arguments."""
        args = []
        for option in dataclasses.fields(self):
            value = getattr(self, option.name)
            if value != option.default:
                args += [f"--{option.name.replace('_', '-')}", str(value)]
        return args


class PacedFake(BenchFake):
    def __init__(self, pace: Pace) -> None:
        super().__init__(pace.chunks)
        self.pace = pace
        self.chunk_delay = pace.chunk_interval
        self.judge_max_rps = pace.judge_rps
        self.judge_opinion_delay = pace.opinion_latency
        if pace.long_chars:
            self.read_text = True
            self.opinion_words = [OPINION_WORD]
            self.biased_words = [BIASED_WORD]
        self.verdicts_for = {BIASED_MARK: [("yes", "A gender stereotype.", ["gender"])]}
        self.languages = deque(maxlen=64)  # type: ignore[assignment]  # append() is all it needs
        self._random = random.Random(pace.seed)
        self._judge_calls = itertools.count(1)
        self._replies = itertools.count(1)
        self.service_ms: deque[float] = deque(maxlen=10_000)
        self.tokens = 0
        self.judge_answered = 0
        self.injected_429s = 0

        async def stats(request: Request) -> Response:
            return JSONResponse(self.stats())

        self.app.router.routes.insert(0, Route("/bench/stats", stats, methods=["GET"]))

    def stats(self) -> dict[str, Any]:
        return {
            "judge_calls": self.judge_answered,
            "rate_limited": self.rate_limited + self.injected_429s,
            "tokens": self.tokens,
            "peak_in_flight": self.judge_peak_in_flight,
            "service_ms_p50": percentile(self.service_ms, 0.5, 1),
        }

    async def _chat(self, request: Request) -> Response:
        await _remember(request)
        return await super()._chat(request)

    async def _upstream(self, request: Request, surface: Surface) -> Response:
        await _remember(request)
        return await super()._upstream(request, surface)

    def _take_fault(self, step: str, *, exact: bool = False) -> Fault | None:
        body, _, _ = _BODY.get()
        if step == "chat" and FAIL_MARK in body:
            error = {"error": {"message": INJECTED, "type": "server_error", "code": None}}
            return Fault(status=500, body=json.dumps(error))
        if step == "chat" and CUT_MARK in body:
            return Fault(disconnect_after=2)
        every = self.pace.judge_429_every
        if step in _JUDGE_STEPS and every and next(self._judge_calls) % every == 0:
            self.injected_429s += 1
            error = {"error": {"message": "Rate limit reached", "type": "requests", "code": None}}
            return Fault(
                status=429, body=json.dumps(error), headers={"x-ratelimit-reset-requests": "20ms"}
            )
        return super()._take_fault(step, exact=exact)

    async def _scripted(
        self, step: str, fault: Fault | None, failure: dict[str, Any]
    ) -> Response | None:
        pace = self.pace
        if step == "chat":
            _, _, streamed = _BODY.get()
            await asyncio.sleep(
                pace.ttft if streamed else pace.ttft + self.chunk_delay * pace.chunks
            )
        elif fault is None:  # a 429 comes at once
            started = time.perf_counter()
            spread = pace.judge_latency * pace.jitter
            await asyncio.sleep(
                max(0.0, pace.judge_latency + self._random.uniform(-spread, spread))
            )
            self.service_ms.append((time.perf_counter() - started) * 1000)
            self.judge_answered += 1
            self.tokens += _BODY.get()[1] // 4 + 60  # a rough count: the answers are short
        return await super()._scripted(step, fault, failure)

    def _answer(self, step: str, body: dict[str, Any]) -> str:
        pace = self.pace
        if step == "chat" and pace.long_chars:
            serial = int(str(body.get("user") or "0"))  # the scenario numbers its requests
            text, _ = long_answer(
                serial,
                chars=pace.long_chars,
                biased_every=pace.long_biased_every,
                biased_at=pace.long_biased_at,
            )
            return text
        reply = super()._answer(step, body)
        if step != "chat":
            return reply
        nth = pace.biased_every and next(self._replies) % pace.biased_every == 0
        if nth or BIASED_MARK in _BODY.get()[0]:
            return f"{BIASED_MARK} {reply}"
        return reply


def start_paced(
    procs: Processes,
    name: str,
    pace: Pace,
    *,
    log_dir: Path,
    keep_alive: float | None = None,
) -> ServerProcess:
    """The fake as a process of its own, on a free port, ready once it answers."""
    port = free_port()
    argv = [sys.executable, "-m", "bench.fakes.paced", "--port", str(port), *pace.argv()]
    if keep_alive is not None:
        argv += ["--keep-alive", str(keep_alive)]
    return procs.start(name, argv, port=port, ready_path="/bench/stats", log_dir=log_dir)


async def _remember(request: Request) -> None:
    raw = (await request.body()).decode("utf-8", "replace")  # Starlette keeps it for the handler
    try:
        body = json.loads(raw)
    except json.JSONDecodeError:
        body = None
    if not isinstance(body, dict):
        _BODY.set((raw, 0, False))
        return
    messages = body.get("messages") or []
    chars = sum(len(str(m.get("content") or "")) for m in messages if isinstance(m, dict))
    _BODY.set((raw, chars, body.get("stream") is True))


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.fakes.paced", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    for option in dataclasses.fields(Pace):
        kind = {"int": int, "float": float}.get(str(option.type).split(" ")[0], float)
        name = f"--{option.name.replace('_', '-')}"
        parser.add_argument(name, type=kind, default=option.default, help=f"({option.default})")
    # uvicorn's default (5 s) is shorter than aiohttp's client keep-alive (15 s): a pooled
    # connection the fake has just closed can be picked for a request, which then fails.
    parser.add_argument("--keep-alive", type=float, default=5.0, help="idle seconds (5)")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    pace = Pace(**{option.name: getattr(args, option.name) for option in dataclasses.fields(Pace)})
    uvicorn.run(
        PacedFake(pace).app,
        host="127.0.0.1",
        port=args.port,
        workers=1,
        log_level="warning",
        access_log=False,
        backlog=4096,
        timeout_keep_alive=args.keep_alive,
    )


if __name__ == "__main__":
    main()
