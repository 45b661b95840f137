"""Enforced answers beside a monitor flood (issue 33; about 5 minutes).

Enforced answers judged in windows once went through the judge's monitor lane and
waited behind saturating monitor traffic. Per way an enforced answer is judged
(whole; stream under `buffer`; stream `windowed` with `hold: window`; whole on a
`prejudge: stream` route) a gateway with 60 judge slots (the score cache off)
serves a key `enforce` at 2 req/s for `--duration` s alone, then beside a key
`monitor` of weight 20 sending 40 whole answers a second (80 judge calls a second
wanted, against 60 slots) after 5 s of that flood alone. The judge takes 1 s ± 20 %
a call; the upstream sends 2,500 characters (`bench.fakes.long_text`'s, none biased), the
first byte after 300 ms, then 125 pieces 10 ms apart, or whole after the same time.
Target: an enforced answer's p50 beside the flood ≤ 1.3x alone, every one scored.

    .venv/bin/python -m bench stream_lanes                 # writes bench/results/stream-lanes-*
    .venv/bin/python -m bench stream_lanes --duration 10 --cells buffer
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import functools
import json
import os
import re
import shlex
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.fakes.paced import Pace, start_paced
from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.machine import load_average, machine_line, source_note
from bench.harness.openloop import ticks
from bench.harness.paths import RESULTS
from bench.harness.procs import Processes, ServerProcess
from bench.harness.report import fmt, percentile, progress
from bench.harness.store import get_json, store_rows
from bench.judge.lanes import KEYS, LANE

__all__ = ["VARIANTS", "Variant", "main", "markdown", "report", "summary", "targets"]

ANSWER_CHARS = 2500
CHUNKS = ANSWER_CHARS // 20
TTFT = 0.3
CHUNK_INTERVAL = 0.01
JUDGE_LATENCY = 1.0
JITTER = 0.2
SLOTS = 60
MONITOR_WEIGHT = 20
ENFORCE_RATE = 2.0
FLOOD_RATE = 40.0
WARMUP = 5.0
TARGET = 1.3
_SUMS = ("calls", "wait_seconds", "answer_seconds")
# The judge's slots, and every answer judged however alike.
_JUDGE = {"limits": {"max_concurrency": SLOTS}, "cache": {"size": 0}}


@dataclass(frozen=True)
class Variant:
    """A way an enforced answer is judged: streamed or not, the policy's and route's fields."""

    name: str
    stream: bool
    policy: dict[str, Any] = field(default_factory=dict)
    route: dict[str, Any] = field(default_factory=dict)


VARIANTS = (
    Variant("whole", False),
    Variant("stream buffer", True, {"stream_policy": "buffer"}),
    Variant("stream windowed", True, {"stream_policy": "windowed", "windows": {"hold": "window"}}),
    Variant("whole, prejudge: stream", False, route={"prejudge": "stream"}),
)


@dataclass
class Sent:
    started: float
    first_ms: float | None = None
    total_ms: float | None = None
    status: int | None = None
    run_id: str | None = None


_log = progress("stream_lanes")


def settings_for(upstream: str, judge: str, store: Path, variant: Variant) -> dict[str, Any]:
    """The gateway's settings for `variant`: the two keys, the judge's 60 slots."""
    config = gateway_config(upstream, judge, store=store)
    config["upstream"].update(variant.route)
    config["judge"].update(_JUDGE)
    config["keys"] = [
        {"key": KEYS["enforce"], "name": "enforce", "policy": "strict"},
        {"key": KEYS["monitor"], "name": "monitor", "weight": MONITOR_WEIGHT},
    ]
    config["policies"]["strict"] = {"mode": "enforce", **variant.policy}
    return config


def _fake(procs: Processes, work: Path, name: str) -> ServerProcess:
    pace = Pace(
        chunks=CHUNKS,
        ttft=TTFT,
        chunk_interval=CHUNK_INTERVAL,
        judge_latency=JUDGE_LATENCY,
        jitter=JITTER,
        long_chars=ANSWER_CHARS,
    )
    return start_paced(procs, name, pace, log_dir=work)


async def _one(
    session: aiohttp.ClientSession, url: str, key: str, serial: int, stream: bool, sent: Sent
) -> None:
    body = {
        "model": "m", "messages": [{"role": "user", "content": "Tell me about bridges."}],
        "stream": stream, "user": str(serial),  # the fake's answer number: its own text
    }  # fmt: skip
    headers = {"authorization": f"Bearer {KEYS[key]}"}
    try:
        async with session.post(f"{url}/v1/chat/completions", json=body, headers=headers) as got:
            sent.status, sent.run_id = got.status, got.headers.get("x-bias-run-id")
            async for _ in got.content.iter_any():
                if sent.first_ms is None:
                    sent.first_ms = (time.perf_counter() - sent.started) * 1000
    except (aiohttp.ClientError, TimeoutError):
        sent.status = None
    sent.total_ms = (time.perf_counter() - sent.started) * 1000


async def paced(
    session: aiohttp.ClientSession,
    url: str,
    key: str,
    rate: float,
    stream: bool,
    first_serial: int,
    stop: asyncio.Event,
) -> list[Sent]:
    """An open loop: a request every 1/rate s, each its own task, until `stop`; then the lot."""
    sent: list[Sent] = []
    tasks = []
    async for index in ticks(rate, stop=stop):
        one = Sent(started=time.perf_counter())
        sent.append(one)
        serial = first_serial + index
        tasks.append(asyncio.create_task(_one(session, url, key, serial, stream, one)))
    await asyncio.gather(*tasks)
    return sent


def _after(seconds: float) -> asyncio.Event:
    """An event set `seconds` from now."""
    event = asyncio.Event()
    asyncio.get_running_loop().call_later(seconds, event.set)
    return event


def summary(sent: list[Sent], records: dict[str, str]) -> dict[str, Any]:
    """The enforced requests' figures: how many, their statuses, how many their records say
    scored (`records`: a run id's status), total and first-byte times."""
    ok = [one for one in sent if one.status == 200 and one.total_ms is not None]
    totals = [one.total_ms for one in ok if one.total_ms is not None]
    firsts = [one.first_ms for one in ok if one.first_ms is not None]
    return {
        "n": len(sent),
        "answered": len(ok),
        "statuses": dict(Counter(str(one.status or "client error") for one in sent)),
        "scored": sum(records.get(one.run_id or "") == "scored" for one in sent),
        "p50_ms": percentile(totals, 0.5, 1),
        "p95_ms": percentile(totals, 0.95, 1),
        "first_byte_p50_ms": percentile(firsts, 0.5, 1),
    }


def _lanes(gateway: ServerProcess) -> dict[str, dict[str, float]]:
    """The gateway's judge calls, slot waits and answer times by lane, so far (sums)."""
    auth = {"authorization": f"Bearer {KEYS['monitor']}"}
    request = urllib.request.Request(f"{gateway.url}/metrics", headers=auth)
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    found: dict[str, dict[str, float]] = {}
    for name, lane, value in LANE.findall(text):
        found.setdefault(lane, {})[name] = float(value)
    return found


def lane_means(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Per lane between two readings: judge calls, mean ms waited for a slot and answered."""
    means = {}
    for lane, now in after.items():
        was = before.get(lane, {})
        spent = {name: now.get(name, 0.0) - was.get(name, 0.0) for name in _SUMS}
        calls = spent["calls"]
        means[lane] = {
            "calls": calls,
            "mean_wait_ms": round(1000 * spent["wait_seconds"] / calls, 1) if calls else 0.0,
            "mean_answer_ms": round(1000 * spent["answer_seconds"] / calls, 1) if calls else 0.0,
        }
    return means


async def _phases(
    gateway: ServerProcess, judge: ServerProcess, store: Path, variant: Variant, duration: float
) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        enforce = functools.partial(paced, session, gateway.url, "enforce", ENFORCE_RATE)
        lanes_at = _lanes(gateway)
        _log(f"{variant.name}: enforce alone")
        alone = await enforce(variant.stream, 1, _after(duration))
        alone_lanes = lane_means(lanes_at, _lanes(gateway))
        _log(f"{variant.name}: monitor flood, {WARMUP:g} s before enforce joins")
        stop = asyncio.Event()
        flood = asyncio.create_task(
            paced(session, gateway.url, "monitor", FLOOD_RATE, False, 100_000, stop)
        )
        await asyncio.sleep(WARMUP)
        lanes_at, judged_at = _lanes(gateway), get_json(f"{judge.url}/bench/stats")
        began = time.monotonic()
        _log(f"{variant.name}: enforce beside the flood")
        beside = await enforce(variant.stream, 10_000, _after(duration))
        seconds = time.monotonic() - began
        beside_lanes = lane_means(lanes_at, _lanes(gateway))
        judged = get_json(f"{judge.url}/bench/stats")
        stop.set()
        flooded = await flood
    calls = judged["judge_calls"] - judged_at["judge_calls"]
    enforce_calls = alone_lanes.get("enforce", {}).get("calls", 0.0)
    records = {row["run_id"]: row["status"] for row in store_rows(store)}
    return {
        "variant": variant.name,
        "alone": summary(alone, records),
        "beside": summary(beside, records),
        "flood": {"rate": FLOOD_RATE, "statuses": summary(flooded, records)["statuses"]},
        "judge_calls_per_s_beside": round(calls / seconds, 1),
        "judge_calls_per_answer": round(enforce_calls / len(alone), 1) if alone else None,
        "lanes_alone": alone_lanes,
        "lanes_beside": beside_lanes,
    }


def _cell(
    procs: Processes, work: Path, upstream: ServerProcess, variant: Variant, duration: float
) -> dict[str, Any]:
    slug = re.sub(r"\W+", "-", variant.name)
    judge = _fake(procs, work, f"judge-{slug}")
    store = work / f"{slug}.db"
    config = settings_for(upstream.url, judge.url, store, variant)
    gateway = start_gateway(procs, f"gateway-{slug}", config, log_dir=work)
    try:
        result = asyncio.run(_phases(gateway, judge, store, variant, duration))
    finally:
        procs.stop(gateway)
        procs.stop(judge)
    return ratios(result)


def ratios(cell: dict[str, Any]) -> dict[str, Any]:
    """`cell` with beside/alone at p50 and p95 (None where a side has no figure)."""
    for name in ("p50", "p95"):
        alone, beside = cell["alone"][f"{name}_ms"], cell["beside"][f"{name}_ms"]
        cell[f"ratio_{name}"] = round(beside / alone, 2) if alone and beside is not None else None
    return cell


def targets(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Issue 33's: p50 beside the flood within 1.3x of alone; every enforced answer scored."""
    rows = []
    for cell in cells:
        ratio = cell["ratio_p50"]
        sides = (cell["alone"], cell["beside"])
        answered, scored = (sum(side[name] for side in sides) for name in ("answered", "scored"))
        sent = sum(side["n"] for side in sides)
        rows += [
            (f"{cell['variant']}: p50 beside / alone", f"≤ {TARGET:g}", ratio,
             ratio is not None and ratio <= TARGET),
            (f"{cell['variant']}: enforced requests answered 200 and scored", "all",
             f"{answered}, {scored} of {sent}", answered == scored == sent),
        ]  # fmt: skip
    return [
        {"name": name, "wanted": wanted, "measured": measured, "met": met}
        for name, wanted, measured, met in rows
    ]


def markdown(cells: list[dict[str, Any]], found: list[dict[str, Any]]) -> str:
    lines = [
        "| cell | n alone / beside | p50 ms alone | p50 ms beside | p50 ratio"
        " | p95 ms alone | p95 ms beside | p95 ratio | first byte p50 ms alone / beside"
        " | judge calls an answer | judge calls/s beside | enforce lane wait ms alone / beside"
        " | monitor lane wait ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in cells:
        alone, beside = cell["alone"], cell["beside"]
        wait = [cell[f"lanes_{side}"].get(lane, {}).get("mean_wait_ms") for side, lane in
                (("alone", "enforce"), ("beside", "enforce"), ("beside", "monitor"))]  # fmt: skip
        values = [
            cell["variant"], f"{alone['n']} / {beside['n']}", alone["p50_ms"], beside["p50_ms"],
            cell["ratio_p50"], alone["p95_ms"], beside["p95_ms"], cell["ratio_p95"],
            f"{fmt(alone['first_byte_p50_ms'])} / {fmt(beside['first_byte_p50_ms'])}",
            cell["judge_calls_per_answer"], cell["judge_calls_per_s_beside"],
            f"{fmt(wait[0])} / {fmt(wait[1])}", wait[2],
        ]  # fmt: skip
        lines.append("| " + " | ".join(fmt(value) for value in values) + " |")
    lines += ["", f"Target: p50 beside / alone ≤ {TARGET:g} in every cell.", ""]
    lines += ["| target | wanted | measured | met |", "|---|---|---|---|"]
    for t in found:
        met = "yes" if t["met"] else "no"
        lines.append(f"| {t['name']} | {t['wanted']} | {fmt(t['measured'])} | {met} |")
    return "\n".join(lines)


def report(results: dict[str, Any]) -> str:
    """The result file: what ran, on what machine, with what command, and the tables."""
    meta = results["meta"]
    return (
        f"# Enforced answers beside a monitor flood, {meta['date']} UTC\n\n"
        f"Machine: {meta['machine']}; load average {meta['load_average_before']} before,"
        f" {meta['load_average_after']} after. Code: {meta['commit']}.\n"
        f"Command: `{meta['command']}`.\n\n"
        + (f"{meta['note']}\n\n" if meta.get("note") else "")
        + f"Judge: {JUDGE_LATENCY:g} s ± {JITTER:.0%} a call, {SLOTS} slots"
        f" (`judge.limits.max_concurrency`). Upstream: {ANSWER_CHARS:,} characters, first byte"
        f" after {TTFT:g} s, {CHUNKS} pieces {CHUNK_INTERVAL * 1000:g} ms apart. Enforce"
        f" {ENFORCE_RATE:g} req/s for {results['duration']:g} s alone, then beside monitor"
        f" (weight {MONITOR_WEIGHT}) at {FLOOD_RATE:g} whole answers a second, {WARMUP:g} s"
        " after the flood began.\n\n" + markdown(results["cells"], results["targets"]) + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench stream_lanes", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "--duration", type=float, default=20.0, help="seconds of enforce load a phase (20)"
    )
    parser.add_argument("--cells", default="", help="only the cells whose name holds one of a,b")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--note", default="", help="a line for the result: what else ran")
    args = parser.parse_args(argv)
    variants = tuple(v for v in VARIANTS if any(part in v.name for part in args.cells.split(",")))
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    now = datetime.datetime.now(datetime.UTC)
    meta: dict[str, Any] = {
        "date": now.strftime("%Y-%m-%d-%H%M"),
        "machine": machine_line(),
        "commit": source_note(),
        "command": shlex.join(["python", "-m", "bench", "stream_lanes", *(argv or sys.argv[1:])]),
        "load_average_before": load_average(),
        "note": args.note,
    }
    with tempfile.TemporaryDirectory(prefix="bench-stream-lanes-") as tmp, Processes() as procs:
        work = Path(tmp)
        upstream = _fake(procs, work, "upstream")
        cells = [_cell(procs, work, upstream, variant, args.duration) for variant in variants]
    meta["load_average_after"] = load_average()
    found = targets(cells)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"stream-lanes-{meta['date']}"
    results = {"meta": meta, "duration": args.duration, "cells": cells, "targets": found}
    Path(f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    Path(f"{stem}.md").write_text(report(results))
    print(markdown(cells, found))
    print(f"wrote {stem}.json, {stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
