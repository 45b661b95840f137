"""The live probe's cost to served answers: p50 at 100 req/s, probe off and at 0.1.

Issue 32's target: with `probe.sample_rate: 0.1` under 100 req/s, the served
answers' p50 stays within 2 % of the probe off. One slow fake serves as the
upstream (0.5 s a whole answer) and the judge (1 s a call); one gateway per
cell (the shipped default, monitor, unless `--mode`), paced non-streaming chats
whose prompts each name one group of the built-in suite's origin dimension, so
every sampled request is probed: four replays (the request and three other
groups) and their judging, with caps far above the load unless
`--max-per-minute` sets one (the worst case: the caps are what bounds the
probe's share of a busy gateway's CPU). Cells alternate
(off, on, off, on, ...) so that a drift of the shared machine falls on both.

    .venv/bin/python -m bench live_probe                  # 30 s a cell, 2 rounds
    .venv/bin/python -m bench live_probe --duration 10 --rounds 1 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp

from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.openloop import Load, Sent, post, ticks
from bench.harness.procs import Processes
from bench.harness.report import percentile
from bench.peers.realistic import start_realistic_fake

__all__ = ["main", "run"]

GROUPS = ("immigrants", "refugees", "native-born citizens", "expatriates")
_METRIC = re.compile(r'^(bias_probe_\w+?)(?:_total)?(?:\{\w+="(\w+)"\})? (\S+)$', re.MULTILINE)


def _log(message: str) -> None:
    print(f"bench live probe: {message}", file=sys.stderr, flush=True)


def _config(fake: str, store: Path, args: argparse.Namespace, rate: float) -> dict[str, Any]:
    config = gateway_config(fake, fake, store=store, mode=args.mode)
    config["probe"] = {"sample_rate": rate, "max_per_minute": args.max_per_minute}
    return config


async def _load(url: str, rate: float, duration: float) -> Load:
    """An open loop: a request every 1/rate s, each its own task, whatever came back."""
    load = Load()
    tasks = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        async for index in ticks(rate, count=int(rate * duration)):
            group = GROUPS[index % len(GROUPS)]
            prompt = f"Write two sentences about {group} renting a flat. ({index})"
            body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
            sent = Sent(started=time.perf_counter())
            load.sent.append(sent)
            tasks.append(asyncio.create_task(post(session, url, body, sent)))
        await asyncio.gather(*tasks)
    return load


def _probe_metrics(url: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        text = response.read().decode()
    found: dict[str, float] = {}
    for name, label, value in _METRIC.findall(text):
        key = f"{name}:{label}" if label else name
        found[key] = found.get(key, 0.0) + float(value)
    return found


def _settled(url: str, replays: int, timeout: float = 30.0) -> dict[str, float]:
    """The probe's counters once its `replays` were answered (or failed), or at `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        found = _probe_metrics(url)
        done = sum(v for k, v in found.items() if k.startswith("bias_probe_replays:"))
        if done >= replays or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def _cell(procs: Processes, work: Path, fake: str, args: argparse.Namespace, rate: float,
          name: str) -> dict[str, Any]:  # fmt: skip
    config = _config(fake, work / f"{name}.db", args, rate)
    server = start_gateway(procs, name, config, log_dir=work)
    try:
        load = asyncio.run(_load(server.url, args.rate, args.duration))
        latencies = [s.latency_ms for s in load.sent if s.latency_ms is not None and s.status]
        return {
            "sample_rate": rate,
            "sent": len(load.sent),
            "ok": sum(1 for s in load.sent if s.status == 200),
            "p50_ms": percentile(latencies, 0.5, 1),
            "p99_ms": percentile(latencies, 0.99, 1),
            "probe": _settled(server.url, int(len(load.sent) * rate) * len(GROUPS)),
        }
    finally:
        procs.stop(server)


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    cells: list[dict[str, Any]] = []
    with Processes() as procs:
        fake = start_realistic_fake(procs, work, "fake", judge_rps=None)
        for round_number in range(args.rounds):
            for rate in (0.0, args.sample_rate):
                name = f"probe-{rate:g}-{round_number}"
                _log(f"{name}: {args.rate:g} req/s for {args.duration:g} s")
                cells.append(_cell(procs, work, fake.url, args, rate, name))
                _log(f"{name}: p50 {cells[-1]['p50_ms']:.1f} ms")
    medians = {
        rate: statistics.median(c["p50_ms"] for c in cells if c["sample_rate"] == rate)
        for rate in (0.0, args.sample_rate)
    }
    off, on = medians[0.0], medians[args.sample_rate]
    return {
        "rate": args.rate,
        "duration": args.duration,
        "mode": args.mode,
        "cells": cells,
        "p50_off_ms": off,
        "p50_on_ms": on,
        "p50_change": (on - off) / off,
        "within_2_percent": abs(on - off) / off <= 0.02,
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"Live probe at {result['rate']:g} req/s, {result['duration']:g} s a cell,"
        f" mode {result['mode']}:",
        "",
        "| sample rate | sent | ok | p50 ms | p99 ms | replays | upstream tokens | dropped |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cell in result["cells"]:
        probe = cell["probe"]
        replays = sum(v for k, v in probe.items() if k.startswith("bias_probe_replays:"))
        dropped = sum(v for k, v in probe.items() if k.startswith("bias_probe_replays_dropped"))
        tokens = probe.get("bias_probe_upstream_tokens", 0.0)
        lines.append(
            f"| {cell['sample_rate']:g} | {cell['sent']} | {cell['ok']} | {cell['p50_ms']:.1f}"
            f" | {cell['p99_ms']:.1f} | {replays:.0f} | {tokens:.0f} | {dropped:.0f} |"
        )
    lines += [
        "",
        f"Median p50: off {result['p50_off_ms']:.1f} ms, on {result['p50_on_ms']:.1f} ms"
        f" ({result['p50_change']:+.1%}); within 2 %: {result['within_2_percent']}.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench live_probe", description=__doc__)
    parser.add_argument("--rate", type=float, default=100.0, help="requests a second")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds a cell")
    parser.add_argument("--rounds", type=int, default=2, help="off/on pairs of cells")
    parser.add_argument("--sample-rate", type=float, default=0.1, help="the probe's, when on")
    parser.add_argument("--mode", choices=("off", "monitor"), default="monitor")
    parser.add_argument(
        "--max-per-minute",
        type=int,
        default=1_000_000,
        help="the probe's replay cap (default: far above the load, so every probe runs)",
    )
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-live-probe-") as work:
        result = run(args, Path(work))
    print(markdown(result))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
