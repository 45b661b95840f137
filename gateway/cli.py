"""`bias-gateway serve` and `bias-gateway check-config`."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Sequence

from gateway.config import (
    ConfigError,
    Settings,
    describe_settings,
    load_settings,
    settings_from_env,
)

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bias-gateway", description="The bias gateway.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", help="YAML config (default: environment variables only)")
    serve.add_argument("--host", help="bind address (default from config: 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default from config: $GATEWAY_PORT or 8080)")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    check = commands.add_parser("check-config", help="validate a config file and show it")
    check.add_argument("path")
    args = parser.parse_args(argv)
    try:
        if args.command == "check-config":
            settings = load_settings(args.path)
            print(json.dumps(describe_settings(settings), indent=2))
            return 0
        return _serve(args)
    except ConfigError as exc:
        print(f"bias-gateway: config error: {exc}", file=sys.stderr)
        return 2


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from gateway.logs import configure_logging
    from gateway.store import ScoreStore, StoreError

    settings: Settings = load_settings(args.config) if args.config else settings_from_env()
    if args.workers < 1:
        raise ConfigError("--workers: must be >= 1")
    host = args.host or settings.server.host
    port = args.port or settings.server.port
    configure_logging(level=args.log_level.upper())
    # Records left pending by a previous run are marked dropped once, here, and not by
    # each worker: a worker starting late would otherwise drop its siblings' live jobs.
    try:
        store = ScoreStore(settings.store.path)
        store.start(sweep_pending=True)
        asyncio.run(store.close())
    except StoreError as exc:
        raise ConfigError(f"store.path: {exc}") from exc
    if args.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Each worker writes its metric values here; /metrics on any of them sums them all.
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="bias-gateway-metrics-")
    os.environ["BIAS_GATEWAY_SWEPT"] = "1"
    os.environ["BIAS_GATEWAY_LOG_LEVEL"] = args.log_level.upper()
    if args.config:
        os.environ["BIAS_GATEWAY_CONFIG"] = os.path.abspath(args.config)
    uvicorn.run(
        "gateway.app:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=args.workers,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=max(5, int(settings.queue.drain_deadline)),
        lifespan="on",
    )
    return 0
