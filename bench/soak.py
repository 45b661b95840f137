"""A long run: `python -m bench.soak --duration 30m --rate 100`.

Starts the soak fake as the upstream and, in a second process, as the judge
(`bench.soak_fake`), and one `bias-gateway serve` on a SQLite store in a
temporary folder, with a monitor key, two enforce keys (buffered and live
streams) and an admin key. Then it drives the mix of `bench.soak_traffic` at
`--rate` requests a second in bursts (`--burst` seconds on, `--gap` seconds
idle), and every `--sample-every` seconds, and at the end of every gap, samples
the gateway (`bench.soak_samples`): RSS, open descriptors and CPU from /proc,
asyncio tasks and the scoring backlog from `/metrics`, the store's files, the
machine's load average and busy CPU, and the interval's latency. When the load
stops it waits for the records to settle, then writes
`bench/results/soak-<date>.{md,json,png}` (`bench.soak_report`) and prints the
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
import re
import resource
import signal
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import aiohttp

from bench.machine import cpu_model, source_note
from bench.procs import Processes, ServerProcess, free_port, machine_busy_seconds
from bench.soak_records import log_summary, settle
from bench.soak_report import ANSWERED, summarize, write_results
from bench.soak_samples import LoopLag, Process, Sample, percentile, read_metrics, store_bytes
from bench.soak_traffic import KEYS, Traffic

__all__ = ["SoakPlan", "main", "parse_duration", "phases", "run_soak", "schedule"]

RESULTS = Path(__file__).resolve().parent / "results"

_GATEWAY_YAML = """\
upstream:
  base_url: {upstream}/v1
  api_key: sk-bench
  timeout: 60
anthropic:
  base_url: {upstream}
  api_key: sk-bench
  timeout: 60
judge:
  model: judge
  base_url: {judge}/v1
  api_key: sk-bench
policies:
  default:
    mode: monitor
  enforce:
    mode: enforce
    stream_policy: buffer
  live:
    mode: enforce
    stream_policy: passthrough
keys:
  - {{name: monitor, key: {monitor}, policy: default}}
  - {{name: enforce, key: {enforce}, policy: enforce}}
  - {{name: live, key: {live}, policy: live}}
  - {{name: admin, key: {admin}, admin: true}}
store:
  path: {store}
server:
  host: 127.0.0.1
  port: {port}
"""


@dataclass(frozen=True)
class SoakPlan:
    duration: float = 1800.0
    rate: float = 100.0
    sample_every: float = 5.0
    burst: float = 50.0
    gap: float = 10.0
    warmup: float | None = None  # None: a sixth of the run, at most 5 minutes
    window: float | None = None  # p99 compared over the first and last: 5 min, or a quarter
    settle_timeout: float = 60.0
    ttft: float = 0.1
    chunks: int = 10
    chunk_interval: float = 0.01
    judge_latency: float = 0.3
    jitter: float = 0.3
    judge_429_every: int = 200
    seed: int = 24

    @property
    def warmup_s(self) -> float:
        return self.warmup if self.warmup is not None else min(300.0, self.duration / 6)

    @property
    def window_s(self) -> float:
        return self.window if self.window is not None else min(300.0, self.duration / 4)


def parse_duration(text: str) -> float:
    """`30m`, `90s`, `1h`, `1h30m` or plain seconds, as seconds."""
    text = text.strip()
    with contextlib.suppress(ValueError):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (say 30m, 90s or 1h)")
    return sum(float(number) * {"h": 3600, "m": 60, "s": 1}[unit] for number, unit in parts)


def phases(plan: SoakPlan) -> list[tuple[float, float, str]]:
    """(start, end, burst|gap) in run seconds; the run always ends with a whole gap."""
    laid: list[tuple[float, float, str]] = []
    start = 0.0
    while start < plan.duration - 1e-9:
        burst_end = min(start + plan.burst, plan.duration - plan.gap)
        if burst_end <= start:
            break
        laid.append((start, burst_end, "burst"))
        laid.append((burst_end, burst_end + plan.gap, "gap"))
        start = burst_end + plan.gap
    return laid


def schedule(plan: SoakPlan) -> list[tuple[float, bool]]:
    """When to sample (run seconds), and whether it is a gap's end."""
    laid = phases(plan)
    end = laid[-1][1] if laid else 0.0
    times = {
        round(step * plan.sample_every, 3): False
        for step in range(int(end / plan.sample_every) + 1)
    }
    for start, stop, phase in laid:
        if phase == "gap":
            times[round(stop - min(0.5, (stop - start) / 4), 3)] = True
    return sorted(times.items())


