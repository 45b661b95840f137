"""Scale-out: what enqueueing costs a request, and how scoring grows with scorer processes.

    .venv/bin/python -m bench scaleout            # about 5 minutes on 2 cores
    make bench-scaleout                           # the same, finding or installing PostgreSQL

With `queue.scorer: external` a monitoring gateway does not judge: it stores each
response `pending` with its work (and on PostgreSQL sends a NOTIFY), and
`bias-gateway scorer` processes claim that work with a lease and judge it. The
issue asks two things of that design, and this measures both:

1. **Enqueue cost on the request path.** `bias-gateway serve` (one worker) in
   front of the fast fake upstream (`bench.fakes.server`), non-streaming chat
   completions, in three configurations: mode `off`; mode `monitor` with
   `queue.scorer: external` on SQLite; the same on PostgreSQL (`store.url`). No
   scorer runs: the work only piles up, so what is measured is the enqueue
   alone. At c=1: `wrk -c1` (sequential, a few thousand requests) for
   p50/p90/p99, and a paced probe (`bench.harness.client.probe_paced`, one request every
   5 ms), where the store's writer works between requests rather than beside
   them. At c=32: `wrk -c32` closed loop, for throughput. In each round the
   three gateways run side by side on fresh stores and take turns (off,
   sqlite, postgresql, off, ...) in slices of 2-3 s, so that a burst of other
   load on the machine falls on all three; each round is reported. Target:
   monitor-external p50 - off p50 <= 0.5 ms at c=1.
2. **Scoring throughput with one and with two scorers.** A fresh PostgreSQL
   database is filled with N pending work items through a gateway
   (`queue.scorer: external`), which is then stopped; then 1 or 2 scorer
   processes start together and the database is polled until all N are final.
   The judge is slow: `bench.fakes.paced`, 0.33 s ± 30 % a call, 3 calls a
   scoring (about 1 s), a process of its own that only sleeps, so it is not the
   bottleneck (its CPU and peak of calls in flight are in the table). Each
   scorer has `judge.max_concurrency: 8` and N is large enough (8 x 2 x 12 =
   192) that every scorer holds 8 scorings in flight until the end; the table
   shows the mean in flight per scorer. `judge.cache_size: 0` and every reply of
   the fake is unique, so no cache hides the judge. The rate is taken over the
   middle of the run (the 10th to the 90th percentile of completion times, from
   the records' `updated_at`), where every scorer is past its start and not yet
   out of work; first claim to last completion is shown beside it. Target: two
   scorers >= 1.8x one scorer's rate.

The PostgreSQL cluster is the tests' throwaway one (`testkit/postgres.py`:
initdb into a temporary folder, an unprivileged user, 127.0.0.1 on a free
port), with its durability switched back to PostgreSQL's defaults (fsync,
synchronous_commit, full_page_writes on). Everything runs on one machine: the
PostgreSQL server shares the 2 cores with the gateway, the fakes and wrk.

Writes `bench/results/scaleout-<date>.md` and prints it. Every process and
folder it creates is removed at the end, on errors and on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.fakes.server import start_fake
from bench.harness.cpu import QUIET_CORES, QUIET_MAX_WAIT, Quiet
from bench.harness.loadgen import WrkMissing, require_wrk
from bench.harness.machine import machine_line, source_note
from bench.harness.paths import RESULTS
from bench.harness.postgres import durable_settings, pg_bin
from bench.harness.procs import Processes, stop_on_signals
from bench.harness.report import write_report
from bench.store.scaleout.enqueue import EnqueueCell, run_enqueue
from bench.store.scaleout.plan import ENV, Plan, note
from bench.store.scaleout.processes import Context
from bench.store.scaleout.report import render
from bench.store.scaleout.scoring import ScoringCell, run_scoring
from testkit.postgres import start_cluster

__all__ = ["Plan", "main"]


# -- CPU accounting -------------------------------------------------------------------


# -- processes --------------------------------------------------------------------------


# -- 1. enqueue cost ------------------------------------------------------------------


# -- 2. scoring throughput ------------------------------------------------------------------


# -- the report ---------------------------------------------------------------------------


# -- main ---------------------------------------------------------------------------------


def run(plan: Plan) -> tuple[list[str], list[EnqueueCell], list[ScoringCell]]:
    """Start the cluster and the fake upstream, run the parts; everything stops at the end."""
    require_wrk()
    started = time.monotonic()
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with contextlib.ExitStack() as stack:
        work_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-scaleout-")))
        note("starting a throwaway PostgreSQL cluster")
        cluster = start_cluster(pg_bin())
        stack.callback(cluster.stop)
        settings = durable_settings(cluster)
        procs = stack.enter_context(Processes())
        upstream = start_fake(procs, work_dir, chunks=50, name="upstream")
        quiet = Quiet(enabled=plan.wait_quiet)
        ctx = Context(procs, work_dir, upstream, cluster, plan, quiet)
        enqueue = run_enqueue(ctx) if "enqueue" in plan.parts else []
        scoring = run_scoring(ctx) if "scoring" in plan.parts else []
    machine = [
        machine_line(),
        f"PostgreSQL {settings['server_version']}, a throwaway cluster on 127.0.0.1 (TCP),"
        f" fsync={settings['fsync']}, synchronous_commit={settings['synchronous_commit']},"
        f" full_page_writes={settings['full_page_writes']},"
        f" shared_buffers={settings['shared_buffers']}; SQLite in WAL mode on the local disk",
        "everything on this one machine: gateway, PostgreSQL, fakes, wrk and the scorers"
        " share the cores",
        f"load average at the start {load_start}, at the end "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
        + f"; the run took {time.monotonic() - started:.0f} s, {quiet.waited:.0f} s of it"
        f" waiting before cells for the rest of the machine to use < {QUIET_CORES} cores"
        f" ({quiet.unquiet} cells started without such a moment, after {QUIET_MAX_WAIT:g} s)",
    ]
    return machine, enqueue, scoring


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench scaleout", description=__doc__)
    defaults = Plan()
    parser.add_argument("--rounds", type=int, default=defaults.rounds, help="rounds (2)")
    parser.add_argument("--c1-seconds", type=float, default=defaults.c1_seconds)
    parser.add_argument("--c32-seconds", type=float, default=defaults.c32_seconds)
    parser.add_argument("--paced-seconds", type=float, default=defaults.paced_seconds)
    parser.add_argument("--items", type=int, default=defaults.items, help="work items (192)")
    parser.add_argument("--concurrency", type=int, default=defaults.concurrency)
    parser.add_argument("--judge-latency", type=float, default=defaults.judge_latency)
    parser.add_argument(
        "--only", choices=("enqueue", "scoring"), help="run one part only (default both)"
    )
    parser.add_argument(
        "--no-wait-quiet",
        action="store_true",
        help="start each cell at once, without waiting for the rest of the machine to calm",
    )
    parser.add_argument("--out", type=Path, help="the markdown file (bench/results/scaleout-...)")
    args = parser.parse_args(argv)
    stop_on_signals()
    os.environ.update(ENV)
    plan = Plan(
        rounds=args.rounds,
        c1_seconds=args.c1_seconds,
        c32_seconds=args.c32_seconds,
        paced_seconds=args.paced_seconds,
        items=args.items,
        concurrency=args.concurrency,
        judge_latency=args.judge_latency,
        parts=(args.only,) if args.only else ("enqueue", "scoring"),
        wait_quiet=not args.no_wait_quiet,
    )
    date = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    source = source_note()  # before the run: the code the gateways start with
    try:
        machine, enqueue, scoring = run(plan)
    except WrkMissing as exc:
        print(f"bench.store.scaleout: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "bench.store.scaleout: interrupted; every process it started was stopped",
            file=sys.stderr,
        )
        return 130
    report = render(date, source, machine, enqueue, scoring, plan)
    out = args.out or RESULTS / f"scaleout-{date}.md"
    write_report(report, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
