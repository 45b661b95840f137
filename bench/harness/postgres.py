"""PostgreSQL for the scenarios that measure against it: the server's binaries, and
the test cluster turned back to PostgreSQL's default durability.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from bench.harness.paths import ROOT
from testkit.postgres import PgCluster


def pg_bin() -> Path:
    """PostgreSQL's server binaries: BIAS_TEST_PG_BIN, else what `scripts/postgres bin`
    finds (it installs Debian's package first when it can)."""
    if os.environ.get("BIAS_TEST_PG_BIN"):
        chosen = Path(os.environ["BIAS_TEST_PG_BIN"])
        if not (chosen / "initdb").exists():
            raise SystemExit(f"BIAS_TEST_PG_BIN={chosen}: no initdb there")
        return chosen
    done = subprocess.run(
        [str(ROOT / "scripts" / "postgres"), "bin"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"this scenario needs PostgreSQL: {done.stdout.strip()}{done.stderr}")
    return Path(done.stdout.strip())


def durable_settings(cluster: PgCluster) -> dict[str, str]:
    """Undo the test cluster's speed settings: PostgreSQL's default durability."""
    cluster.psql(
        "ALTER SYSTEM SET fsync = on",
        "ALTER SYSTEM SET synchronous_commit = on",
        "ALTER SYSTEM SET full_page_writes = on",
        "SELECT pg_reload_conf()",
    )
    time.sleep(0.5)  # the reload is asynchronous
    names = ("server_version", "fsync", "synchronous_commit", "full_page_writes", "shared_buffers")
    return {name: cluster.psql(f"SHOW {name}") for name in names}
