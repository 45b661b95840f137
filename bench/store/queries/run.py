"""Search and stats on a score store of a million records: latency and query plans.

    .venv/bin/python -m bench store_queries                     # 1,000,000 records, both engines
    .venv/bin/python -m bench store_queries --records 50000     # a quick check first
    .venv/bin/python -m bench store_queries --only sqlite       # or postgresql

Builds a store of N records on each engine, SQLite (a file in a temporary folder)
and PostgreSQL (a throwaway cluster from `testkit/postgres.py`, binaries from
`scripts/postgres bin`), then times `store.search(ScoreQuery)` and
`store.stats(StatsQuery)` and `store.whatif(WhatIfQuery)` through the real store
classes, and EXPLAINs the SQL of each case (`gateway.store.queries.search_sql`,
`stats_sql`, `p90_sql`; `gateway.store.whatif.whatif_sql`: counts, then examples).

The load is fast: the store is opened once, so the migrations run and the
`score_categories` triggers exist, then closed; the rows go in with the engine's
own bulk path (SQLite: `executemany` in transactions of 25,000 rows on a
connection of its own, `synchronous = OFF`; PostgreSQL: asyncpg
`copy_records_to_table`, batches of 25,000). The triggers fill
`score_categories` in both (COPY fires row triggers). Then SQLite `ANALYZE` and a
WAL checkpoint, PostgreSQL `VACUUM (ANALYZE)` (as autovacuum would have done on a
production table; it also keeps autovacuum from starting during the timings).

The records (one seed, the same on both engines): created_at spread evenly over
30 days ending at the start of the run, in arrival order; 70 % scored (verdict
pass 80 % / flag 12 % / block 8 %, by score), 17 % skipped, 6 % error, 6 %
dropped, 1 % pending (spread over the 30 days, as workless pending records that
no sweep ended); 20 keys (Zipf-like shares, 18 % down to 2.2 %), 8 models;
categories (1-2 of gender, political, racial_ethnic, geographical, other, age,
skewed) on every scored record with a score above 0 (about 22 % of them);
judge_calls and judge_tokens; `result` a real `BiasResult.to_json_dict()` as the
gateway stores it (prompts left out, as without content capture), about 1-2 KB.

Each case: 2 warm-ups, then 20 timed calls (fewer when one case has used
`--budget` seconds, at least 3), median and p95 (interpolated between ranks). A stats
call is the store's: `stats_sql` then `p90_sql`, two queries. PostgreSQL's plans are
shown for the custom plan (the values known) and, when it differs, for the
generic plan too: the store runs its queries as prepared statements (asyncpg's
statement cache), and after 5 runs PostgreSQL may switch a statement to the
generic plan. A case over 200 ms also gets `EXPLAIN (ANALYZE, BUFFERS)` on
PostgreSQL. Last, optionally, one HTTP round trip of `GET /v1/bias/scores` and
`GET /v1/bias/stats?group_by=verdict` through the gateway app (uvicorn in a
thread of this process, on the same store).

Then (`--no-suggest` skips it) the stats cases again with what might speed them up,
on the bench's copy only: SQLite with two covering indexes; PostgreSQL first with
`plan_cache_mode = force_custom_plan` and `jit = off` on the store's pooled
connection, then the 30-day case as one query (`percentile_disc(0.9)` in the stats
query, checked to give the same p90s), then with covering indexes too.

Writes `bench/results/store-queries-<date>.md` and prints it. The temporary
folder and the cluster are removed at the end, on errors and on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness.machine import machine_line, source_note
from bench.harness.paths import RESULTS, ROOT
from bench.harness.procs import stop_on_signals
from bench.harness.report import write_report
from bench.store.queries.engines import EngineResult, bench_postgres, bench_sqlite
from bench.store.queries.records import Records, log
from bench.store.queries.report import render
from bench.store.queries.timing import Settings

__all__ = ["main"]


# -- the records ------------------------------------------------------------------------


# -- the cases --------------------------------------------------------------------------


# -- plans ------------------------------------------------------------------------------


# -- timing -----------------------------------------------------------------------------


# -- the engines ------------------------------------------------------------------------


# -- the report -------------------------------------------------------------------------


# -- main -------------------------------------------------------------------------------


def _pg_bin() -> Path:
    """BIAS_TEST_PG_BIN, else what `scripts/postgres bin` finds (or installs)."""
    if os.environ.get("BIAS_TEST_PG_BIN"):
        return Path(os.environ["BIAS_TEST_PG_BIN"])
    done = subprocess.run(
        [str(ROOT / "scripts" / "postgres"), "bin"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"bench.store.queries needs PostgreSQL: {done.stdout}{done.stderr}")
    return Path(done.stdout.strip())


def run(settings: Settings) -> tuple[Records, list[EngineResult], list[str]]:
    from testkit.postgres import start_cluster

    started = time.monotonic()
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    records = Records(settings.records, end=time.time())
    results: list[EngineResult] = []
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-queries-")))
        if "sqlite" in settings.engines:
            results.append(asyncio.run(bench_sqlite(folder, records, settings)))
            (folder / "scores.db").unlink()  # room for the next engine's copy on the disk
        if "postgresql" in settings.engines:
            log("starting a throwaway PostgreSQL cluster")
            cluster = start_cluster(_pg_bin())
            stack.callback(cluster.stop)
            records.sizes.clear()
            results.append(asyncio.run(bench_postgres(cluster, records, settings)))
    machine = [
        machine_line()
        + "; a shared, noisy machine (other sessions' work runs beside it), every database"
        " in the OS page cache (warm)",
        f"load average at the start {load_start}, at the end "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
        + f"; the run took {time.monotonic() - started:.0f} s",
    ]
    return records, results, machine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench store_queries",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--records", type=int, default=1_000_000, help="records (1,000,000)")
    parser.add_argument("--runs", type=int, default=20, help="timed calls a case (20)")
    parser.add_argument("--warmups", type=int, default=2, help="warm-up calls a case (2)")
    parser.add_argument(
        "--budget", type=float, default=12.0, help="seconds of timed calls a case (12)"
    )
    parser.add_argument("--only", choices=("sqlite", "postgresql"), help="one engine only")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP round trips")
    parser.add_argument(
        "--no-suggest",
        action="store_true",
        help="skip the stats cases again with covering indexes (and PostgreSQL settings)",
    )
    parser.add_argument("--out", type=Path, help="the markdown file (bench/results/...)")
    args = parser.parse_args(argv)
    stop_on_signals()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    settings = Settings(
        records=args.records,
        runs=args.runs,
        warmups=args.warmups,
        budget=args.budget,
        engines=(args.only,) if args.only else ("sqlite", "postgresql"),
        http=not args.no_http,
        suggest=not args.no_suggest,
    )
    date = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    source = source_note()
    try:
        records, results, machine = run(settings)
    except KeyboardInterrupt:
        print("bench.store.queries: interrupted; store and cluster removed", file=sys.stderr)
        return 130
    report = render(date, source, settings, records, results, machine)
    out = args.out or RESULTS / f"store-queries-{date}.md"
    write_report(report, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
