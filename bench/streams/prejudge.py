"""An enforced long whole answer's wait after the upstream's last byte, by `prejudge`.

`python -m bench prejudge [--requests 8]`: the wait with and without `prejudge: stream`.

The long-answer scenario of issue 20: the upstream's first byte after 300 ms, then
about 2,000 characters in 20-character pieces every 30 ms (a whole answer comes
after the same 3.3 s); a judge that takes 0.4 s plus 60 ms per opinion it writes,
± 30 %, which finds one opinion per 200 characters of the answer text in its
prompt (ten for the whole answer: ten opinions written, then ten verdicts; fewer
for a window of it).
The explanation is deferred (the default), so an enforced answer waits for two
judge calls after the text is complete, unless judging began while it arrived.

The fake upstream and judge run in this process (a thread) and note when the
upstream sent its last byte; the gateway is its own process (`bias-gateway
serve`); requests go one at a time, each answer distinct, so neither the score
cache nor other requests hide the judge. Cases: the upstream directly; enforce
whole without and with `prejudge: stream`; enforce stream with `buffer`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from starlette.responses import JSONResponse, Response, StreamingResponse

from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.procs import Processes
from testkit.fake_openai import FakeOpenAI, Fault
from testkit.rich_answers import RichAnswer, RichChoice
from testkit.servers import ServerThread

TTFT = 0.3
PIECE_INTERVAL = 0.03
ANSWER_CHARS = 2000
PIECE_CHARS = 20
JUDGE_BASE = 0.4
PER_OPINION = 0.06
JITTER = 0.3
CHARS_PER_OPINION = 200
SENTENCE = "Engineers check each load path before a bridge opens to traffic. "
SENTENCE_MARK = "each load path"  # how the judge counts the answer's text in its prompt


class PacedFake(FakeOpenAI):
    """The fake upstream and judge at the scenario's pace; `last_byte` is when the
    upstream's latest answer ended (time.perf_counter, this process's clock)."""

    def __init__(self) -> None:
        super().__init__()
        self.last_byte = 0.0
        self.judge_seconds: list[float] = []
        self._random = random.Random(20)

    async def _answer_chat(self, step: str, body: dict[str, Any]) -> Response:
        if step == "chat":
            if body.get("stream"):
                await asyncio.sleep(TTFT)
                return await super()._answer_chat(step, body)
            await asyncio.sleep(TTFT + PIECE_INTERVAL * (ANSWER_CHARS // PIECE_CHARS))
            response = await super()._answer_chat(step, body)
            self.last_byte = time.perf_counter()
            return response
        content, written = self._judge_answer(step, str(body["messages"][-1]["content"]))
        latency = JUDGE_BASE + PER_OPINION * written
        latency *= 1 + self._random.uniform(-JITTER, JITTER)
        await asyncio.sleep(latency)
        self.judge_seconds.append(latency)
        return JSONResponse(self._completion(body, content))

    def _judge_answer(self, step: str, prompt: str) -> tuple[str, int]:
        """The judge's answer to `prompt` and how many items it wrote: one opinion per
        `CHARS_PER_OPINION` characters of answer the prompt holds (a window's text and
        its context, or the whole answer), then one verdict per opinion it is given."""
        if step == "preprocess":
            found = max(1, prompt.count(SENTENCE_MARK) * len(SENTENCE) // CHARS_PER_OPINION)
            opinions = [f"Opinion {n}." for n in range(found)]
            return json.dumps({"opinions": opinions}), found
        if step in ("analyze", "assess"):
            found = max(1, prompt.count("Opinion "))
            verdict = {"result": "no", "reason": "A neutral statement."}
            key = "results" if step == "analyze" else "verdicts"
            return json.dumps({key: [verdict] * found}), found
        return "The answer is neutral.", 0

    def _streaming(
        self, frames: Iterable[Any], fault: Fault | None, headers: dict[str, str] | None = None
    ) -> StreamingResponse:
        response = super()._streaming(frames, fault, headers)
        inner = response.body_iterator

        async def timed() -> Any:
            async for part in inner:
                yield part
            self.last_byte = time.perf_counter()

        response.body_iterator = timed()
        return response


@dataclass
class Case:
    name: str
    via_gateway: bool
    stream: bool = False
    prejudge: bool = False
    totals: list[float] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)  # after the upstream's last byte
    judge_calls: list[int] = field(default_factory=list)
    verdicts: set[str] = field(default_factory=set)


CASES = (
    Case("direct, whole", via_gateway=False),
    Case("enforce, whole", via_gateway=True),
    Case("enforce, whole, prejudge: stream", via_gateway=True, prejudge=True),
    Case("enforce, stream, buffer", via_gateway=True, stream=True),
)


def long_answer(number: int) -> str:
    text = (SENTENCE * (ANSWER_CHARS // len(SENTENCE) + 1))[: ANSWER_CHARS - 7]
    return f"{text} #{number:05d}"  # distinct, so the cache never answers


def run(requests: int) -> tuple[list[Case], list[float]]:
    """The cases, measured, and the judge calls' durations."""
    fake = PacedFake()
    fake.chunk_delay = PIECE_INTERVAL
    server = ServerThread(fake.app).start()
    fake.base_url = f"{server.url}/v1"
    served = 0
    try:
        with tempfile.TemporaryDirectory() as tmp, Processes() as procs:
            for case in CASES:
                gateway = None
                url = fake.base_url
                if case.via_gateway:
                    gateway = _start_gateway(procs, Path(tmp), server.url, case)
                    url = f"{gateway.url}/v1"
                with httpx.Client(timeout=60) as http:
                    for attempt in range(requests + 1):
                        served += 1
                        fake.rich = RichAnswer(
                            choices=[RichChoice(content=long_answer(served))],
                            pieces=ANSWER_CHARS // PIECE_CHARS,
                            logprobs=False,
                        )
                        # The first request of a case warms its connections up, uncounted.
                        _one(http, url, fake, case, counted=attempt > 0)
                if gateway is not None:
                    procs.stop(gateway)
    finally:
        server.stop()
    return list(CASES), fake.judge_seconds


