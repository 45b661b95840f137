"""The long-answer scenario: enforcing on a 2,000-character stream.

The upstream sends its first byte after 300 ms, then about 2,000 characters in
20-character chunks 30 ms apart (`bench.fakes.long_text`: an opinion every third
sentence; every fourth answer carries a run of biased opinions at its middle).
The judge takes 0.4 s plus 60 ms for each opinion it writes, ± 30 %, and reads
the text it is asked about. For each rate (20 and 100 req/s, paced open loop)
it measures the upstream directly, then the gateway in enforce mode under each
stream policy: buffer as before and pre-judged, windowed with each hold,
passthrough, and the non-streamed answer.

Per cell: the client's time to first byte and to last byte over direct, the
wait after the upstream's last byte (in judge round trips: that wait over the
median judge call the cell saw; a window's judgement is two calls), judge
calls and tokens per answer (the store's), and, over the biased answers, how
many characters from the start of the biased run reached the client.
`--tokens` prints only the table of judge tokens per answer for a few window
sizes against judging the whole text once, computed from the prompts.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.fakes.long_text import (
    ANSWER_CHARS,
    BIASED_AT,
    BIASED_WORD,
    CHUNK_CHARS,
    is_biased_answer,
    long_answer,
)
from bench.fakes.paced import Pace, start_paced
from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.openloop import ticks
from bench.harness.paths import RESULTS
from bench.harness.procs import Processes, ServerProcess
from bench.harness.report import fmt, percentile, progress
from bench.harness.store import get_json, store_rows
from bench.streams.window_tokens import token_table, tokens_markdown

__all__ = ["CELLS", "main"]

TTFT = 0.3
CHUNK_INTERVAL = 0.03
CHUNKS = ANSWER_CHARS // CHUNK_CHARS
JUDGE_LATENCY = 0.4
OPINION_LATENCY = 0.06
JITTER = 0.3
BIASED_EVERY = 4
# The whole biased answer scores about 0.4: blocked under any policy of the scenario.
THRESHOLDS = {"flag_threshold": 0.15, "block_threshold": 0.3}

# (name, stream, policy fields; `prejudge` is the upstream route's setting instead).
CELLS: list[tuple[str, bool, dict[str, Any]]] = [
    ("buffer (before)", True, {"stream_policy": "buffer", "prejudge_buffer": False}),
    ("buffer, pre-judged", True, {"stream_policy": "buffer"}),
    ("windowed, hold: window", True, {"stream_policy": "windowed", "hold": "window"}),
    ("windowed, hold: none", True, {"stream_policy": "windowed", "hold": "none"}),
    ("passthrough", True, {"stream_policy": "passthrough"}),
    ("non-streamed", False, {}),
    ("non-streamed, prejudge: stream", False, {"prejudge": "stream"}),
]


@dataclass
class Sent:
    serial: int
    started: float
    first_ms: float | None = None
    last_ms: float | None = None
    status: int | None = None
    run_id: str | None = None
    text: str = ""


@dataclass
class Load:
    sent: list[Sent] = field(default_factory=list)


_log = progress("long_answer")


def _fake(procs: Processes, work: Path, name: str) -> ServerProcess:
    pace = Pace(
        chunks=CHUNKS,
        ttft=TTFT,
        chunk_interval=CHUNK_INTERVAL,
        judge_latency=JUDGE_LATENCY,
        opinion_latency=OPINION_LATENCY,
        jitter=JITTER,
        long_chars=ANSWER_CHARS,
        long_biased_every=BIASED_EVERY,
        long_biased_at=BIASED_AT,
    )
    return start_paced(procs, name, pace, log_dir=work)


def _gateway(
    procs: Processes, work: Path, name: str, upstream: str, judge: str, fields: dict[str, Any]
) -> tuple[ServerProcess, Path]:
    store = work / f"{name}.db"
    fields = dict(fields)
    config = gateway_config(upstream, judge, store=store, mode="enforce")
    if "prejudge" in fields:
        config["upstream"]["prejudge"] = fields.pop("prejudge")
    config["policies"]["default"].update(THRESHOLDS, **fields)
    return start_gateway(procs, name, config, log_dir=work), store


def _content(data: bytes) -> str:
    """The answer's text in a chat stream's bytes (whole events only)."""
    text = []
    for line in data.split(b"\n"):
        if not line.startswith(b"data: {"):
            continue
        try:
            chunk = json.loads(line[6:])
        except ValueError:
            continue
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or choice.get("message") or {}
            text.append(delta.get("content") or "")
    return "".join(text)


async def open_loop(url: str, *, rate: float, duration: float, stream: bool) -> Load:
    load = Load()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=120)
    ) as session:

        async def one(sent: Sent) -> None:
            body = {
                "model": "m",
                "messages": [{"role": "user", "content": "Tell me about bridges."}],
                "stream": stream,
                "user": str(sent.serial),
            }
            received = b""
            try:
                async with session.post(f"{url}/v1/chat/completions", json=body) as response:
                    sent.status = response.status
                    sent.run_id = response.headers.get("x-bias-run-id")
                    async for piece in response.content.iter_any():
                        if sent.first_ms is None:
                            sent.first_ms = (time.perf_counter() - sent.started) * 1000
                        received += piece
            except (aiohttp.ClientError, TimeoutError):
                sent.status = None
            sent.last_ms = (time.perf_counter() - sent.started) * 1000
            if stream:
                sent.text = _content(received)
            elif sent.status == 200:
                sent.text = json.loads(received)["choices"][0]["message"]["content"] or ""

        tasks = []
        async for index in ticks(rate, count=int(rate * duration)):
            sent = Sent(serial=index + 1, started=time.perf_counter())
            load.sent.append(sent)
            tasks.append(asyncio.create_task(one(sent)))
        await asyncio.gather(*tasks)
    return load


def _leaked(sent: Sent) -> int | None:
    """Characters from the start of a biased answer's biased run that reached the client."""
    if not is_biased_answer(sent.serial, BIASED_EVERY):
        return None
    text, biased_from = long_answer(
        sent.serial, chars=ANSWER_CHARS, biased_every=BIASED_EVERY, biased_at=BIASED_AT
    )
    assert biased_from is not None
    got = sent.text
    if not text.startswith(got) and BIASED_WORD not in got:
        return 0  # not this answer's text at all (an error body)
    return max(0, len(got) - biased_from) if text.startswith(got) else len(text) - biased_from


