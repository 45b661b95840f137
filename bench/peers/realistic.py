"""The realistic scenario: a 300 ms upstream, a 1 s ± 30 % judge that rate-limits, open-loop load.

`python -m bench peers --realistic` runs it alone; `make bench` runs it after the CPU
scenario. For each rate (20, 100, 300 req/s by default) it measures the slow
upstream directly, then the gateway with the shipped defaults in monitor and
in enforce mode, with the faithful and the single pipeline. The load is paced
and open: one request every 1/rate seconds whatever the answers do, each on
its own task, for `duration` seconds.

The judge answers 429 above 1.5x the call rate the cell offers it (rate x
judge calls a response), with `Retry-After` and `x-ratelimit-reset-requests`.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.fakes.paced import Pace, start_paced
from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.openloop import Load, open_loop
from bench.harness.procs import Processes, ServerProcess
from bench.harness.report import fmt, percentile, progress
from bench.harness.store import get_json, store_rows

__all__ = ["RealisticPlan", "markdown", "run_realistic", "write_chart"]

UPSTREAM_TTFT = 0.3
CHUNK_INTERVAL = 0.02
CHUNKS = 10  # a non-streaming answer comes after 0.3 + 10 x 0.02 = 0.5 s
JUDGE_LATENCY = 1.0
JITTER = 0.3
SCORED_WITHIN = 10.0  # seconds after the response
CALLS_PER_RESPONSE = {"faithful": 3, "single": 2}  # with the explanation


@dataclass(frozen=True)
class RealisticPlan:
    rates: tuple[float, ...] = (20.0, 100.0, 300.0)
    duration: float = 30.0
    drain_timeout: float = 60.0
    modes: tuple[str, ...] = ("monitor", "enforce")
    pipelines: tuple[str, ...] = ("faithful", "single")


_log = progress("realistic")


def start_realistic_fake(
    procs: Processes, work: Path, name: str, *, judge_rps: float | None, biased_every: int = 0
) -> ServerProcess:
    """The slow fake: a judge limited to `judge_rps` calls a second (None: no limit), an
    upstream whose every `biased_every`th answer is biased (0: none)."""
    pace = Pace(
        chunks=CHUNKS,
        ttft=UPSTREAM_TTFT,
        chunk_interval=CHUNK_INTERVAL,
        judge_latency=JUDGE_LATENCY,
        jitter=JITTER,
        judge_rps=judge_rps,
        biased_every=biased_every,
    )
    return start_paced(procs, name, pace, log_dir=work)


def _start_gateway(
    procs: Processes, work: Path, name: str, *, upstream: str, judge: str, mode: str, pipeline: str
) -> tuple[ServerProcess, Path]:
    store = work / f"{name}.db"
    config = gateway_config(upstream, judge, store=store, mode=mode)
    config["judge"]["pipeline"] = pipeline
    return start_gateway(procs, name, config, log_dir=work), store


def load_figures(load: Load, store: Path | None, direct: dict[str, Any] | None) -> dict[str, Any]:
    latencies = [s.latency_ms for s in load.sent if s.latency_ms is not None and s.status]
    statuses: dict[str, int] = {}
    for sent in load.sent:
        key = str(sent.status) if sent.status else "client error"
        statuses[key] = statuses.get(key, 0) + 1
    figures: dict[str, Any] = {
        "sent": len(load.sent),
        "statuses": statuses,
        "p50_ms": percentile(latencies, 0.5, 1),
        "p99_ms": percentile(latencies, 0.99, 1),
    }
    if direct is not None and figures["p50_ms"] is not None and direct["p50_ms"] is not None:
        figures["overhead_p50_ms"] = round(figures["p50_ms"] - direct["p50_ms"], 1)
        figures["overhead_p99_ms"] = round(figures["p99_ms"] - direct["p99_ms"], 1)
    if store is None:
        return figures
    rows = {row["run_id"]: row for row in store_rows(store)}
    by_status: dict[str, int] = {}
    for row in rows.values():
        label = row["status"] + (f":{row['status_reason']}" if row["status_reason"] else "")
        by_status[label] = by_status.get(label, 0) + 1
    announced = [s for s in load.sent if s.run_id]
    in_time = 0
    for sent in announced:
        found = rows.get(sent.run_id or "")
        if (
            found
            and found["status"] == "scored"
            and sent.ended_wall is not None
            and found["updated_at"] - sent.ended_wall <= SCORED_WITHIN
        ):
            in_time += 1
    scored = [row for row in rows.values() if row["status"] == "scored"]
    figures.update(
        records=by_status,
        pending_left=sum(1 for row in rows.values() if row["status"] == "pending"),
        scored_within_10s=round(in_time / len(announced), 4) if announced else None,
        judge_calls_per_response=(
            round(statistics.mean(row["judge_calls"] or 0 for row in scored), 2) if scored else None
        ),
        judge_tokens_per_response=(
            round(statistics.mean(row["judge_tokens"] or 0 for row in scored)) if scored else None
        ),
        errors=sum(1 for row in rows.values() if row["status"] == "error"),
    )
    return figures


def run_realistic(plan: RealisticPlan, work: Path) -> dict[str, Any]:
    cells: list[dict[str, Any]] = []
    with Processes() as procs:
        upstream = start_realistic_fake(procs, work, "slow-upstream", judge_rps=None)
        for rate in plan.rates:
            _log(f"direct at {rate:g} req/s")
            load = asyncio.run(open_loop(upstream.url, rate=rate, duration=plan.duration))
            direct = load_figures(load, None, None)
            cells.append({"config": "direct", "rate": rate, **direct})
            for mode in plan.modes:
                for pipeline in plan.pipelines:
                    cells.append(
                        _gateway_cell(procs, work, plan, upstream, rate, mode, pipeline, direct)
                    )
        procs.stop_all()
    return {"plan": plan.__dict__, "cells": cells}


def _gateway_cell(
    procs: Processes,
    work: Path,
    plan: RealisticPlan,
    upstream: ServerProcess,
    rate: float,
    mode: str,
    pipeline: str,
    direct: dict[str, Any],
) -> dict[str, Any]:
    name = f"{mode}-{pipeline}-{rate:g}"
    judge_rps = 1.5 * rate * CALLS_PER_RESPONSE[pipeline]
    judge = start_realistic_fake(procs, work, f"judge-{name}", judge_rps=judge_rps)
    gateway, store = _start_gateway(
        procs, work, f"gateway-{name}", upstream=upstream.url, judge=judge.url, mode=mode,
        pipeline=pipeline,
    )  # fmt: skip
    _log(f"{mode} {pipeline} at {rate:g} req/s (judge limit {judge_rps:g} calls/s)")
    load = asyncio.run(
        open_loop(
            gateway.url,
            rate=rate,
            duration=plan.duration,
            gateway=gateway,
            judge_port=judge.port,
            store=store,
            drain_timeout=plan.drain_timeout,
        )
    )
    settled = load.settled_s
    figures = load_figures(load, store, direct)
    judged = get_json(f"{judge.url}/bench/stats")
    cell: dict[str, Any] = {
        "config": f"gateway {mode}",
        "mode": mode,
        "pipeline": pipeline,
        "rate": rate,
        "judge_limit_rps": judge_rps,
        "settled_s": settled,
        "rate_limited": judged["rate_limited"],
        "judge_service_p50_ms": judged["service_ms_p50"],
        "judge_peak_in_flight": judged["peak_in_flight"],
        "peak_rss_mb": round(gateway.peak_rss_mb(), 1),
        "peak_judge_connections": load.peak_judge_connections,
        "backlog": load.backlog,
        **figures,
    }
    if mode == "enforce" and figures["p50_ms"] and direct["p50_ms"] and judged["service_ms_p50"]:
        cell["round_trips"] = round(
            (figures["p50_ms"] - direct["p50_ms"]) / judged["service_ms_p50"], 2
        )
    procs.stop(gateway)
    procs.stop(judge)
    return cell


# -- report -----------------------------------------------------------------------------------


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "| config | pipeline | req/s | sent | p50 ms | p99 ms | overhead p50 | scored ≤10 s"
        " | pending | skipped | errors | calls/resp | tokens/resp | round trips | 429s"
        " | settled s | peak RSS MB | judge conns |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in results["cells"]:
        records = cell.get("records") or {}
        skipped = sum(count for label, count in records.items() if label.startswith("skipped"))
        share = cell.get("scored_within_10s")
        lines.append(
            "| "
            + " | ".join(
                fmt(value)
                for value in (
                    cell["config"],
                    cell.get("pipeline"),
                    cell["rate"],
                    cell["sent"],
                    cell["p50_ms"],
                    cell["p99_ms"],
                    cell.get("overhead_p50_ms"),
                    f"{share:.1%}" if share is not None else None,
                    cell.get("pending_left"),
                    skipped if cell.get("records") is not None else None,
                    cell.get("errors"),
                    cell.get("judge_calls_per_response"),
                    cell.get("judge_tokens_per_response"),
                    cell.get("round_trips"),
                    cell.get("rate_limited"),
                    cell.get("settled_s"),
                    cell.get("peak_rss_mb"),
                    cell.get("peak_judge_connections"),
                )
            )
            + " |"
        )
    return "\n".join(lines)


def write_chart(results: dict[str, Any], path: Path) -> Path | None:
    """The monitor backlog (queued + scoring) over time, one line per cell."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    cells = [cell for cell in results["cells"] if cell.get("mode") == "monitor"]
    if not cells:
        return None
    figure, axis = plt.subplots(figsize=(8, 4.5))
    for cell in cells:
        points = cell.get("backlog") or []
        if points:
            axis.plot(
                [t for t, _, _ in points],
                [queued + running for _, queued, running in points],
                label=f"{cell['pipeline']} {cell['rate']:g} req/s",
            )
    axis.set_xlabel("seconds since the load started")
    axis.set_ylabel("monitor backlog (queued + scoring)")
    axis.set_title("Realistic judge (1 s ± 30 %): monitor backlog during the paced load")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def targets_markdown(results: dict[str, Any]) -> str:
    lines = ["| target | wanted | measured | status |", "|---|---|---|---|"]
    for target in results.get("targets", []):
        lines.append(
            f"| {target['name']} | {target['wanted']} | {target['measured']} | {target['status']} |"
        )
    return "\n".join(lines)


