"""Runs every configuration through every workload, then the memory check."""

from __future__ import annotations

import statistics
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bench.fakes.server import REPEAT_MARK, start_fake
from bench.harness import client
from bench.harness.loadgen import require_wrk, run_wrk
from bench.harness.procs import Processes, machine_busy_seconds
from bench.harness.report import progress
from bench.peers.configs import CONFIGS, Context, Deployed, Unavailable, deploy_gateway
from bench.peers.store_stats import score_stats, wait_drained

__all__ = ["CHUNKS", "Plan", "Workload", "chat_body", "run_all"]

CHUNKS = 50
DRAIN_TIMEOUT = 90.0  # a monitor backlog not stored by then is reported, not waited for
# Probed at a fixed rate (`Plan.paced_rate`) side by side at the end, for the monitor targets.
PACED_MODES = ("off", "monitor")
PACED_ROUNDS = 3


@dataclass(frozen=True)
class Workload:
    stream: bool
    concurrency: int

    @property
    def label(self) -> str:
        return f"{'stream' if self.stream else 'non-stream'} c={self.concurrency}"


WORKLOADS = (Workload(False, 1), Workload(False, 32), Workload(True, 1), Workload(True, 32))


@dataclass(frozen=True)
class Plan:
    """How long each step runs; the defaults keep a full run near 5 minutes on 2 cores."""

    duration: float = 8.0
    warmup: float = 2.0
    ttft_duration: float = 3.0
    paced_rate: float = 200.0  # requests/s of the paced probe, well within monitor's scoring
    paced_duration: float = 2.0  # per round, workload and configuration
    memory_counts: tuple[int, int] = (2_000, 20_000)
    only: frozenset[str] | None = None
    gateway_log_level: str = "info"


_log = progress("peers")


def chat_body(stream: bool, *, repeat: bool = False) -> dict[str, Any]:
    """A chat request; with `repeat` the fake answers it with the same text every time."""
    prompt = f"Describe engineers. {REPEAT_MARK}" if repeat else "Describe engineers."
    messages = [{"role": "user", "content": prompt}]
    return {"model": "bench-model", "messages": messages, "stream": stream}


def run_all(plan: Plan) -> dict[str, Any]:
    """Start everything, measure, stop everything; return the results as JSON-ready data."""
    require_wrk()
    started = time.monotonic()
    results: dict[str, Any] = {"configs": {}, "cells": [], "memory": None, "cache": None}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp, Processes() as procs:
        work_dir = Path(tmp)
        fake = start_fake(procs, work_dir, chunks=CHUNKS)
        judge = start_fake(procs, work_dir, chunks=CHUNKS, name="judge")
        ctx = Context(procs, work_dir, fake, plan.gateway_log_level, judge=judge)
        for config in CONFIGS:
            if plan.only is not None and config.name not in plan.only:
                continue
            _log(f"starting {config.name}")
            try:
                deployed = config.start(ctx)
            except Unavailable as exc:
                _log(f"{config.name}: unavailable: {exc}")
                results["configs"][config.name] = {"unavailable": str(exc)}
                continue
            try:
                results["configs"][config.name] = _measure_config(ctx, deployed, plan, results)
            except (OSError, RuntimeError, ValueError) as exc:
                # One broken configuration must not cost the others' figures.
                _log(f"{config.name}: failed: {exc!r}\n{deployed.server.log_tail()}")
                results["configs"][config.name] = {"unavailable": f"failed: {exc!r}"}
            finally:
                if deployed.server is not fake:
                    procs.stop(deployed.server)
        if plan.only is None or "gateway off" in plan.only:
            results["memory"] = _memory_check(ctx, plan)
        if plan.only is None or "gateway monitor" in plan.only:
            results["paced"] = paced(ctx, plan)
    results["elapsed_s"] = round(time.monotonic() - started, 1)
    return results


