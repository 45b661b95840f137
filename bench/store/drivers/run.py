"""Pick the PostgreSQL driver for the score store by measurement: asyncpg or psycopg 3.

    .venv/bin/pip install asyncpg 'psycopg[binary,pool]'
    .venv/bin/python -m bench store_drivers            # about 6-7 minutes on 2 cores
    .venv/bin/python -m bench store_drivers --quick    # a smoke run of about a minute

Starts a throwaway PostgreSQL cluster of its own (initdb into a temporary
folder, as the `postgres` user when run as root, 127.0.0.1 on a free port, the
unix socket in that folder), with the default durability settings (fsync on,
synchronous_commit on), and removes it at the end, on errors and on Ctrl-C too.
The drivers connect over TCP to 127.0.0.1, as to a database on another host,
minus the network.

The workload is the SQLite store's (`gateway/store.py`) moved to PostgreSQL:
the `scores` table with the columns of `ScoreRecord` (`result` as jsonb, times
as double precision as in SQLite), its two indexes, and `score_cache`.

1. upserts: one writer connection commits batches of 1, 16, 128 and 512
   records a transaction (`INSERT ... ON CONFLICT (run_id) DO UPDATE`). Half of a
   batch are new `pending` rows, half turn earlier rows `scored` (a ~1 KB
   result and a reason), as a run's two writes do; a batch of n > 1 also puts
   n/8 cache entries and trims the cache to 10,000, as the store's `_commit`
   does. Three paths per driver: `executemany` (psycopg: in a pipeline),
   one `INSERT ... SELECT FROM unnest(<one array a column>)`, and COPY into a
   temporary table then one `INSERT ... SELECT` merge. Also once with
   `synchronous_commit=off` on the writer's session (batches of 1 and 128).
2. point lookups by run_id through a pool of 10 (the row turned into a
   `ScoreRecord`, result parsed), from 1 and 32 tasks, on a table of 50,000 rows.
3. the Python process's CPU time (`time.process_time`) per 10k operations of
   every cell, and the PostgreSQL processes' CPU beside it: on 2 cores both
   share the machine with request handling.
4. a work-queue claim from 4 workers, each on its own connection: in one
   transaction `SELECT ... FOR UPDATE SKIP LOCKED` one row, then `UPDATE` it;
   and the same as one `UPDATE ... WHERE id = (SELECT ... SKIP LOCKED)`.
5. LISTEN/NOTIFY: from just before `pg_notify()` is sent on one connection to
   the listener's callback on another (asyncpg `add_listener`; psycopg has no
   callback that fires on an idle connection, so its `notifies()` generator
   runs in a task and the loop body is the callback).

Every cell runs `--reps` times (3), the drivers taking turns in alternating
order, and the tables show the medians. `other` is the busy CPU of processes
that are neither this one nor the cluster's, in cores: a high value means the
cell was disturbed. The loop is uvloop when installed (uvicorn picks it then,
so the gateway runs on it), `--loop asyncio` for the standard one.

Writes `bench/results/store-drivers-<date>.md` and prints the same tables.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench.harness.paths import RESULTS
from bench.store.drivers.cluster import Cluster, _pg_bin


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench store_drivers", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--reps", type=int, default=3, help="runs a cell (default 3)")
    parser.add_argument("--quick", action="store_true", help="one short run a cell: a smoke test")
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    parser.add_argument("--pg-bin", help="folder of initdb and pg_ctl")
    parser.add_argument(
        "--quiet-budget",
        type=float,
        default=150.0,
        help="seconds in all to wait for a near-idle machine before runs (default 150, 0: never)",
    )
    parser.add_argument("--out", type=Path, help="the markdown file (default bench/results/...)")
    args = parser.parse_args(argv)
    args.upsert_seconds, args.lookup_seconds, args.claim_seconds = 1.5, 2.0, 2.5
    args.notifies = 300
    args.records = {1: 8_000, 16: 48_000, 128: 96_000, 512: 131_072}
    if args.quick:
        args.reps = 1
        args.upsert_seconds, args.lookup_seconds, args.claim_seconds = 0.3, 0.3, 0.3
        args.notifies = 50
        args.records = {1: 2_000, 16: 8_000, 128: 16_384, 512: 32_768}

    # After the arguments: `--help` works before the drivers are installed.
    from bench.store.drivers.report import measure_all, version

    loop_name = args.loop
    runner: Callable[[Awaitable[str]], str]
    if args.loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            loop_name = "asyncio (uvloop not installed)"
            runner = asyncio.run  # type: ignore[assignment]
        else:
            loop_name = f"uvloop {version('uvloop')}"
            runner = uvloop.run  # type: ignore[assignment]
    else:
        runner = asyncio.run  # type: ignore[assignment]

    cluster = Cluster(_pg_bin(args.pg_bin))
    try:
        cluster.start()
        report = runner(measure_all(args, cluster, loop_name))
    finally:
        cluster.stop()
    print(report)
    out = args.out or RESULTS / f"store-drivers-{time.strftime('%Y-%m-%d-%H%M')}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report + "\n")
    print(f"\nwritten to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
