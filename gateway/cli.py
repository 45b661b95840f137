"""`bias-gateway serve` and `bias-gateway check-config`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import inspect
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.config import (
    ConfigError,
    Settings,
    describe_settings,
    load_settings,
    settings_from_env,
)

if TYPE_CHECKING:
    import uvicorn

__all__ = ["main"]

# uvicorn's exit status for a server that failed to start (`uvicorn.config.STARTUP_FAILURE`).
STARTUP_FAILURE = 3


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

    from gateway.app import ServeOptions, serve_app
    from gateway.logs import configure_logging
    from gateway.store import ScoreStore, StoreError

    settings: Settings = load_settings(args.config) if args.config else settings_from_env()
    if args.workers < 1:
        raise ConfigError("--workers: must be >= 1")
    host = args.host or settings.server.host
    port = args.port or settings.server.port
    log_level = args.log_level.upper()
    configure_logging(level=log_level)
    # Records left pending by a previous run are marked dropped once, here, and not by
    # each worker: a worker starting late would otherwise drop its siblings' live jobs.
    try:
        store = ScoreStore(settings.store.path)
        store.start(sweep_pending=True)
        asyncio.run(store.close())
    except StoreError as exc:
        raise ConfigError(f"store.path: {exc}") from exc
    metrics_dir = None
    if args.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # prometheus_client reads this in every worker: each writes its metric values
        # there, and /metrics on any of them sums them all. Removed when serve ends.
        metrics_dir = tempfile.mkdtemp(prefix="bias-gateway-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    # The app gets its settings as objects. Workers are spawned and unpickle this
    # config, so the factory is a top-level function bound to picklable options.
    options = ServeOptions(settings=settings, log_level=log_level, swept=True)
    config = uvicorn.Config(
        functools.partial(serve_app, options),
        factory=True,
        host=host,
        port=port,
        workers=args.workers,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=max(5, int(settings.queue.drain_deadline)),
        lifespan="on",
    )
    server = uvicorn.Server(config)
    try:
        if args.workers > 1:
            _supervise(config, server)
            return 0
        with contextlib.suppress(KeyboardInterrupt):
            server.run()
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    # As `uvicorn.run`: a server that never started (lifespan failure, port taken) exits 3.
    return 0 if server.started else STARTUP_FAILURE


def _supervise(config: uvicorn.Config, server: uvicorn.Server) -> None:
    """What `uvicorn.run` does for `workers > 1`, which it only allows with an import
    string: bind once here, then uvicorn's supervisor spawns and watches the workers."""
    from uvicorn.supervisors import Multiprocess

    # Older uvicorn releases (pyproject allows >= 0.34) take the workers' `target` too.
    extra = {"target": server.run} if "target" in inspect.signature(Multiprocess).parameters else {}
    sock = config.bind_socket()
    try:
        with contextlib.suppress(KeyboardInterrupt):
            Multiprocess(config, sockets=[sock], **extra).run()
    finally:
        sock.close()