def _measure_config(
    ctx: Context, deployed: Deployed, plan: Plan, results: dict[str, Any]
) -> dict[str, Any]:
    for workload in WORKLOADS:
        cell = _run_cell(ctx, deployed, workload, plan)
        results["cells"].append(cell)
        load = cell["load"]
        _log(
            f"  {deployed.name:16} {workload.label:15} {load['rps']:8.1f} req/s"
            f"  p50 {load['p50_ms']:7.2f} ms  p99 {load['p99_ms']:7.2f} ms"
            f"  cpu server {cell['server_cpu']:5.1f}% fake {cell['fake_cpu']}"
            f" other {cell['other_cpu']}"
        )
    if deployed.mode == "monitor":
        results["cache"] = _cache_cell(ctx, deployed, plan)
    url = deployed.server.url + "/v1/chat/completions"
    try:
        received = client.run(
            lambda: client.fetch_stream(url, chat_body(True), api_key=deployed.api_key)
        )
    except aiohttp.ClientError as exc:
        received = repr(exc).encode()
    with urllib.request.urlopen(ctx.fake.url + "/bench/last-stream", timeout=5) as response:
        sent = response.read()
    return {
        "peak_rss_mb": deployed.server.peak_rss_mb(),
        "rss_mb": deployed.server.rss_mb(),
        "frames_identical": received == sent,
        "stream_bytes": {"upstream": len(sent), "client": len(received)},
    }


def _run_cell(ctx: Context, deployed: Deployed, workload: Workload, plan: Plan) -> dict[str, Any]:
    url = deployed.server.url + "/v1/chat/completions"
    body = chat_body(workload.stream)
    since = time.time()
    warm = run_wrk(
        url,
        body,
        connections=workload.concurrency,
        duration=plan.warmup,
        work_dir=ctx.work_dir,
        api_key=deployed.api_key,
    )
    if deployed.store is not None:
        wait_drained(deployed.store, since, timeout=DRAIN_TIMEOUT)
    separate_fake = deployed.server is not ctx.fake
    deployed.server.mark_cpu()
    ctx.fake.mark_cpu()
    judged = deployed.mode in ("monitor", "enforce") and ctx.judge is not None
    if judged and ctx.judge is not None:
        ctx.judge.mark_cpu()
    busy = machine_busy_seconds()
    began = time.perf_counter()
    load = run_wrk(
        url,
        body,
        connections=workload.concurrency,
        duration=plan.duration,
        work_dir=ctx.work_dir,
        api_key=deployed.api_key,
    )
    wall = time.perf_counter() - began
    busy_percent = 100 * (machine_busy_seconds() - busy) / wall
    server_cpu = deployed.server.cpu_since_mark(wall)
    fake_cpu = ctx.fake.cpu_since_mark(wall) if separate_fake else None
    judge_cpu = ctx.judge.cpu_since_mark(wall) if judged and ctx.judge is not None else None
    cell: dict[str, Any] = {
        "config": deployed.name,
        "workload": "stream" if workload.stream else "non-stream",
        "concurrency": workload.concurrency,
        "load": load.to_dict(),
        "client_requests": warm.requests + load.requests,
        "server_cpu": server_cpu,
        "fake_cpu": fake_cpu,
        "judge_cpu": judge_cpu,
        # Busy CPU not ours (other sessions, the OS): a high value marks a noisy cell.
        "other_cpu": max(
            0.0,
            round(
                busy_percent - server_cpu - (fake_cpu or 0) - (judge_cpu or 0) - load.cpu_percent,
                1,
            ),
        ),
        "peak_rss_mb": deployed.server.peak_rss_mb(),
        "drain_s": None,
        "store": None,
        "ttft": None,
    }
    if deployed.store is not None:
        cell["drain_s"] = wait_drained(deployed.store, since, timeout=DRAIN_TIMEOUT)
        cell["store"] = score_stats(deployed.store, since).to_dict()
    if workload.stream:
        probe_since = time.time()
        stats = client.run(
            lambda: client.probe_streams(
                url,
                body,
                concurrency=workload.concurrency,
                duration=plan.ttft_duration,
                api_key=deployed.api_key,
            )
        )
        cell["ttft"] = stats.to_dict()
        if deployed.store is not None:
            wait_drained(deployed.store, probe_since, timeout=DRAIN_TIMEOUT)
    return cell