def _figures(load: Load, direct: dict[str, Any] | None) -> dict[str, Any]:
    ok = [s for s in load.sent if s.status is not None]
    firsts = [s.first_ms for s in ok if s.first_ms is not None]
    lasts = [s.last_ms for s in ok if s.last_ms is not None]
    figures: dict[str, Any] = {
        "sent": len(load.sent),
        "statuses": {
            str(status): sum(1 for s in load.sent if s.status == status)
            for status in sorted({s.status or 0 for s in load.sent})
        },
        "ttfb_p50_ms": percentile(firsts, 0.5, 1),
        "ttfb_p99_ms": percentile(firsts, 0.99, 1),
        "last_p50_ms": percentile(lasts, 0.5, 1),
        "last_p99_ms": percentile(lasts, 0.99, 1),
    }
    if direct is not None:
        for key in ("ttfb_p50_ms", "last_p50_ms", "last_p99_ms"):
            if figures[key] is not None and direct[key] is not None:
                figures[key.replace("_ms", "_over_direct_ms")] = round(
                    figures[key] - direct[key], 1
                )
    leaks = [leak for s in ok if (leak := _leaked(s)) is not None]
    figures["biased_answers"] = len(leaks)
    figures["biased_chars_delivered_max"] = max(leaks) if leaks else None
    figures["biased_answers_leaking"] = sum(1 for leak in leaks if leak > 0)
    return figures


