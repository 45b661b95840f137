"""The processes of a scale-out cell: gateways, scorers, the fake judge, and their databases."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.fakes.paced import Pace, start_paced
from bench.harness.cpu import Quiet
from bench.harness.gateways import gateway_config
from bench.harness.gateways import start_gateway as serve
from bench.harness.procs import Processes, ServerProcess
from bench.store.scaleout.plan import ENV, Plan
from testkit.postgres import PgCluster


@dataclass(frozen=True)
class Context:
    procs: Processes
    work_dir: Path
    upstream: ServerProcess
    cluster: PgCluster
    plan: Plan
    quiet: Quiet


def _settings(
    ctx: Context, name: str, *, mode: str, store_url: str | None, judge: str | None = None
) -> dict[str, Any]:
    """A gateway's or a scorer's settings; the store is SQLite at `<name>.db` unless
    `store_url` is set."""
    config = gateway_config(ctx.upstream.url, judge or ctx.upstream.url, mode=mode)
    config["upstream"]["timeout"] = 60
    config["judge"].update(timeout=30, max_concurrency=ctx.plan.concurrency, cache_size=0)
    config["policies"]["default"]["sample_rate"] = 1.0
    config["store"] = {"path": str(ctx.work_dir / f"{name}.db"), "retention_days": 0}
    if store_url is not None:
        config["store"]["url"] = store_url
    config["queue"] = {"scorer": "external", "drain_deadline": 5}
    return config


def start_gateway(ctx: Context, name: str, *, mode: str, store_url: str | None) -> ServerProcess:
    config = _settings(ctx, name, mode=mode, store_url=store_url)
    return serve(ctx.procs, name, config, log_dir=ctx.work_dir, log_level=None, env=ENV)


def start_scorer(ctx: Context, name: str, *, store_url: str, judge: str) -> ServerProcess:
    config = _settings(ctx, name, mode="monitor", store_url=store_url, judge=judge)
    return serve(
        ctx.procs, name, config, log_dir=ctx.work_dir, log_level=None, env=ENV, command="scorer"
    )


def start_judge(ctx: Context, name: str) -> ServerProcess:
    """The slow judge: every judge call sleeps `judge_latency` ± `judge_jitter`, no 429s."""
    plan = ctx.plan
    pace = Pace(
        ttft=0.0, chunk_interval=0.0, judge_latency=plan.judge_latency, jitter=plan.judge_jitter
    )
    return start_paced(ctx.procs, name, pace, log_dir=ctx.work_dir)


@contextlib.contextmanager
def fresh_database(cluster: PgCluster) -> Iterator[tuple[str, str]]:
    """A fresh database: (name, URL); dropped on exit."""
    name = cluster.create_database()
    try:
        yield name, cluster.url(name)
    finally:
        with contextlib.suppress(RuntimeError):
            cluster.drop_database(name)


def pending_work(ctx: Context, config: str, name: str, database: str | None) -> int:
    sql = "SELECT COUNT(*) FROM scores WHERE status = 'pending' AND work IS NOT NULL"
    if config == "postgresql" and database is not None:
        return int(ctx.cluster.psql(sql, database=database))
    path = ctx.work_dir / f"{name}.db"
    if config == "off" or not path.exists():
        return 0
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return int(conn.execute(sql).fetchone()[0])
