"""Judge lanes at 300 req/s (issue 21; about 6 minutes).

The judge is the bottleneck here, not the CPU: it answers in 1 s ± 30 % and at
most 600 calls a second (429 with `Retry-After` above it, a sliding one-second
window), so at 300 req/s and 2 calls a passing response it is full. The cells:

- enforce alone at 20 req/s (the baseline) and at 300 req/s;
- enforce 50 req/s beside monitor 250 req/s in one gateway (two keys);
- monitor with two keys at 280 and 20 req/s;
- monitor at 300 req/s with `judge.max_concurrency: auto`, starting from 8.

The upstream (0.3 s to the first byte, 0.5 s in all) is measured directly at
20 and 300 req/s, so an overhead is the gateway's p50 less the direct one.
Load, processes and store reading are `bench.peers.realistic`'s.

    .venv/bin/python -m bench judge_lanes                 # writes bench/results/judge-lanes-*
    .venv/bin/python -m bench judge_lanes --duration 10
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import itertools
import json
import os
import re
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.machine import load_average, machine_line
from bench.harness.openloop import Load, Sent, post, ticks
from bench.harness.procs import Processes, ServerProcess
from bench.harness.report import progress
from bench.harness.store import store_rows, wait_settled
from bench.judge.lanes_report import markdown, targets
from bench.peers.realistic import load_figures, start_realistic_fake

__all__ = ["LanesPlan", "main", "run_lanes"]

RATE = 300.0
JUDGE_RPS = 600.0
BASELINE_RATE = 20.0
KEYS = {"enforce": "sk-enforce", "monitor": "sk-monitor", "small": "sk-small"}
_LIMIT = re.compile(r"^bias_judge_concurrency_limit (\S+)$", re.MULTILINE)
LANE = re.compile(
    r'^bias_judge_lane_(calls|wait_seconds|answer_seconds)\{lane="(\w+)"\} (\S+)$', re.MULTILINE
)


@dataclass(frozen=True)
class LanesPlan:
    duration: float = 30.0
    drain_timeout: float = 60.0
    # Every rate, the judge's limit and the slots times this: the same shape of load at a
    # fraction of the CPU, for a shared machine where the gateway, not the judge, binds.
    scale: float = 1.0


@dataclass(frozen=True)
class Cell:
    """One gateway run: its streams (key name, req/s) and its judge settings."""

    name: str
    streams: tuple[tuple[str, float], ...]
    judge: dict[str, Any] = field(default_factory=dict)


CELLS = (
    Cell("enforce alone 20", (("enforce", BASELINE_RATE),)),
    Cell("enforce alone 300", (("enforce", RATE),)),
    Cell("enforce 50 + monitor 250", (("enforce", 50.0), ("monitor", 250.0))),
    Cell("monitor two keys 280 + 20", (("monitor", 280.0), ("small", 20.0))),
    Cell(
        "monitor 300, auto from 8",
        (("monitor", RATE),),
        {"max_concurrency": "auto", "concurrency_start": 8},
    ),
    # Above the judge's 600 calls/s at 1 s a call, so the limit has to find the judge's own.
    Cell(
        "monitor 300, auto from 8, ceiling 1024",
        (("monitor", RATE),),
        {"max_concurrency": "auto", "concurrency_start": 8, "concurrency_ceiling": 1024},
    ),
)


_log = progress("judge_lanes")


def _config(upstream: str, judge: str, store: Path, extra: dict[str, Any]) -> dict[str, Any]:
    config = gateway_config(upstream, judge, store=store)
    config["judge"].update(extra)
    config["keys"] = [
        {"key": KEYS["enforce"], "name": "enforce", "policy": "strict"},
        {"key": KEYS["monitor"], "name": "monitor"},
        {"key": KEYS["small"], "name": "small"},
    ]
    config["policies"]["strict"] = {"mode": "enforce"}
    return config


async def paced(
    session: aiohttp.ClientSession, url: str, api_key: str | None, rate: float, duration: float
) -> Load:
    """`bench.peers.realistic`'s open loop, one key: a request every 1/rate s, each its own task."""
    load = Load()
    body = {"model": "m", "messages": [{"role": "user", "content": "Tell me about engineers."}]}
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}

    tasks = []
    async for _ in ticks(rate, count=int(rate * duration)):
        sent = Sent(started=time.perf_counter())
        load.sent.append(sent)
        tasks.append(asyncio.create_task(post(session, url, body, sent, headers)))
    await asyncio.gather(*tasks)
    return load