def _cell(
    procs: Processes,
    work: Path,
    rate: float,
    duration: float,
    upstream: ServerProcess,
    cell: tuple[str, bool, dict[str, Any]],
    direct: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    label, stream, fields = cell
    name = f"cell{CELLS.index(cell)}-{rate:g}"  # each cell its own store
    judge = _fake(procs, work, f"judge-{name}")
    gateway, store = _gateway(procs, work, f"gateway-{name}", upstream.url, judge.url, fields)
    _log(f"{label} at {rate:g} req/s")
    load = asyncio.run(open_loop(gateway.url, rate=rate, duration=duration, stream=stream))
    time.sleep(1.0)  # the last records' writes
    figures = _figures(load, direct["stream" if stream else "whole"])
    judged = get_json(f"{judge.url}/bench/stats")
    rows = [row for row in store_rows(store) if row["status"] == "scored"]
    service = judged["service_ms_p50"]
    wait = figures.get("last_p50_over_direct_ms")
    result: dict[str, Any] = {
        "config": label,
        "rate": rate,
        "stream": stream,
        **figures,
        "judge_service_p50_ms": service,
        "wait_round_trips": round(wait / service, 2) if wait is not None and service else None,
        "judge_calls_per_answer": (
            round(statistics.mean(row["judge_calls"] or 0 for row in rows), 2) if rows else None
        ),
        "judge_tokens_per_answer": (
            round(statistics.mean(row["judge_tokens"] or 0 for row in rows)) if rows else None
        ),
        "records": {
            status: sum(1 for row in store_rows(store) if row["status"] == status)
            for status in ("scored", "error", "skipped", "pending")
        },
    }
    procs.stop(gateway)
    procs.stop(judge)
    return result


def run(rates: tuple[float, ...], duration: float, work: Path) -> dict[str, Any]:
    cells: list[dict[str, Any]] = []
    with Processes() as procs:
        upstream = _fake(procs, work, "upstream")
        for rate in rates:
            direct = {}
            for stream in (True, False):
                _log(f"direct ({'stream' if stream else 'whole'}) at {rate:g} req/s")
                load = asyncio.run(
                    open_loop(upstream.url, rate=rate, duration=duration, stream=stream)
                )
                direct["stream" if stream else "whole"] = _figures(load, None)
                cells.append(
                    {
                        "config": "direct",
                        "rate": rate,
                        "stream": stream,
                        **direct["stream" if stream else "whole"],
                    }
                )
            for cell in CELLS:
                cells.append(_cell(procs, work, rate, duration, upstream, cell, direct))
        procs.stop_all()
    return {"cells": cells, "tokens": token_table()}


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "| config | req/s | sent | TTFB p50 ms | TTFB over direct | last byte p50 ms"
        " | last byte over direct p50 / p99 | wait (judge calls) | judge calls/answer"
        " | judge tokens/answer | biased answers | leaking | biased chars delivered (max) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in results["cells"]:
        over = cell.get("last_p50_over_direct_ms")
        over99 = cell.get("last_p99_over_direct_ms")
        label = cell["config"] + ("" if cell["stream"] else " (whole)")
        lines.append(
            "| "
            + " | ".join(
                fmt(value)
                for value in (
                    label,
                    cell["rate"],
                    cell["sent"],
                    cell["ttfb_p50_ms"],
                    cell.get("ttfb_p50_over_direct_ms"),
                    cell["last_p50_ms"],
                    f"{fmt(over)} / {fmt(over99)}" if over is not None else None,
                    cell.get("wait_round_trips"),
                    cell.get("judge_calls_per_answer"),
                    cell.get("judge_tokens_per_answer"),
                    cell["biased_answers"],
                    cell["biased_answers_leaking"],
                    cell["biased_chars_delivered_max"],
                )
            )
            + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench long_answer", description=__doc__)
    parser.add_argument("--rates", default="20,100", help="comma-separated req/s (20,100)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per cell (10)")
    parser.add_argument("--tokens", action="store_true", help="print only the token table")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    args = parser.parse_args(argv)
    if args.tokens:
        print(tokens_markdown(token_table()))
        return 0
    rates = tuple(float(rate) for rate in args.rates.split(","))
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-long-") as work:
        results = run(rates, args.duration, Path(work))
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    results["meta"] = {"date": date, "rates": rates, "duration": args.duration}
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"long-answer-{date}"
    stem.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    report = (
        f"# Long-answer scenario, {date}\n\n"
        f"Upstream: first byte after {TTFT:g} s, then {ANSWER_CHARS} characters in"
        f" {CHUNK_CHARS}-character chunks {CHUNK_INTERVAL:g} s apart. Judge: {JUDGE_LATENCY:g} s"
        f" + {OPINION_LATENCY:g} s an opinion written, ± {JITTER:.0%}. Every {BIASED_EVERY}th"
        f" answer biased from about {BIASED_AT:.0%} of its length. Enforce, flag"
        f" {THRESHOLDS['flag_threshold']:g}, block {THRESHOLDS['block_threshold']:g}; paced open"
        f" loop for {args.duration:g} s a cell.\n\n"
        + markdown(results)
        + "\n\nJudge tokens per answer by window size (one biased answer, faithful pipeline):\n\n"
        + tokens_markdown(results["tokens"])
        + "\n"
    )
    stem.with_suffix(".md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
