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
import contextlib
import re
import sqlite3
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import psutil

from bench.harness.procs import Processes, ServerProcess, free_port

__all__ = ["RealisticPlan", "markdown", "run_realistic", "write_chart"]

UPSTREAM_TTFT = 0.3
CHUNK_INTERVAL = 0.02
CHUNKS = 10  # a non-streaming answer comes after 0.3 + 10 x 0.02 = 0.5 s
JUDGE_LATENCY = 1.0
JITTER = 0.3
SCORED_WITHIN = 10.0  # seconds after the response
CALLS_PER_RESPONSE = {"faithful": 3, "single": 2}  # with the explanation

_GATEWAY_YAML = """\
upstream:
  base_url: {upstream}/v1
  api_key: sk-bench
judge:
  model: judge
  base_url: {judge}/v1
  api_key: sk-bench
  pipeline: {pipeline}
policies:
  default:
    mode: {mode}
store:
  path: {store}
server:
  host: 127.0.0.1
  port: {port}
"""
_SAMPLE = re.compile(r"^(bias_scoring_queue_depth|bias_scorings_in_flight) (\S+)$", re.MULTILINE)


@dataclass(frozen=True)
class RealisticPlan:
    rates: tuple[float, ...] = (20.0, 100.0, 300.0)
    duration: float = 30.0
    drain_timeout: float = 60.0
    modes: tuple[str, ...] = ("monitor", "enforce")
    pipelines: tuple[str, ...] = ("faithful", "single")


@dataclass
class _Sent:
    started: float
    latency_ms: float | None = None
    status: int | None = None
    run_id: str | None = None
    bias_status: str | None = None
    ended_wall: float | None = None


@dataclass
class _Load:
    sent: list[_Sent] = field(default_factory=list)
    backlog: list[tuple[float, float, float]] = field(default_factory=list)  # t, queued, running
    peak_judge_connections: int = 0
    settled_s: float | None = None


def _log(message: str) -> None:
    print(f"bench realistic: {message}", file=sys.stderr, flush=True)


def _start_fake(
    procs: Processes, work: Path, name: str, *, judge_rps: float | None, biased_every: int = 0
) -> ServerProcess:
    """The slow fake: a judge limited to `judge_rps` calls a second (None: no limit), an
    upstream whose every `biased_every`th answer is biased (0: none)."""
    port = free_port()
    argv = [
        sys.executable, "-m", "bench.fakes.slow", "--port", str(port), "--chunks", str(CHUNKS),
        "--ttft", str(UPSTREAM_TTFT), "--chunk-interval", str(CHUNK_INTERVAL),
        "--judge-latency", str(JUDGE_LATENCY), "--jitter", str(JITTER),
    ]  # fmt: skip
    if judge_rps is not None:
        argv += ["--judge-rps", str(judge_rps)]
    if biased_every:
        argv += ["--biased-every", str(biased_every)]
    return procs.start(name, argv, port=port, ready_path="/bench/stats", log_dir=work)


def _start_gateway(
    procs: Processes, work: Path, name: str, *, upstream: str, judge: str, mode: str, pipeline: str
) -> tuple[ServerProcess, Path]:
    port = free_port()
    store = work / f"{name}.db"
    config = work / f"{name}.yaml"
    config.write_text(
        _GATEWAY_YAML.format(
            upstream=upstream, judge=judge, pipeline=pipeline, mode=mode, store=store, port=port
        )
    )
    argv = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)]
    argv += ["--log-level", "warning"]
    server = procs.start(name, argv, port=port, ready_path="/readyz", log_dir=work)
    return server, store


async def _open_loop(
    url: str,
    *,
    rate: float,
    duration: float,
    gateway: ServerProcess | None = None,
    judge_port: int = 0,
    store: Path | None = None,
    drain_timeout: float = 0.0,
) -> _Load:
    """One request every 1/rate s, each on its own task; the backlog sampled meanwhile.

    With a `store`, the sampling goes on after the last answer until no record
    and no explanation is pending (`settled_s`), or `drain_timeout` passes.
    """
    load = _Load()
    body = {"model": "m", "messages": [{"role": "user", "content": "Tell me about engineers."}]}
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        sampler = asyncio.create_task(_sample(load, gateway, judge_port))
        tasks = []
        begin = time.perf_counter()
        count = int(rate * duration)
        for index in range(count):
            delay = begin + index / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            sent = _Sent(started=time.perf_counter())
            load.sent.append(sent)
            tasks.append(asyncio.create_task(_post(session, url, body, sent)))
        await asyncio.gather(*tasks)
        if store is not None:
            load.settled_s = await asyncio.to_thread(_wait_settled, store, drain_timeout)
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
    return load