def paced(ctx: Context, plan: Plan) -> dict[str, Any]:
    """c=1 at a fixed rate, direct and fresh off and monitor gateways, in alternating rounds.

    The configurations run side by side and take turns, so a drift of the
    machine over the run (this VM's shared cores drift by 10-20 %) hits them
    all alike; each figure is the median of the rounds' values.
    """
    _log(f"paced probe: c=1 at {plan.paced_rate:g}/s, {PACED_ROUNDS} rounds")
    servers = {"direct": ctx.fake}
    started = [deploy_gateway(ctx, mode, label=f"gateway-paced-{mode}") for mode in PACED_MODES]
    servers.update({deployed.name: deployed.server for deployed in started})
    rounds: dict[str, dict[str, list[client.PacedStats]]] = {
        name: {"non-stream": [], "stream": []} for name in servers
    }
    try:
        for _ in range(PACED_ROUNDS):
            for name, server in servers.items():
                for stream in (False, True):
                    url = server.url + "/v1/chat/completions"
                    body = chat_body(stream)
                    stats = client.run(
                        lambda url=url, body=body: client.probe_paced(  # type: ignore[misc]
                            url,
                            body,
                            rate=plan.paced_rate,
                            duration=plan.paced_duration,
                            api_key="bench",
                        )
                    )
                    rounds[name]["stream" if stream else "non-stream"].append(stats)
    finally:
        for deployed in started:
            ctx.procs.stop(deployed.server)
    paced = {
        name: {workload: _median_round(runs) for workload, runs in workloads.items()}
        for name, workloads in rounds.items()
    }
    for name, workloads in paced.items():
        _log(
            f"  {name:16} p50 {workloads['non-stream']['p50_ms']} ms,"
            f" stream TTFT p50 {workloads['stream']['ttft_p50_ms']} ms"
        )
    return paced


def _median_round(runs: list[client.PacedStats]) -> dict[str, Any]:
    def median(values: list[float | None]) -> float | None:
        known = [value for value in values if value is not None]
        return round(statistics.median(known), 3) if known else None

    return {
        "rate": runs[0].rate,
        "rounds": len(runs),
        "requests": sum(run.requests for run in runs),
        "errors": sum(run.errors for run in runs),
        "p50_ms": median([run.p50_ms for run in runs]),
        "p99_ms": median([run.p99_ms for run in runs]),
        "ttft_p50_ms": median([run.ttft_p50_ms for run in runs]),
        "round_p50_ms": [run.p50_ms for run in runs],
    }


def _cache_cell(ctx: Context, deployed: Deployed, plan: Plan) -> dict[str, Any]:
    """Monitor mode on a workload whose responses all repeat: the score cache's hit rate."""
    assert deployed.store is not None
    since = time.time()
    url = deployed.server.url + "/v1/chat/completions"
    load = run_wrk(
        url,
        chat_body(False, repeat=True),
        connections=32,
        duration=max(2.0, plan.duration / 2),
        work_dir=ctx.work_dir,
        api_key=deployed.api_key,
    )
    drain = wait_drained(deployed.store, since, timeout=DRAIN_TIMEOUT)
    stats = score_stats(deployed.store, since)
    scored = stats.statuses.get("scored", 0)
    _log(f"  score cache: {stats.cache_hits} of {scored} scored responses were cache hits")
    return {
        "load": load.to_dict(),
        "drain_s": drain,
        "scored": scored,
        "hits": stats.cache_hits,
        "hit_rate": round(stats.cache_hits / scored, 4) if scored else None,
        "judge_calls": stats.judge_calls,
    }


def _memory_check(ctx: Context, plan: Plan) -> dict[str, Any]:
    """RSS of a fresh mode-off gateway after the first and the second request count."""
    first, second = plan.memory_counts
    _log(f"memory check: gateway off, RSS after {first} and {second} requests")
    deployed = deploy_gateway(ctx, "off", label="gateway-memory")
    url = deployed.server.url + "/v1/chat/completions"
    try:
        ok_first = client.run(
            lambda: client.fire(
                url, chat_body(False), concurrency=32, count=first, deadline=120, api_key="bench"
            )
        )
        rss_first = deployed.server.rss_mb()
        ok_second = client.run(
            lambda: client.fire(
                url,
                chat_body(False),
                concurrency=32,
                count=second - first,
                deadline=240,
                api_key="bench",
            )
        )
        rss_second = deployed.server.rss_mb()
    finally:
        ctx.procs.stop(deployed.server)
    return {
        "requests": [first, second],
        "ok": [ok_first, ok_first + ok_second],
        "rss_mb": [rss_first, rss_second],
        "growth": round(rss_second / rss_first - 1, 4) if rss_first else None,
    }