async def _sample_judge(
    judge: ServerProcess, gateway: ServerProcess | None, into: list[dict[str, float]]
) -> None:
    """Every second: what the judge answered and refused so far, and the gateway's limit."""
    started = time.monotonic()
    async with aiohttp.ClientSession() as session:
        while True:
            with contextlib.suppress(aiohttp.ClientError, ValueError):
                async with session.get(f"{judge.url}/bench/stats") as response:
                    stats = await response.json()
                point = {
                    "t": round(time.monotonic() - started, 2),
                    "answered": float(stats["judge_calls"]),
                    "rate_limited": float(stats["rate_limited"]),
                }
                if gateway is not None:
                    auth = {"authorization": f"Bearer {KEYS['monitor']}"}
                    async with session.get(f"{gateway.url}/metrics", headers=auth) as response:
                        found = _LIMIT.search(await response.text())
                    if found:
                        point["limit"] = float(found.group(1))
                into.append(point)
            await asyncio.sleep(1.0)


async def _run_streams(
    url: str,
    streams: tuple[tuple[str | None, float], ...],
    duration: float,
    judge: ServerProcess | None = None,
    gateway: ServerProcess | None = None,
) -> tuple[list[Load], list[dict[str, float]]]:
    samples: list[dict[str, float]] = []
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        sampler = asyncio.create_task(_sample_judge(judge, gateway, samples)) if judge else None
        loads = await asyncio.gather(
            *(
                paced(session, url, KEYS[key] if key else None, rate, duration)
                for key, rate in streams
            )
        )
        if sampler is not None:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
    return list(loads), samples


def _scored_share(load: Load, store: Path) -> float | None:
    rows = {row["run_id"]: row for row in store_rows(store)}
    announced = [sent.run_id for sent in load.sent if sent.run_id]
    if not announced:
        return None
    scored = sum(1 for run_id in announced if rows.get(run_id, {}).get("status") == "scored")
    return round(scored / len(announced), 4)