def write_results(results: dict[str, Any], out_dir: Path) -> list[Path]:
    """`realistic-<date>.{json,md,png}`, copied to `realistic-latest.*`."""
    import json
    import shutil

    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"realistic-{results['meta']['date']}"
    paths = [out_dir / f"{stem}.json", out_dir / f"{stem}.md"]
    paths[0].write_text(json.dumps(results, indent=2) + "\n")
    meta = results["meta"]
    paths[1].write_text(
        f"# Realistic scenario, {meta['date']} ({meta['machine']}, commit"
        f" {meta['source']['commit']})\n\n"
        f"Upstream: first byte after {UPSTREAM_TTFT:g} s, {CHUNKS} chunks {CHUNK_INTERVAL:g} s"
        f" apart. Judge: {JUDGE_LATENCY:g} s ± {JITTER:.0%} a call, 429 above 1.5x the offered"
        f" call rate. Paced open-loop load for {results['plan']['duration']:g} s a cell.\n\n"
        + markdown(results)
        + "\n\n"
        + targets_markdown(results)
        + "\n"
    )
    chart = write_chart(results, out_dir / f"{stem}.png")
    if chart is not None:
        paths.append(chart)
    for path in paths:
        shutil.copyfile(path, out_dir / f"realistic-latest{path.suffix}")
    return paths
