"""A long run in bursts: memory, descriptors, backlog and latency over time.

`python -m bench soak --duration 30m --rate 100`.

Starts the soak fake as the upstream and, in a second process, as the judge
(`bench.fakes.paced`), and one `bias-gateway serve` on a SQLite store in a
temporary folder, with a monitor key, two enforce keys (buffered and live
streams) and an admin key. Then it drives the mix of `bench.soak.traffic` at
`--rate` requests a second in bursts (`--burst` seconds on, `--gap` seconds
idle), and every `--sample-every` seconds, and at the end of every gap, samples
the gateway (`bench.soak.samples`): RSS, open descriptors and CPU from /proc,
asyncio tasks and the scoring backlog from `/metrics`, the store's files, the
machine's load average and busy CPU, and the interval's latency. When the load
stops it waits for the records to settle, then writes
`bench/results/soak-<date>.{md,json,png}` (`bench.soak.report`) and prints the
Markdown. Every process it starts is stopped at the end, on errors and on
Ctrl-C too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.fakes.paced import Pace, start_paced
from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.machine import machine_line, source_note
from bench.harness.paths import RESULTS
from bench.harness.procs import Processes, ServerProcess, machine_busy_seconds, stop_on_signals
from bench.harness.report import progress
from bench.soak.figures import summarize
from bench.soak.plan import SoakPlan, parse_duration, phases, schedule
from bench.soak.records import log_summary, settle
from bench.soak.report import write_results
from bench.soak.samples import Sampler
from bench.soak.traffic import KEYS, Traffic

__all__ = ["SoakPlan", "main", "parse_duration", "phases", "run_soak", "schedule"]

QUIET_CORES = 0.5  # the rest of the machine's CPU a run waits for before it starts


def wait_quiet(limit: float, *, cores: float = QUIET_CORES, window: float = 10.0) -> float:
    """Wait (at most `limit` s) for a `window` in which the machine, ours idle, is busy
    below `cores`; the seconds waited, or -1 when no such moment came."""
    began = time.monotonic()
    while time.monotonic() - began < limit:
        before = machine_busy_seconds()
        time.sleep(window)
        if (machine_busy_seconds() - before) / window < cores:
            return round(time.monotonic() - began, 1)
    return -1.0


_log = progress("soak")


def _start(procs: Processes, plan: SoakPlan, work: Path) -> tuple[ServerProcess, ...]:
    fakes = []
    pace = Pace(
        chunks=plan.chunks,
        ttft=plan.ttft,
        chunk_interval=plan.chunk_interval,
        judge_latency=plan.judge_latency,
        jitter=plan.jitter,
        judge_429_every=plan.judge_429_every,
        seed=11,
    )
    for name in ("upstream", "judge"):
        fakes.append(start_paced(procs, name, pace, log_dir=work))
    config = gateway_config(fakes[0].url, fakes[1].url, store=work / "scores.db")
    config["upstream"]["timeout"] = 60
    config["anthropic"] = {"base_url": fakes[0].url, "api_key": "sk-bench", "timeout": 60}
    config["policies"].update(
        enforce={"mode": "enforce", "stream_policy": "buffer"},
        live={"mode": "enforce", "stream_policy": "passthrough"},
    )
    config["keys"] = [
        {"name": "monitor", "key": KEYS["monitor"], "policy": "default"},
        {"name": "enforce", "key": KEYS["enforce"], "policy": "enforce"},
        {"name": "live", "key": KEYS["live"], "policy": "live"},
        {"name": "admin", "key": KEYS["admin"], "admin": True},
    ]
    gateway = start_gateway(procs, "gateway", config, log_dir=work)
    return gateway, fakes[0], fakes[1]


async def _drive(plan: SoakPlan, servers: tuple[ServerProcess, ...], store: Path) -> dict[str, Any]:
    traffic = Traffic(
        servers[0].url, rate=plan.rate, seed=plan.seed, max_in_flight=plan.max_in_flight
    )
    async with traffic:
        sampler = Sampler(traffic, servers, store)
        before = await sampler.take("before", gap_end=False)  # the gateway at rest
        traffic.started = time.monotonic()
        sampling = asyncio.create_task(sampler.run(plan))
        for start, stop, phase in phases(plan):
            if phase == "burst":
                _log(f"burst {start:g}-{stop:g} s at {plan.rate:g} req/s")
                await traffic.burst(stop)
            else:
                await asyncio.sleep(max(0.0, stop - traffic.now()))
        await sampling
        await traffic.drain()
    drained_s = round(traffic.now() - phases(plan)[-1][1], 2)
    last_answer = time.monotonic()
    _log("load over; waiting for the records to settle")
    settled_s, counts = await asyncio.to_thread(settle, store, plan.settle_timeout)
    # Where the gateway rests once every record is final and it has been idle as long as a
    # gap (idle keep-alive connections are closed by then, as they are in every gap).
    await asyncio.sleep(max(0.0, last_answer + plan.gap - time.monotonic()))
    after = await sampler.take("after", gap_end=True)
    return {
        "traffic": traffic,
        "samples": [before, *sampler.samples, after],
        "machine_cpu": sampler.machine_cpu,
        "samples_skipped": sampler.skipped,
        "drained_s": drained_s,
        "settled_s": settled_s,
        "counts": counts,
        "cpu": sampler.cpu_shares(),
    }


def run_soak(plan: SoakPlan, work: Path) -> dict[str, Any]:
    """Run the soak in `work` (its store, configs and logs) and return its results."""
    judged: dict[str, Any] | None = None
    with Processes() as procs:
        servers = _start(procs, plan, work)
        store = work / "scores.db"
        started = time.monotonic()
        driven = asyncio.run(_drive(plan, servers, store))
        load_s = round(time.monotonic() - started, 1)
        counts = driven["counts"]
        with (
            contextlib.suppress(OSError, ValueError),
            urllib.request.urlopen(f"{servers[2].url}/bench/stats", timeout=10) as answer,
        ):
            judged = json.loads(answer.read())
        peak_rss = servers[0].peak_rss_mb()
        procs.stop_all()
        logs = log_summary(servers[0].log_path)
    traffic: Traffic = driven["traffic"]
    samples = [asdict(sample) for sample in driven["samples"]]
    return {
        "plan": {**asdict(plan), "warmup_s": plan.warmup_s, "window_s": plan.window_s},
        "phases": phases(plan),
        "load_s": load_s,
        "samples": samples,
        "machine_cpu": driven["machine_cpu"],
        "samples_skipped": driven["samples_skipped"],
        "drained_s": driven["drained_s"],
        **summarize(traffic.outcomes, phases(plan), plan.window_s),
        "store": {
            "settled_s": driven["settled_s"],
            "statuses": counts["statuses"],
            "reasons_pending": counts["reasons_pending"],
            "announced": len(traffic.announced),
            "announced_without_record": len(set(traffic.announced) - counts["run_ids"]),
        },
        "judge": judged,
        "peak_rss_mb": peak_rss,
        "cpu": driven["cpu"],
        "gateway_log": logs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench soak", description=__doc__)
    parser.add_argument("--duration", type=parse_duration, default=1800.0, help="30m, 90s (30m)")
    parser.add_argument("--rate", type=float, default=100.0, help="requests/s in a burst (100)")
    parser.add_argument("--sample-every", type=float, default=5.0, help="seconds (5)")
    parser.add_argument("--burst", type=float, default=50.0, help="seconds of load a cycle (50)")
    parser.add_argument("--gap", type=float, default=10.0, help="idle seconds a cycle (10)")
    parser.add_argument("--warmup", type=parse_duration, help="(a sixth of the run, <= 5m)")
    parser.add_argument("--judge-latency", type=float, default=0.3, help="seconds a call (0.3)")
    parser.add_argument(
        "--wait-quiet",
        type=parse_duration,
        default=600.0,
        help=f"wait up to this long for the rest of the machine to use < {QUIET_CORES:g}"
        " cores before starting (10m; 0: start at once)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    args = parser.parse_args(argv)
    if args.gap <= 0 or args.burst <= 0 or args.duration < args.burst + args.gap:
        parser.error("--duration must hold at least one --burst and one --gap, both > 0")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    stop_on_signals()
    plan = SoakPlan(
        duration=args.duration, rate=args.rate, sample_every=args.sample_every,
        burst=args.burst, gap=args.gap, warmup=args.warmup, judge_latency=args.judge_latency,
    )  # fmt: skip
    now = datetime.datetime.now()
    meta = {
        "date": now.strftime("%Y-%m-%d-%H%M"),
        "machine": machine_line(),
        "commit": source_note(),  # before the run: the code the gateway starts with
    }
    try:
        waited = wait_quiet(args.wait_quiet) if args.wait_quiet > 0 else 0.0
        if waited < 0:
            _log(f"the machine stayed busy for {args.wait_quiet:g} s; starting anyway")
        with tempfile.TemporaryDirectory(prefix="bench-soak-") as work:
            results = run_soak(plan, Path(work))
    except KeyboardInterrupt:
        print("bench soak: interrupted; every process it started was stopped", file=sys.stderr)
        return 130
    results["meta"] = {**meta, "waited_quiet_s": waited}
    paths, text = write_results(results, args.out)
    print(text)
    print("wrote " + ", ".join(str(path) for path in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
