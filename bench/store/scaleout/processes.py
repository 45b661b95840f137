"""The processes of a scale-out cell: gateways, scorers, the fake judge, and their databases."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.fakes.paced import Pace, start_paced
from bench.harness.cpu import Quiet
from bench.harness.procs import Processes, ServerProcess, free_port
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


def _gateway_config(
    ctx: Context,
    name: str,
    *,
    mode: str,
    port: int,
    store_url: str | None,
    judge: str | None = None,
) -> Path:
    """A config file (JSON is YAML) for a gateway or a scorer; the store is SQLite at
    `<name>.db` unless `store_url` is set."""
    store: dict[str, Any] = {"path": str(ctx.work_dir / f"{name}.db"), "retention_days": 0}
    if store_url is not None:
        store["url"] = store_url
    config = {
        "upstream": {"base_url": f"{ctx.upstream.url}/v1", "api_key": "sk-bench", "timeout": 60},
        "judge": {
            "model": "judge",
            "base_url": f"{judge or ctx.upstream.url}/v1",
            "api_key": "sk-bench",
            "timeout": 30,
            "max_concurrency": ctx.plan.concurrency,
            "cache_size": 0,
        },
        "policies": {"default": {"mode": mode, "sample_rate": 1.0}},
        "store": store,
        "queue": {"scorer": "external", "drain_deadline": 5},
        "server": {"host": "127.0.0.1", "port": port},
    }
    path = ctx.work_dir / f"{name}.yaml"
    path.write_text(json.dumps(config, indent=2))
    return path


def start_gateway(ctx: Context, name: str, *, mode: str, store_url: str | None) -> ServerProcess:
    port = free_port()
    config = _gateway_config(ctx, name, mode=mode, port=port, store_url=store_url)
    argv = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)]
    return ctx.procs.start(
        name, argv, port=port, ready_path="/readyz", log_dir=ctx.work_dir, env=ENV
    )


def start_scorer(ctx: Context, name: str, *, store_url: str, judge: str) -> ServerProcess:
    port = free_port()
    config = _gateway_config(ctx, name, mode="monitor", port=port, store_url=store_url, judge=judge)
    argv = [sys.executable, "-m", "gateway", "scorer", "--config", str(config), "--port", str(port)]
    return ctx.procs.start(
        name, argv, port=port, ready_path="/readyz", log_dir=ctx.work_dir, env=ENV
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
