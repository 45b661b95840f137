"""The gateway as a process of its own: `bias-gateway serve` with the settings a scenario
builds as a dict (the config file's shape), read by the gateway's own loader before the
process starts, so that a wrong key fails in the scenario, naming the field.

    config = gateway_config(upstream.url, judge.url, store=work / "scores.db")
    config["policies"]["strict"] = {"mode": "enforce"}
    gateway = start_gateway(procs, "gateway", config, log_dir=work)
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.harness.procs import Processes, ServerProcess, free_port
from gateway.config import load_settings

__all__ = ["gateway_config", "start_gateway"]

API_KEY = "sk-bench"  # what the fakes are given; they take any key


def gateway_config(
    upstream: str, judge: str, *, store: Path | None = None, mode: str = "monitor"
) -> dict[str, Any]:
    """The settings every scenario starts from: `upstream` and `judge` (their base URLs,
    without `/v1`) as the upstream and the judge, a default policy in `mode`, and a SQLite
    store at `store` (none: the gateway's default)."""
    config: dict[str, Any] = {
        "upstream": {"base_url": f"{upstream}/v1", "api_key": API_KEY},
        "judge": {"model": "judge", "base_url": f"{judge}/v1", "api_key": API_KEY},
        "policies": {"default": {"mode": mode}},
        "server": {"host": "127.0.0.1"},
    }
    if store is not None:
        config["store"] = {"path": str(store)}
    return config


def start_gateway(
    procs: Processes,
    name: str,
    config: Mapping[str, Any],
    *,
    log_dir: Path,
    port: int | None = None,
    log_level: str | None = "warning",
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    ready_path: str = "/readyz",
    command: str = "serve",
) -> ServerProcess:
    """`bias-gateway serve` (or `command`, such as `scorer`) on `config` (written to
    `<log_dir>/<name>.json`: JSON is YAML), on `port` (a free one by default), ready once
    `ready_path` answers.

    `log_level` None leaves the gateway's own default; `args` go to `serve` as they are
    (`--workers 2`, say); `env` is added to this process's environment.
    """
    path = log_dir / f"{name}.json"
    path.write_text(json.dumps(config, indent=2) + "\n")
    load_settings(path, {**os.environ, **(env or {})})  # raises ConfigError: file, field, problem
    port = port or free_port()
    argv = [sys.executable, "-m", "gateway", command, "--config", str(path), "--port", str(port)]
    if log_level is not None:
        argv += ["--log-level", log_level]
    argv += list(args)
    return procs.start(name, argv, port=port, ready_path=ready_path, log_dir=log_dir, env=env)
