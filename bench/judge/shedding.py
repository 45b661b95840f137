"""The judge under overload: shedding and batches (#21 items 4 and 7).

The realistic scenario's pieces (`bench.peers.realistic`: a 300 ms upstream, a judge of
1 s ± 30 % a call in a process of its own, an open-loop client), with the judge
limited to `--judge-rps` calls a second (600; 429 with `Retry-After` above it)
and every tenth answer biased, so that `reason_for: flagged` explains one answer
in ten; the gateway is told the judge's budget (`judge.max_requests_per_minute`,
off with `--no-budget`), as the README's sizing asks. Cells, at `--rate`
requests a second (300) for `--duration` seconds (60), each on a gateway of its
own in monitor mode:

- `faithful`: the default pipeline (2 calls an answer, 3 for a flagged one). What
  share is scored within 30 s of its response, what the rest ended as (the
  target: `overload_sampled`, no errors), and the scored share of every 10 s
  slice of the run (by when the request was sent) against the run's mean;
- `single, batch_size 8`: judge calls a response, counted by the judge.

Writes `bench/results/judge-shedding-<date>.md` and `.json` and prints the markdown.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import sqlite3
import statistics
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.machine import load_average, machine_line
from bench.harness.openloop import Load, open_loop
from bench.harness.paths import RESULTS
from bench.harness.procs import Processes, ServerProcess
from bench.harness.report import percentile, progress
from bench.harness.store import get_json
from bench.peers.realistic import start_realistic_fake

__all__ = ["Plan", "main", "markdown", "run", "slices"]

SCORED_WITHIN = 30.0  # seconds after the response
SLICE = 10.0  # seconds of sending per slice


@dataclass(frozen=True)
class Plan:
    rate: float = 300.0
    duration: float = 60.0
    judge_rps: float = 600.0
    biased_every: int = 10
    # Judge calls in flight: the judge's 600 calls a second x its slowest answer (1.3 s),
    # so that the budget, which the gateway is told, paces the calls and not the slots.
    concurrency: int = 800
    budget: bool = True  # judge.max_requests_per_minute: judge_rps x 60
    queue_size: int = 4000
    drain_timeout: float = 90.0
    cells: tuple[str, ...] = ("faithful", "batched")


_CELLS = {  # name: (pipeline, batch_size)
    "faithful": ("faithful", 1),
    "batched": ("single", 8),
}


_log = progress("judge_shedding")


def _start_gateway(
    procs: Processes,
    work: Path,
    plan: Plan,
    upstream: ServerProcess,
    judge: ServerProcess,
    cell: str,
) -> tuple[ServerProcess, Path]:
    # The realistic scenario's gateway, with the judge's budget, reasons for flagged
    # answers only, batches, and a queue that holds what the budget does in a few seconds.
    pipeline, batch_size = _CELLS[cell]
    store = work / f"{cell}.db"
    config = gateway_config(upstream.url, judge.url, store=store)
    config["judge"].update(
        pipeline=pipeline,
        reason_for="flagged",
        max_concurrency=plan.concurrency,
        batch_size=batch_size,
    )
    if plan.budget:
        config["judge"]["max_requests_per_minute"] = round(plan.judge_rps * 60)
    config["queue"] = {"size": plan.queue_size}
    return start_gateway(procs, f"gateway-{cell}", config, log_dir=work), store


def slices(
    sent: list[tuple[float, bool]], *, width: float = SLICE
) -> tuple[float | None, list[float]]:
    """The scored share of the run and of each `width`-second slice of it, from each
    request's (seconds since the first was sent, scored in time)."""
    if not sent:
        return None, []
    counts: dict[int, list[int]] = {}
    for at, scored in sent:
        bucket = counts.setdefault(int(at // width), [0, 0])
        bucket[0] += scored
        bucket[1] += 1
    mean = sum(scored for _, scored in sent) / len(sent)
    return round(mean, 4), [round(counts[key][0] / counts[key][1], 4) for key in sorted(counts)]


def store_rows(store: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            "SELECT run_id, status, status_reason, sample_rate, updated_at FROM scores"
        ).fetchall()
    finally:
        conn.close()
    return [dict(row) for row in rows]


def _cell_figures(load: Load, store: Path, judge_calls: int) -> dict[str, Any]:
    rows = {row["run_id"]: row for row in store_rows(store)}
    outcomes: dict[str, int] = {}
    for row in rows.values():
        label = row["status"] + (f":{row['status_reason']}" if row["status_reason"] else "")
        outcomes[label] = outcomes.get(label, 0) + 1
    announced = [s for s in load.sent if s.run_id]
    first = min((s.started for s in load.sent), default=0.0)
    in_time: list[tuple[float, bool]] = []
    for sent in announced:
        found = rows.get(sent.run_id or "")
        scored = bool(
            found
            and found["status"] == "scored"
            and sent.ended_wall is not None
            and found["updated_at"] - sent.ended_wall <= SCORED_WITHIN
        )
        in_time.append((sent.started - first, scored))
    mean, shares = slices(in_time)
    latencies = [s.latency_ms for s in load.sent if s.latency_ms is not None and s.status]
    rates = [row["sample_rate"] for row in rows.values() if row["sample_rate"] is not None]
    return {
        "sent": len(load.sent),
        "answered_200": sum(1 for s in load.sent if s.status == 200),
        "client_p50_ms": percentile(latencies, 0.5, 1),
        "records": outcomes,
        "scored_within_30s": mean,
        "slice_shares": shares,
        "slices_off_mean_max": (
            round(max(abs(share - mean) for share in shares), 4) if shares and mean else None
        ),
        "errors": sum(1 for row in rows.values() if row["status"] == "error"),
        "pending_left": sum(1 for row in rows.values() if row["status"] == "pending"),
        "judge_calls": judge_calls,
        "judge_calls_per_response": round(judge_calls / len(announced), 3) if announced else None,
        "min_sample_rate": min(rates) if rates else None,
        "mean_sample_rate": round(statistics.mean(rates), 4) if rates else None,
        "settled_s": load.settled_s,
        # (seconds, jobs queued, scorings running), every 5 s: the backlog the shedder held.
        "backlog": [sample for sample in load.backlog if int(sample[0] * 2) % 10 == 0],
    }


def run(plan: Plan, work: Path) -> dict[str, Any]:
    cells: list[dict[str, Any]] = []
    with Processes() as procs:
        for cell in plan.cells:
            # A process each: a judge is not served by the upstream's event loop, whose
            # streaming would bunch the judge's count of its calls.
            upstream = start_realistic_fake(
                procs, work, "slow-upstream", judge_rps=None, biased_every=plan.biased_every
            )
            judge = start_realistic_fake(
                procs, work, "slow-judge", judge_rps=plan.judge_rps
            )  # fresh
            gateway, store = _start_gateway(procs, work, plan, upstream, judge, cell)
            _log(f"{cell} at {plan.rate:g} req/s for {plan.duration:g} s")
            load = asyncio.run(
                open_loop(
                    gateway.url,
                    rate=plan.rate,
                    duration=plan.duration,
                    gateway=gateway,
                    judge_port=judge.port,
                    store=store,
                    drain_timeout=plan.drain_timeout,
                )
            )
            counts = get_json(f"{judge.url}/bench/stats")
            figures = _cell_figures(load, store, int(counts["judge_calls"]))
            figures["judge_429s"] = counts["rate_limited"]
            cells.append({"cell": cell, "pipeline": _CELLS[cell][0], **figures})
            procs.stop(gateway)
            procs.stop(judge)
            procs.stop(upstream)
    return {"plan": asdict(plan), "cells": cells}


def markdown(result: dict[str, Any]) -> str:
    plan = result["plan"]
    lines = [
        f"# Judge shedding and batches, {result['date']}",
        "",
        f"{plan['rate']:g} req/s for {plan['duration']:g} s per cell, monitor mode; judge 1 s"
        f" ± 30 % a call, 429 above {plan['judge_rps']:g} calls/s; every"
        f" {plan['biased_every']}th answer biased; `reason_for: flagged`;"
        f" `max_concurrency: {plan['concurrency']}`, `queue.size: {plan['queue_size']}`,"
        + (
            f" `max_requests_per_minute: {plan['judge_rps'] * 60:g}` (the judge's budget)."
            if plan.get("budget", False)
            else " no request budget."
        ),
        f"Machine: {result['machine']}; load average before: {result['load_before']},"
        f" after: {result['load_after']}. Commit {result['commit']}.",
        "",
        "| cell | sent | scored within 30 s | records | errors | slices (10 s) | max off mean"
        " | judge calls / response | 429s | client p50 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in result["cells"]:
        records = ", ".join(f"{k} {v}" for k, v in sorted(cell["records"].items()))
        shares = " ".join(f"{share:.3f}" for share in cell["slice_shares"])
        lines.append(
            f"| {cell['cell']} | {cell['sent']} | {cell['scored_within_30s']} | {records}"
            f" | {cell['errors']} | {shares} | {cell['slices_off_mean_max']}"
            f" | {cell['judge_calls_per_response']} | {cell['judge_429s']}"
            f" | {cell['client_p50_ms']} ms |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench judge_shedding", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--judge-rps", type=float, default=600.0)
    parser.add_argument("--concurrency", type=int, default=Plan.concurrency)
    parser.add_argument(
        "--no-budget", action="store_true", help="leave judge.max_requests_per_minute unset"
    )
    parser.add_argument("--cell", action="append", choices=sorted(_CELLS), help="repeatable")
    parser.add_argument("--out", type=Path, help="the markdown file (bench/results/...)")
    args = parser.parse_args(argv)
    plan = Plan(
        rate=args.rate,
        duration=args.duration,
        judge_rps=args.judge_rps,
        concurrency=args.concurrency,
        budget=not args.no_budget,
        cells=tuple(args.cell or Plan.cells),
    )
    now = datetime.datetime.now(datetime.UTC)
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="bench-shedding-") as folder:
        result = run(plan, Path(folder))
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    commit = git.stdout.strip() or "unknown"
    result.update(
        date=now.strftime("%Y-%m-%d-%H%M"),
        machine=machine_line(),
        load_before=load_before,
        load_after=load_average(),
        commit=commit,
    )
    text = markdown(result)
    out = args.out or RESULTS / f"judge-shedding-{result['date']}.md"
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