def _lane_waits(gateway: ServerProcess) -> dict[str, dict[str, float]]:
    """Judge calls each lane let through, and the mean milliseconds they waited for a slot
    and the judge took to answer (as the gateway saw it)."""
    request = urllib.request.Request(
        f"{gateway.url}/metrics", headers={"authorization": f"Bearer {KEYS['monitor']}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    found: dict[str, dict[str, float]] = {}
    for name, lane, value in LANE.findall(text):
        found.setdefault(lane, {})[name] = float(value)

    def mean_ms(values: dict[str, float], name: str) -> float:
        calls = values.get("calls")
        return round(1000 * values.get(name, 0.0) / calls, 1) if calls else 0.0

    return {
        lane: {
            "calls": values.get("calls", 0.0),
            "mean_wait_ms": mean_ms(values, "wait_seconds"),
            "mean_answer_ms": mean_ms(values, "answer_seconds"),
        }
        for lane, values in found.items()
    }


def _scaled(cell: Cell, scale: float) -> Cell:
    """`cell` with its rates and judge slots times `scale` (the shipped 512 slots at 1)."""
    if scale == 1:
        return cell
    judge = dict(cell.judge)
    if judge.get("max_concurrency") == "auto":
        judge["concurrency_ceiling"] = round(judge.get("concurrency_ceiling", 512) * scale)
    else:
        judge["max_concurrency"] = round(512 * scale)
    streams = tuple((key, rate * scale) for key, rate in cell.streams)
    return Cell(cell.name, streams, judge)


def _allowance(samples: list[dict[str, float]], judge_rps: float) -> dict[str, Any]:
    """When the judge's answers first reached 80 % of its allowance, and the 429 share."""
    reached = None
    for before, after in itertools.pairwise(samples):
        seconds = after["t"] - before["t"]
        if seconds > 0 and (after["answered"] - before["answered"]) / seconds >= 0.8 * judge_rps:
            reached = after["t"]
            break
    last = samples[-1] if samples else {"answered": 0.0, "rate_limited": 0.0}
    calls = last["answered"] + last["rate_limited"]
    return {
        "reached_80pct_s": reached,
        "share_429": round(last["rate_limited"] / calls, 4) if calls else None,
        "peak_limit": max((point.get("limit", 0.0) for point in samples), default=None),
    }


def _cell(
    procs: Processes, work: Path, plan: LanesPlan, upstream: ServerProcess, cell: Cell
) -> dict[str, Any]:
    slug = re.sub(r"\W+", "-", cell.name)
    cell, judge_rps = _scaled(cell, plan.scale), JUDGE_RPS * plan.scale
    judge = start_realistic_fake(procs, work, f"judge-{slug}", judge_rps=judge_rps)
    store = work / f"{slug}.db"
    config = _config(upstream.url, judge.url, store, cell.judge)
    gateway = start_gateway(procs, f"gateway-{slug}", config, log_dir=work)
    _log(f"{cell.name} (judge limit {judge_rps:g} calls/s)")
    streams: tuple[tuple[str | None, float], ...] = cell.streams
    loads, samples = asyncio.run(_run_streams(gateway.url, streams, plan.duration, judge, gateway))
    settled = wait_settled(store, plan.drain_timeout)
    result: dict[str, Any] = {"cell": cell.name, "judge": cell.judge, "settled_s": settled}
    result["streams"] = [
        {
            "key": key,
            "rate": rate,
            "scored": _scored_share(load, store),
            **load_figures(load, store, None),
        }
        for (key, rate), load in zip(cell.streams, loads, strict=True)
    ]
    result["judge_samples"] = samples
    result["lanes"] = _lane_waits(gateway)
    result.update(_allowance(samples, judge_rps))
    procs.stop(gateway)
    procs.stop(judge)
    return result


def run_lanes(plan: LanesPlan, work: Path, cells: tuple[Cell, ...] = CELLS) -> dict[str, Any]:
    results: dict[str, Any] = {"plan": plan.__dict__, "direct": {}, "cells": []}
    with Processes() as procs:
        upstream = start_realistic_fake(procs, work, "slow-upstream", judge_rps=None)
        for name, rate in (("baseline", BASELINE_RATE), ("full", RATE)):
            _log(f"direct at {rate * plan.scale:g} req/s")
            streams = ((None, rate * plan.scale),)
            loads, _ = asyncio.run(_run_streams(upstream.url, streams, plan.duration))
            results["direct"][name] = {
                "rate": rate * plan.scale,
                **load_figures(loads[0], None, None),
            }
        for cell in cells:
            results["cells"].append(_cell(procs, work, plan, upstream, cell))
        procs.stop_all()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench judge_lanes", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load a cell (30)")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="rates, judge limit and slots times this (1)"
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument(
        "--cells", default="", help="only the cells whose name contains one of these (a,b)"
    )
    args = parser.parse_args(argv)
    wanted = args.cells.split(",")
    cells = tuple(cell for cell in CELLS if any(part in cell.name for part in wanted))
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    now = datetime.datetime.now()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-lanes-") as work:
        plan = LanesPlan(duration=args.duration, scale=args.scale)
        results = run_lanes(plan, Path(work), cells)
    results["targets"] = targets(results)
    results["meta"] = {
        "date": now.strftime("%Y-%m-%d-%H%M"),
        "machine": machine_line(),
        "load_average_before": [round(value, 2) for value in load_before],
        "load_average_after": load_average(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.scale == 1 else f"-x{args.scale:g}"
    stem = f"judge-lanes-{results['meta']['date']}{suffix}"
    (args.out / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    meta = results["meta"]
    (args.out / f"{stem}.md").write_text(
        f"# Judge lanes, {meta['date']}\n\nMachine: {meta['machine']}; load average"
        f" {meta['load_average_before']} before, {meta['load_average_after']} after.\n\n"
        f"Judge: 1 s ± 30 % a call, 429 above {JUDGE_RPS * args.scale:g} calls/s. Paced"
        f" open-loop load for {args.duration:g} s a cell; rates and slots x{args.scale:g} (cell"
        " names give them at x1).\n\n" + markdown(results) + "\n"
    )
    print(markdown(results))
    print(f"wrote {args.out / stem}.json, {args.out / stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