async def _post(
    session: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any],
    sent: _Sent,
    headers: dict[str, str] | None = None,
) -> None:
    """One chat completion; what came back goes into `sent`."""
    try:
        async with session.post(
            f"{url}/v1/chat/completions", json=body, headers=headers
        ) as response:
            await response.read()
            sent.status = response.status
            sent.run_id = response.headers.get("x-bias-run-id")
            sent.bias_status = response.headers.get("x-bias-status")
    except (aiohttp.ClientError, TimeoutError):
        sent.status = None
    sent.latency_ms = (time.perf_counter() - sent.started) * 1000
    sent.ended_wall = time.time()


async def _sample(load: _Load, gateway: ServerProcess | None, judge_port: int) -> None:
    if gateway is None:
        return
    started = time.monotonic()
    async with aiohttp.ClientSession() as session:
        while True:
            try:
                async with session.get(f"{gateway.url}/metrics") as response:
                    text = await response.text()
                values = {name: float(value) for name, value in _SAMPLE.findall(text)}
                load.backlog.append(
                    (
                        round(time.monotonic() - started, 2),
                        values.get("bias_scoring_queue_depth", 0.0),
                        values.get("bias_scorings_in_flight", 0.0),
                    )
                )
                load.peak_judge_connections = max(
                    load.peak_judge_connections, _connections_to(gateway, judge_port)
                )
            except (aiohttp.ClientError, psutil.Error):
                pass
            await asyncio.sleep(0.5)


def _connections_to(server: ServerProcess, port: int) -> int:
    total = 0
    for process in server._tree():
        with contextlib.suppress(psutil.Error):
            total += sum(
                1
                for conn in process.net_connections(kind="tcp")
                if conn.raddr and conn.raddr.port == port and conn.status == "ESTABLISHED"
            )
    return total


def _percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1)


def _store_rows(store: Path) -> list[dict[str, Any]]:
    if not store.exists():
        return []
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            "SELECT run_id, status, status_reason, reason_status, judge_calls, judge_tokens,"
            " created_at, updated_at FROM scores"
        ).fetchall()
    finally:
        conn.close()
    return [dict(row) for row in rows]


def _wait_settled(store: Path, timeout: float) -> float | None:
    """Seconds until no record is pending and no explanation is pending; None on timeout."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        with contextlib.suppress(sqlite3.OperationalError):
            rows = _store_rows(store)
            if not any(
                row["status"] == "pending" or row["reason_status"] == "pending" for row in rows
            ):
                return round(time.monotonic() - started, 2)
        time.sleep(0.25)
    return None


def _figures(load: _Load, store: Path | None, direct: dict[str, Any] | None) -> dict[str, Any]:
    latencies = [s.latency_ms for s in load.sent if s.latency_ms is not None and s.status]
    statuses: dict[str, int] = {}
    for sent in load.sent:
        key = str(sent.status) if sent.status else "client error"
        statuses[key] = statuses.get(key, 0) + 1
    figures: dict[str, Any] = {
        "sent": len(load.sent),
        "statuses": statuses,
        "p50_ms": _percentile(latencies, 0.5),
        "p99_ms": _percentile(latencies, 0.99),
    }
    if direct is not None and figures["p50_ms"] is not None and direct["p50_ms"] is not None:
        figures["overhead_p50_ms"] = round(figures["p50_ms"] - direct["p50_ms"], 1)
        figures["overhead_p99_ms"] = round(figures["p99_ms"] - direct["p99_ms"], 1)
    if store is None:
        return figures
    rows = {row["run_id"]: row for row in _store_rows(store)}
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


def _fetch_json(url: str) -> dict[str, Any]:
    import json
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as response:
        data: dict[str, Any] = json.loads(response.read())
    return data


def run_realistic(plan: RealisticPlan, work: Path) -> dict[str, Any]:
    cells: list[dict[str, Any]] = []
    with Processes() as procs:
        upstream = _start_fake(procs, work, "slow-upstream", judge_rps=None)
        for rate in plan.rates:
            _log(f"direct at {rate:g} req/s")
            load = asyncio.run(_open_loop(upstream.url, rate=rate, duration=plan.duration))
            direct = _figures(load, None, None)
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
    judge = _start_fake(procs, work, f"judge-{name}", judge_rps=judge_rps)
    gateway, store = _start_gateway(
        procs, work, f"gateway-{name}", upstream=upstream.url, judge=judge.url, mode=mode,
        pipeline=pipeline,
    )  # fmt: skip
    _log(f"{mode} {pipeline} at {rate:g} req/s (judge limit {judge_rps:g} calls/s)")
    load = asyncio.run(
        _open_loop(
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
    figures = _figures(load, store, direct)
    judged = _fetch_json(f"{judge.url}/bench/stats")
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


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


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
                _fmt(value)
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