def _phase_at(laid: list[tuple[float, float, str]], t: float) -> str:
    return next((phase for start, stop, phase in laid if start <= t < stop), "gap")


def _log(message: str) -> None:
    print(f"bench soak: {message}", file=sys.stderr, flush=True)


def _start(procs: Processes, plan: SoakPlan, work: Path) -> tuple[ServerProcess, ...]:
    fakes = []
    for name in ("upstream", "judge"):
        port = free_port()
        argv = [
            sys.executable, "-m", "bench.soak_fake", "--port", str(port),
            "--chunks", str(plan.chunks), "--ttft", str(plan.ttft),
            "--chunk-interval", str(plan.chunk_interval),
            "--judge-latency", str(plan.judge_latency), "--jitter", str(plan.jitter),
            "--judge-429-every", str(plan.judge_429_every),
        ]  # fmt: skip
        fakes.append(procs.start(name, argv, port=port, ready_path="/bench/stats", log_dir=work))
    port = free_port()
    config = work / "gateway.yaml"
    config.write_text(
        _GATEWAY_YAML.format(
            upstream=fakes[0].url, judge=fakes[1].url, store=work / "scores.db", port=port, **KEYS
        )
    )
    argv = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)]
    argv += ["--log-level", "warning"]
    gateway = procs.start("gateway", argv, port=port, ready_path="/readyz", log_dir=work)
    return gateway, fakes[0], fakes[1]


class _Sampler:
    def __init__(self, traffic: Traffic, servers: tuple[ServerProcess, ...], store: Path) -> None:
        self.traffic = traffic
        self.gateway = servers[0]
        self.servers = servers
        self.store = store
        self.process = Process(servers[0].popen.pid)
        self.samples: list[Sample] = []
        self._seen = 0  # outcomes already counted in a sample
        self._cpu_mark = (time.monotonic(), machine_busy_seconds(), self._ours())
        self.machine_cpu: list[tuple[float, float, float]] = []  # t, busy %, others' %
        self.lag = LoopLag()
        self._served: tuple[float, float] | None = None  # the gateway's duration sum, count

    def _ours(self) -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        return own.ru_utime + own.ru_stime + sum(s.cpu_seconds() for s in self.servers)

    async def run(self, plan: SoakPlan) -> None:
        laid = phases(plan)
        connector = aiohttp.TCPConnector(force_close=True)  # no idle connection held between
        lag = asyncio.create_task(self.lag.run())
        async with aiohttp.ClientSession(connector=connector) as session:
            for at, gap_end in schedule(plan):
                delay = at - self.traffic.now()
                if delay > 0:
                    await asyncio.sleep(delay)
                self.samples.append(await self._take(session, _phase_at(laid, at), gap_end))
        lag.cancel()

    async def _take(self, session: aiohttp.ClientSession, phase: str, gap_end: bool) -> Sample:
        t = round(self.traffic.now(), 2)
        now = time.monotonic()
        rss, fds, cpu = self.process.rss_mb(), self.process.fds(), self.process.cpu_percent(now)
        try:
            metrics = await read_metrics(session, self.gateway.url, KEYS["admin"])
        except (aiohttp.ClientError, TimeoutError) as exc:
            _log(f"a scrape of /metrics failed at {t:g} s: {exc!r}")
            metrics = {}
        scrape_ms = round((time.monotonic() - now) * 1000, 1)
        served = (metrics.get("served_seconds") or 0.0, metrics.get("served") or 0.0)
        served_mean = None
        if self._served is not None and served[1] > self._served[1]:
            served_mean = (served[0] - self._served[0]) / (served[1] - self._served[1]) * 1000
        self._served = served
        store, side = store_bytes(self.store)
        fresh = self.traffic.outcomes[self._seen :]
        self._seen += len(fresh)
        latencies = [o.latency_ms for o in fresh if o.family == "model" and o.result in ANSWERED]
        busy, ours = machine_busy_seconds(), self._ours()
        wall = max(now - self._cpu_mark[0], 1e-9)
        machine = 100 * (busy - self._cpu_mark[1]) / wall
        others = machine - 100 * (ours - self._cpu_mark[2]) / wall
        self._cpu_mark = (now, busy, ours)
        self.machine_cpu.append((t, round(machine, 1), round(max(0.0, others), 1)))
        return Sample(
            t=t, phase=phase, gap_end=gap_end, rss_mb=rss, fds=fds, cpu_percent=cpu,
            tasks=metrics.get("tasks"), queue_depth=metrics.get("queue_depth"),
            scorings=metrics.get("scorings"), judge_in_flight=metrics.get("judge_in_flight"),
            work_pending=metrics.get("work_pending"), judge_429s=metrics.get("judge_429s"),
            skipped=metrics.get("skipped"), dropped=metrics.get("dropped"),
            store_mb=round(store / 1e6, 2), wal_mb=round(side / 1e6, 2),
            load1=round(os.getloadavg()[0], 2), client_in_flight=self.traffic.in_flight,
            requests=len(latencies), p50_ms=percentile(latencies, 0.5),
            p99_ms=percentile(latencies, 0.99),
            served_mean_ms=served_mean and round(served_mean, 1), scrape_ms=scrape_ms,
            lag_ms=self.lag.take(),
        )  # fmt: skip


