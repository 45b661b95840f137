"""A fake upstream or judge with real-world pace: `python -m bench.fakes.slow --port N ...`.

What the realistic scenario needs that `bench.fakes.server` does not give:
- the upstream's first byte after `--ttft` seconds (300 ms), then stream chunks
  every `--chunk-interval` seconds (20 ms); a non-streaming answer after the
  same total time;
- judge calls that take `--judge-latency` seconds, plus `--opinion-latency` for
  each opinion (or verdict) the answer writes, as a real judge writing one line
  per opinion does, ± `--jitter` (1 s ± 30 %, uniform), and answer 429 with
  `Retry-After` and `x-ratelimit-reset-requests` above `--judge-rps` calls a
  second (a sliding one-second window), as OpenAI's API does;
- `GET /bench/stats`: judge calls, 429s sent, tokens, the peak of calls in
  flight and the judge's service times, so the harness reads what the judge saw;
- with `--biased-every N`, every Nth reply carries `BIASED_MARK`, and the judge
  finds such a text biased (the rest unbiased), so a share of answers is flagged.
Every chat reply is unique, so no cache hides the judge's cost. With
`--long-answer CHARS` the replies are `bench.fakes.long_text`'s long answers, some of
them biased, and the judge reads the text it is asked about
(`testkit.reading_judge`).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from typing import Any

import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bench.fakes.long_text import BIASED_WORD, OPINION_WORD, long_answer
from bench.fakes.server import BenchFake
from testkit.reading_judge import opinions_written

__all__ = ["BIASED_MARK", "SlowFake", "main"]

BIASED_MARK = "[bench:biased]"


class SlowFake(BenchFake):
    def __init__(
        self,
        *,
        chunks: int,
        ttft: float,
        chunk_interval: float,
        judge_latency: float,
        jitter: float,
        judge_rps: float | None,
        biased_every: int = 0,
        seed: int = 7,
        opinion_latency: float = 0.0,
        long_chars: int = 0,
        long_biased_every: int = 0,
        long_biased_at: float = 0.5,
    ) -> None:
        super().__init__(chunks)
        self.opinion_latency = opinion_latency
        self.long_chars = long_chars
        self.long_biased_every = long_biased_every
        self.long_biased_at = long_biased_at
        if long_chars:
            self.read_text = True
            self.opinion_words = [OPINION_WORD]
            self.biased_words = [BIASED_WORD]
        self.ttft = ttft
        self.chunk_interval = chunk_interval
        self.judge_latency = judge_latency
        self.jitter = jitter
        self.judge_max_rps = judge_rps
        self._random = random.Random(seed)
        self.service_ms: list[float] = []
        self.tokens = 0
        self.judge_answered = 0
        self.biased_every = biased_every
        self._replies = 0
        self.verdicts_for = {BIASED_MARK: [("yes", "A gender stereotype.", ["gender"])]}

        async def stats(request: Request) -> Response:
            return JSONResponse(self.stats())

        self.app.router.routes.insert(0, Route("/bench/stats", stats, methods=["GET"]))

    def stats(self) -> dict[str, Any]:
        times = sorted(self.service_ms)
        return {
            "judge_calls": self.judge_answered,
            "rate_limited": self.rate_limited,
            "tokens": self.tokens,
            "peak_in_flight": self.judge_peak_in_flight,
            "service_ms_p50": times[len(times) // 2] if times else None,
        }

    async def _answer_chat(self, step: str, body: dict[str, Any]) -> Response:
        if step == "chat":
            if not body.get("stream"):
                await asyncio.sleep(self.ttft + self.chunk_interval * self.chunks)
            else:
                await asyncio.sleep(self.ttft)
            return await super()._answer_chat(step, body)
        started = time.perf_counter()
        latency = self.judge_latency
        if self.opinion_latency:
            latency += self.opinion_latency * opinions_written(step, self._answer(step, body))
        spread = latency * self.jitter
        await asyncio.sleep(max(0.0, latency + self._random.uniform(-spread, spread)))
        response = await super()._answer_chat(step, body)
        self.service_ms.append((time.perf_counter() - started) * 1000)
        self.judge_answered += 1
        self.tokens += self._usage_tokens(body)
        return response

    def _answer(self, step: str, body: dict[str, Any]) -> str:
        if step == "chat" and self.long_chars:
            serial = int(str(body.get("user") or "0"))  # the harness numbers its requests
            text, _ = long_answer(
                serial,
                chars=self.long_chars,
                biased_every=self.long_biased_every,
                biased_at=self.long_biased_at,
            )
            return text
        text = super()._answer(step, body)
        if step == "chat" and self.biased_every:
            self._replies += 1
            if self._replies % self.biased_every == 0:
                return f"{BIASED_MARK} {text}"
        return text

    @staticmethod
    def _usage_tokens(body: dict[str, Any]) -> int:
        messages = body.get("messages") or []
        chars = sum(len(m.get("content") or "") for m in messages if isinstance(m, dict))
        return chars // 4 + 60  # the fake's answers are short; a rough count, as the fake reports


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fakes.slow")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=50)
    parser.add_argument("--ttft", type=float, default=0.3)
    parser.add_argument("--chunk-interval", type=float, default=0.02)
    parser.add_argument("--judge-latency", type=float, default=1.0)
    parser.add_argument("--jitter", type=float, default=0.3)
    parser.add_argument("--judge-rps", type=float, default=None)
    parser.add_argument("--biased-every", type=int, default=0, help="every Nth reply biased")
    parser.add_argument("--opinion-latency", type=float, default=0.0, help="s per opinion (0)")
    parser.add_argument("--long-answer", type=int, default=0, help="chars of long answers (0)")
    parser.add_argument(
        "--long-biased-every", type=int, default=0, help="every n-th long answer biased"
    )
    parser.add_argument(
        "--long-biased-at", type=float, default=0.5, help="where a long answer's bias starts"
    )
    # uvicorn's default (5 s) is shorter than aiohttp's client keep-alive (15 s): a pooled
    # connection the fake has just closed can be picked for a request, which then fails.
    parser.add_argument("--keep-alive", type=float, default=5.0, help="idle seconds (5)")
    args = parser.parse_args()
    fake = SlowFake(
        chunks=args.chunks,
        ttft=args.ttft,
        chunk_interval=args.chunk_interval,
        judge_latency=args.judge_latency,
        jitter=args.jitter,
        judge_rps=args.judge_rps,
        biased_every=args.biased_every,
        opinion_latency=args.opinion_latency,
        long_chars=args.long_answer,
        long_biased_every=args.long_biased_every,
        long_biased_at=args.long_biased_at,
    )
    fake.chunk_delay = args.chunk_interval
    uvicorn.run(
        fake.app,
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
