"""A PostgreSQL outage under load: what the clients see, and what the store keeps.

    .venv/bin/python -m bench outage              # 100 req/s, 15 s outage: about 80 s
    .venv/bin/python -m bench outage --rate 20 --outage 5

Issue #24's target: a database outage of 15 s at 100 req/s causes 0 client-visible
errors, loses 0 records, and every run id is final within 60 s of the restart.

What runs, each a process of its own (in its own process group, stopped at the end,
on errors and on Ctrl-C too), on this one machine:
- a throwaway PostgreSQL cluster (`testkit/postgres.py`) with PostgreSQL's
  default durability (fsync, synchronous_commit, full_page_writes on);
- the upstream, `bench.fakes.paced`: the first byte after 0.3 s, then 10 chunks 20 ms
  apart (a whole answer after the same 0.5 s); every reply unique, so no cache
  hides the judge;
- the judge, the same program on its own port: 1 s ± 30 % a call (uniform), no 429s;
- two `bias-gateway serve` (monitor key and enforce key, `queue.scorer: external`)
  and one `bias-gateway scorer`, on one database, with the shipped defaults
  otherwise (`judge.max_concurrency: 512`, `store.buffer_records: 10000`,
  `queue.lease_seconds: 30`), logging at warning.

The load is paced and open: one request every 1/rate s, each on a task of its own
whatever the answers do (aiohttp on uvloop, in this process), alternating monitor
and enforce, whole and streamed, and the two gateways. Every answer's status, run
id and latency is kept; an answer is an error unless it is a 200 with a run id and
a whole body (a chat completion with text, or a stream that ends in `[DONE]`).
`--before` s of it, then the server is stopped (`pg_ctl stop -m fast`) for
`--outage` s and started again, then `--after` s more; the load stops and the
database is polled until every announced run id is final (or `--settle-limit` s
after the restart). Meanwhile `/metrics` and `/readyz` of each gateway and of the
scorer are read every second, and the database every second (0.5 s once the load
stops) for every record's status: a run id is final at the first poll that sees
it final. Records buffered during the outage reach the database only after it,
so their `updated_at` (set when the record was made) cannot say when.

Writes `bench/results/outage-<date>.md` and `.json` and prints the markdown.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.fakes.paced import Pace, start_paced
from bench.harness import client
from bench.harness.cpu import CpuWatch
from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.machine import machine_line, source_note
from bench.harness.paths import RESULTS
from bench.harness.postgres import durable_settings, pg_bin
from bench.harness.procs import Processes, ServerProcess, stop_on_signals
from bench.harness.report import progress
from bench.outage.load import (
    KEYS,
    QUIET_CORES,
    Clock,
    Poller,
    Sampler,
    Traffic,
    postgres_cpu,
    wait_quiet,
)
from bench.outage.plan import Plan, Run
from bench.outage.report import figures, render
from testkit.postgres import PgCluster, start_cluster

__all__ = ["Plan", "main", "measure"]

ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
GATEWAYS = 2


_log = progress("outage")


def _fake(procs: Processes, work: Path, name: str, plan: Plan) -> ServerProcess:
    pace = Pace(
        chunks=plan.chunks,
        ttft=plan.ttft,
        chunk_interval=plan.chunk_interval,
        judge_latency=plan.judge_latency,
        jitter=plan.jitter,
    )
    return start_paced(procs, name, pace, log_dir=work)


def _settings(upstream: str, judge: str, url: str, plan: Plan) -> dict[str, Any]:
    """The settings of both gateways and the scorer."""
    config = gateway_config(upstream, judge)
    config["upstream"]["timeout"] = 60
    config["judge"]["max_concurrency"] = plan.max_concurrency
    config["policies"]["strict"] = {"mode": "enforce"}
    config["keys"] = [
        {"name": "monitor", "key": KEYS["monitor"]},
        {"name": "enforce", "key": KEYS["enforce"], "policy": "strict"},
    ]
    config["store"] = {"url": url, "retention_days": 0}
    config["queue"] = {"scorer": "external"}
    return config


def _start(
    procs: Processes, work: Path, name: str, command: str, config: dict[str, Any]
) -> ServerProcess:
    return start_gateway(procs, name, config, log_dir=work, env=ENV, command=command)


def _stats(server: ServerProcess) -> dict[str, Any]:
    with urllib.request.urlopen(f"{server.url}/bench/stats", timeout=10) as response:  # loopback
        stats: dict[str, Any] = json.loads(response.read())
    return stats


def _log_facts(server: ServerProcess) -> dict[str, Any]:
    """The process's log (JSON lines at warning): the outage's own lines, and each
    distinct warning and error with its count."""
    events: Counter[str] = Counter()
    for line in server.log_path.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError, AttributeError):
            entry = json.loads(line)
            events[f"{entry.get('level')}: {str(entry.get('event'))[:140]}"] += 1
    return {
        "store_unavailable": sum(n for e, n in events.items() if "score store unavailable" in e),
        "store_back": sum(n for e, n in events.items() if "score store is back" in e),
        "errors": sum(n for e, n in events.items() if e.startswith(("error", "critical"))),
        "events": dict(events.most_common(12)),
    }


async def _drive(
    plan: Plan,
    cluster: PgCluster,
    url: str,
    servers: list[ServerProcess],
    fakes: list[ServerProcess],
) -> Run:
    gateways = servers[:GATEWAYS]
    clock = Clock()
    traffic = Traffic([g.url for g in gateways], plan.rate, clock)
    sampler = Sampler({s.name: s.url for s in servers}, clock, plan.sample_interval)
    poller = Poller(url, clock, plan.sample_interval)
    sources = {s.name: s.cpu_seconds for s in [*servers, *fakes]}
    watch = CpuWatch({**sources, "postgres": lambda: postgres_cpu(cluster)})
    cpu: dict[str, dict[str, float]] = {}
    marks: dict[str, float] = {}

    async def until(at: float) -> None:
        await asyncio.sleep(max(0.0, at - clock.now()))

    background = [asyncio.create_task(sampler.run()), asyncio.create_task(poller.run())]
    load = asyncio.create_task(traffic.run())
    try:
        watch.start()
        await until(plan.before)
        cpu["before"] = watch.stop()
        _log(f"stopping PostgreSQL after {len(traffic.requests)} requests")
        marks["halt"] = clock.now()
        await asyncio.to_thread(cluster.halt)
        marks["halted"] = clock.now()
        watch.start()
        await until(marks["halt"] + plan.outage)
        cpu["during"] = watch.stop()
        _log("starting PostgreSQL again")
        marks["resume"] = clock.now()
        await asyncio.to_thread(cluster.resume)
        marks["resumed"] = clock.now()
        watch.start()
        traffic.stop_at = marks["resumed"] + plan.after
        await load
        marks["stopped"] = clock.now()
        cpu["after"] = watch.stop()
        _log(f"load stopped after {len(traffic.requests)} requests; waiting for the records")
        poller.interval = min(plan.sample_interval, 0.5)
        watch.start()

        announced = [r.run_id for r in traffic.requests if r.run_id is not None]
        await poller.settle(announced, marks["resumed"] + plan.settle_limit - clock.now())
        marks["settled"] = clock.now()
        cpu["settle"] = watch.stop()
    finally:
        for task in [*background, load]:
            task.cancel()
        for task in [*background, load]:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    await poller.poll()  # the last word on every status
    duplicates = await poller.rows_per_run_id()
    return Run(plan, marks, traffic, sampler, poller, duplicates, cpu, {}, {})


def measure(plan: Plan, pg_bin: Path, keep_logs: Path | None = None) -> tuple[Run, list[str]]:
    """Start everything, run the outage, stop everything; the run and the machine. The
    processes' logs and the server's are copied to `keep_logs` if given."""
    started = time.monotonic()
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-outage-")))
        _log("starting a throwaway PostgreSQL cluster")
        cluster = start_cluster(pg_bin)
        stack.callback(cluster.stop)
        if plan.durable:
            settings = durable_settings(cluster)
        else:
            names = ("server_version", "fsync", "synchronous_commit", "full_page_writes")
            settings = {name: cluster.psql(f"SHOW {name}") for name in names}
        url = cluster.url(cluster.create_database("scores"))
        procs = stack.enter_context(Processes())
        with ThreadPoolExecutor(max_workers=3) as pool:
            fakes = [pool.submit(_fake, procs, work, name, plan) for name in ("upstream", "judge")]
            upstream, judge = (future.result() for future in fakes)
            config = _settings(upstream.url, judge.url, url, plan)
            # The first one migrates the database; the others then find it done.
            servers = [_start(procs, work, "gateway-1", "serve", config)]
            others = [
                pool.submit(_start, procs, work, "gateway-2", "serve", config),
                pool.submit(_start, procs, work, "scorer", "scorer", config),
            ]
            servers += [future.result() for future in others]
        waited, cores = (0.0, float("nan"))
        if plan.quiet_wait > 0:
            _log(f"waiting up to {plan.quiet_wait:g} s for the machine to calm")
            waited, cores = wait_quiet(plan.quiet_wait)
        _log(f"{plan.rate:g} req/s: {plan.before:g} s, then {plan.outage:g} s without the database")
        run = client.run(lambda: _drive(plan, cluster, url, servers, [upstream, judge]))
        run.judge = _stats(judge)
        for server in servers:
            procs.stop(server)  # graceful: what they still hold is counted in their logs
        run.logs = {server.name: _log_facts(server) for server in servers}
        if keep_logs is not None:
            keep_logs.mkdir(parents=True, exist_ok=True)
            for server in [*servers, upstream, judge]:
                shutil.copy(server.log_path, keep_logs / server.log_path.name)
            shutil.copy(cluster.log_file, keep_logs / "postgresql.log")
    machine = [
        machine_line(),
        f"PostgreSQL {settings['server_version']}, a throwaway cluster on 127.0.0.1 (TCP),"
        f" fsync={settings['fsync']}, synchronous_commit={settings['synchronous_commit']},"
        f" full_page_writes={settings['full_page_writes']}",
        "everything on this one machine: PostgreSQL, the fakes, the gateways, the scorer and"
        " the load share the cores",
        f"load average at the start {load_start}, at the end "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
        + f"; the run took {time.monotonic() - started:.0f} s, {waited:.0f} s of it waiting"
        f" for the rest of the machine to use < {QUIET_CORES:g} cores (it used {cores:.2f}"
        " when the load started)",
    ]
    return run, machine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench outage", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    defaults = Plan()
    parser.add_argument("--rate", type=float, default=defaults.rate, help="req/s (100)")
    parser.add_argument("--before", type=float, default=defaults.before, help="seconds (15)")
    parser.add_argument("--outage", type=float, default=defaults.outage, help="seconds (15)")
    parser.add_argument("--after", type=float, default=defaults.after, help="seconds (15)")
    parser.add_argument("--settle-limit", type=float, default=defaults.settle_limit)
    parser.add_argument("--judge-latency", type=float, default=defaults.judge_latency)
    parser.add_argument("--max-concurrency", type=int, default=defaults.max_concurrency)
    parser.add_argument(
        "--sample-interval",
        type=float,
        default=defaults.sample_interval,
        help="seconds between reads of /metrics, /readyz and the database (1)",
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=defaults.quiet_wait,
        help="seconds to wait at most for the rest of the machine to calm (300; 0: none)",
    )
    parser.add_argument(
        "--keep-logs", type=Path, help="a folder to copy every process's log and PostgreSQL's to"
    )
    parser.add_argument("--out", type=Path, help="the markdown file (bench/results/outage-...)")
    args = parser.parse_args(argv)
    stop_on_signals()
    os.environ.update(ENV)
    plan = Plan(
        rate=args.rate,
        before=args.before,
        outage=args.outage,
        after=args.after,
        settle_limit=max(args.settle_limit, defaults.settle),
        judge_latency=args.judge_latency,
        max_concurrency=args.max_concurrency,
        sample_interval=args.sample_interval,
        quiet_wait=args.quiet_wait,
    )
    date = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    source = source_note()
    try:
        run, machine = measure(plan, pg_bin(), args.keep_logs)
    except KeyboardInterrupt:
        print(
            "bench.outage.run: interrupted; every process it started was stopped", file=sys.stderr
        )
        return 130
    found = figures(run)
    report = render(date, source, machine, found)
    out = args.out or RESULTS / f"outage-{date}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
    found["machine"] = machine
    out.with_suffix(".json").write_text(json.dumps(found, indent=2) + "\n")
    print(report)
    print(f"wrote {out} and {out.with_suffix('.json').name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