async def _drive(plan: SoakPlan, servers: tuple[ServerProcess, ...], store: Path) -> dict[str, Any]:
    async with Traffic(servers[0].url, rate=plan.rate, seed=plan.seed) as traffic:
        sampler = _Sampler(traffic, servers, store)
        sampling = asyncio.create_task(sampler.run(plan))
        for start, stop, phase in phases(plan):
            if phase == "burst":
                _log(f"burst {start:g}-{stop:g} s at {plan.rate:g} req/s")
                await traffic.burst(stop)
            else:
                await asyncio.sleep(max(0.0, stop - traffic.now()))
        await sampling
        await traffic.drain()
    return {"traffic": traffic, "samples": sampler.samples, "machine_cpu": sampler.machine_cpu}


def run_soak(plan: SoakPlan, work: Path) -> dict[str, Any]:
    """Run the soak in `work` (its store, configs and logs) and return its results."""
    judged: dict[str, Any] | None = None
    with Processes() as procs:
        servers = _start(procs, plan, work)
        store = work / "scores.db"
        started = time.monotonic()
        driven = asyncio.run(_drive(plan, servers, store))
        load_s = round(time.monotonic() - started, 1)
        _log("load over; waiting for the records to settle")
        settled_s, counts = settle(store, plan.settle_timeout)
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
        **summarize(traffic.outcomes, phases(plan), plan.window_s),
        "store": {
            "settled_s": settled_s,
            "statuses": counts["statuses"],
            "reasons_pending": counts["reasons_pending"],
            "announced": len(traffic.announced),
            "announced_without_record": len(set(traffic.announced) - counts["run_ids"]),
        },
        "judge": judged,
        "peak_rss_mb": peak_rss,
        "gateway_log": logs,
    }


def _interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM unwinds like Ctrl-C, so every `finally` stops what it started.
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--duration", type=parse_duration, default=1800.0, help="30m, 90s (30m)")
    parser.add_argument("--rate", type=float, default=100.0, help="requests/s in a burst (100)")
    parser.add_argument("--sample-every", type=float, default=5.0, help="seconds (5)")
    parser.add_argument("--burst", type=float, default=50.0, help="seconds of load a cycle (50)")
    parser.add_argument("--gap", type=float, default=10.0, help="idle seconds a cycle (10)")
    parser.add_argument("--warmup", type=parse_duration, help="(a sixth of the run, <= 5m)")
    parser.add_argument("--judge-latency", type=float, default=0.3, help="seconds a call (0.3)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    args = parser.parse_args(argv)
    if args.gap <= 0 or args.burst <= 0 or args.duration < args.burst + args.gap:
        parser.error("--duration must hold at least one --burst and one --gap, both > 0")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    signal.signal(signal.SIGTERM, _interrupt)
    plan = SoakPlan(
        duration=args.duration, rate=args.rate, sample_every=args.sample_every,
        burst=args.burst, gap=args.gap, warmup=args.warmup, judge_latency=args.judge_latency,
    )  # fmt: skip
    now = datetime.datetime.now()
    meta = {
        "date": now.strftime("%Y-%m-%d-%H%M"),
        "machine": f"{os.cpu_count()} cores ({cpu_model()}), Python {sys.version.split()[0]}",
        "commit": source_note(),  # before the run: the code the gateway starts with
    }
    try:
        with tempfile.TemporaryDirectory(prefix="bench-soak-") as work:
            results = run_soak(plan, Path(work))
    except KeyboardInterrupt:
        print("bench soak: interrupted; every process it started was stopped", file=sys.stderr)
        return 130
    results["meta"] = meta
    paths, text = write_results(results, args.out)
    print(text)
    print("wrote " + ", ".join(str(path) for path in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
