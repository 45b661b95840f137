"""Monitor's cost to the client: mode off against monitor, every answer flagged, cold and warm.

    python -m bench monitor_overhead [--rate 100] [--duration 40] [--repeat 1]

The realistic scenario's pace: a 300 ms upstream (`bench.slow_fake`, a whole answer
after 0.5 s) and, in a process of its own, a judge taking 1 s ± 30 % a call. Every
answer of the upstream carries the fake's biased mark, so every monitored answer is
flagged and explained: three judge calls each, about `rate x 3` in flight. The load
is paced and open (one request every 1/rate s, each on its own task). The cells:
the upstream directly, then a freshly started gateway in mode `off`, then one in
`monitor` (the realistic scenario's config otherwise).

Each cell's requests are split by when they were sent: `cold` (the first `--cold`
seconds after the gateway said it was ready), `warm` (from `--warm-after` seconds on)
and `all`. Overhead is a percentile's latency minus the same percentile of the direct
cell (the upstream's own time); `monitor - off` is what monitoring adds to the client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.openloop import open_loop
from bench.harness.procs import Processes
from bench.harness.report import percentile
from bench.harness.store import wait_settled
from bench.peers.realistic import start_realistic_fake

__all__ = ["main", "markdown", "run"]

_SHARES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


def _log(message: str) -> None:
    print(f"bench monitor_overhead: {message}", file=sys.stderr, flush=True)


def _percentiles(latencies: list[float]) -> dict[str, float | None]:
    return {name: percentile(latencies, share, 1) for name, share in _SHARES.items()}


def _phases(sent: list[Any], *, cold: float, warm_after: float) -> dict[str, dict[str, Any]]:
    """Latency percentiles of the requests sent in each phase of a cell."""
    begin = sent[0].started
    answered = [(s.started - begin, s.latency_ms) for s in sent if s.status == 200]
    phases = {
        "cold": [ms for at, ms in answered if at < cold],
        "warm": [ms for at, ms in answered if at >= warm_after],
        "all": [ms for _, ms in answered],
    }
    failed = sum(1 for s in sent if s.status != 200)
    return {
        name: {"answered": len(values), "failed": failed, **_percentiles(values)}
        for name, values in phases.items()
    }


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    cells: list[dict[str, Any]] = []
    with Processes() as procs:
        # Every upstream answer is biased, so the judge flags each and monitor explains it.
        upstream = start_realistic_fake(
            procs, work, "slow-upstream", judge_rps=None, biased_every=1
        )
        judge = start_realistic_fake(procs, work, "slow-judge", judge_rps=None)
        _log(f"direct at {args.rate:g} req/s for {args.duration:g} s")
        load = asyncio.run(open_loop(upstream.url, rate=args.rate, duration=args.duration))
        direct = _phases(load.sent, cold=args.cold, warm_after=args.warm_after)
        cells.append({"config": "direct", "round": 0, "phases": direct})
        for round_ in range(1, args.repeat + 1):
            for mode in args.modes:
                name = f"gateway-{mode}-{round_}"
                calls_before = _judge_calls(judge.url)
                store = work / f"{name}.db"
                config = gateway_config(upstream.url, judge.url, store=store, mode=mode)
                config["judge"]["pipeline"] = "faithful"
                gateway = start_gateway(procs, name, config, log_dir=work)
                _log(f"{mode} (round {round_}) at {args.rate:g} req/s for {args.duration:g} s")
                cpu_before = gateway.cpu_seconds()
                load = asyncio.run(open_loop(gateway.url, rate=args.rate, duration=args.duration))
                cpu = gateway.cpu_seconds() - cpu_before
                settled = wait_settled(store, 60.0) if mode != "off" else None
                answered = sum(1 for s in load.sent if s.status == 200)
                calls = _judge_calls(judge.url) - calls_before
                cells.append(
                    {
                        "config": f"gateway {mode}",
                        "round": round_,
                        "phases": _phases(load.sent, cold=args.cold, warm_after=args.warm_after),
                        "judge_calls_per_answer": round(calls / answered, 2) if answered else None,
                        # The gateway's CPU while the load ran (its scorings then included).
                        "cpu_ms_per_answer": round(1000 * cpu / answered, 2) if answered else None,
                        "settled_s": settled,
                    }
                )
                procs.stop(gateway)
        procs.stop_all()
    return {
        "rate": args.rate,
        "duration": args.duration,
        "cold_s": args.cold,
        "warm_after_s": args.warm_after,
        "cells": cells,
    }


def _judge_calls(url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(f"{url}/bench/stats", timeout=10) as response:
        return int(json.loads(response.read())["judge_calls"])


def _over(value: float | None, base: float | None) -> str:
    if value is None or base is None:
        return "-"
    return f"{value - base:+.1f}"


def markdown(results: dict[str, Any]) -> str:
    cells = results["cells"]
    direct = cells[0]["phases"]
    lines = [
        f"{results['rate']:g} req/s for {results['duration']:g} s a cell; cold: sent in the"
        f" first {results['cold_s']:g} s, warm: sent from {results['warm_after_s']:g} s on."
        " Overhead: the percentile minus the direct cell's.",
        "",
        "| config | round | phase | answered | failed | p50 ms | p95 ms | p99 ms"
        " | over p50 | over p95 | over p99 | judge calls/answer | gateway CPU ms/answer |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in cells:
        for phase, figures in cell["phases"].items():
            base = direct[phase]
            lines.append(
                f"| {cell['config']} | {cell['round']} | {phase} | {figures['answered']}"
                f" | {figures['failed']} | {figures['p50']} | {figures['p95']} | {figures['p99']}"
                + "".join(f" | {_over(figures[p], base[p])}" for p in _SHARES)
                + f" | {cell.get('judge_calls_per_answer', '-')}"
                + f" | {cell.get('cpu_ms_per_answer', '-')} |"
            )
    lines += ["", "| round | phase | monitor - off p50 | p95 | p99 |", "|---|---|---|---|---|"]
    by_round: dict[int, dict[str, dict[str, Any]]] = {}
    for cell in cells[1:]:
        by_round.setdefault(cell["round"], {})[cell["config"]] = cell["phases"]
    for round_, configs in sorted(by_round.items()):
        off, monitor = configs.get("gateway off"), configs.get("gateway monitor")
        if off is None or monitor is None:
            continue
        for phase in ("cold", "warm", "all"):
            lines.append(
                f"| {round_} | {phase} | "
                + " | ".join(_over(monitor[phase][p], off[phase][p]) for p in _SHARES)
                + " |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench monitor_overhead",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rate", type=float, default=100.0, help="requests a second (100)")
    parser.add_argument("--duration", type=float, default=40.0, help="seconds of load a cell (40)")
    parser.add_argument("--cold", type=float, default=10.0, help="seconds counted cold (10)")
    parser.add_argument("--warm-after", type=float, default=15.0, help="warm from (15 s)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of the gateway cells (1)")
    parser.add_argument(
        "--modes", default="off,monitor", help="gateway modes, in order (off,monitor)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    args.modes = [mode for mode in args.modes.split(",") if mode]
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="bench-monitor-overhead-") as tmp:
        results = run(args, Path(tmp))
    results["started_utc"] = started
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