def _one(http: httpx.Client, url: str, fake: PacedFake, case: Case, *, counted: bool) -> None:
    body = {
        "model": "gpt-long",
        "messages": [{"role": "user", "content": "Describe bridge engineers."}],
        "stream": case.stream,
    }
    calls = fake.judge_calls()
    started = time.perf_counter()
    with http.stream("POST", f"{url}/chat/completions", json=body) as response:
        for _ in response.iter_raw():
            pass
        ended = time.perf_counter()
        verdict = response.headers.get("x-bias-verdict", "-")
    if response.status_code != 200:
        raise RuntimeError(f"{case.name}: HTTP {response.status_code}")
    if not counted:
        return
    case.totals.append(ended - started)
    case.waits.append(ended - fake.last_byte)
    case.judge_calls.append(fake.judge_calls() - calls)
    case.verdicts.add(verdict)


def _start_gateway(procs: Processes, work: Path, upstream: str, case: Case) -> Any:
    name = case.name.replace(", ", "-").replace(": ", "-").replace(" ", "-")
    config = gateway_config(upstream, upstream, store=work / f"{name}.db", mode="enforce")
    if case.prejudge:
        config["upstream"]["prejudge"] = "stream"
    config["judge"]["cache_size"] = 0
    config["policies"]["default"]["stream_policy"] = "buffer"
    return start_gateway(procs, name, config, log_dir=work, log_level=None)


def markdown(cases: list[Case], judge_seconds: list[float]) -> str:
    judge = statistics.median(judge_seconds) if judge_seconds else None
    lines = [
        "| case | requests | client total p50 s | wait after the upstream's last byte p50 s"
        " | in judge calls (p50 %s s) | judge calls per answer | verdicts |"
        % (f"{judge:.2f}" if judge else "-"),
        "|---|---|---|---|---|---|---|",
    ]
    for case in cases:
        wait = statistics.median(case.waits)
        in_calls = f"{wait / judge:.2f}" if judge else "-"
        calls = statistics.median(case.judge_calls)
        lines.append(
            f"| {case.name} | {len(case.totals)} | {statistics.median(case.totals):.2f}"
            f" | {wait:.3f} | {in_calls} | {calls:g} | {', '.join(sorted(case.verdicts))} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench prejudge")
    parser.add_argument("--requests", type=int, default=8, help="per case (8)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = parser.parse_args(argv)
    cases, judge_seconds = run(args.requests)
    table = markdown(cases, judge_seconds)
    print(table)
    if args.out is not None:
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
