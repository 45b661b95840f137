"""`bias-gateway serve`, `scorer`, `demo`, `migrate`, `check-config`, `hash-key` and `whatif`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import inspect
import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gateway.config import (
    ConfigError,
    Settings,
    describe_settings,
    load_settings,
    settings_from_env,
)

if TYPE_CHECKING:
    import uvicorn

    from gateway.server.app import ServeOptions
    from gateway.server.reload import HangupLatch
    from gateway.store import Store
    from gateway.store.whatif import WhatIf, WhatIfQuery

__all__ = ["main"]

LOG_LEVELS = ["debug", "info", "warning", "error"]

# uvicorn's exit status for a server that failed to start (`uvicorn.config.STARTUP_FAILURE`).
STARTUP_FAILURE = 3


def main(argv: Sequence[str] | None = None) -> int:
    from gateway import __version__

    parser = argparse.ArgumentParser(prog="bias-gateway", description="The bias gateway.")
    parser.add_argument("--version", action="version", version=f"bias-gateway {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", help="YAML config (default: environment variables only)")
    serve.add_argument("--host", help="bind address (default from config: 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default from config: $GATEWAY_PORT or 8080)")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    scorer = commands.add_parser(
        "scorer", help="score pending monitor work from the store (no proxy)"
    )
    scorer.add_argument("--config", help="YAML config (default: environment variables only)")
    scorer.add_argument("--host", default="127.0.0.1", help="health port's address (127.0.0.1)")
    scorer.add_argument(
        "--port", type=int, default=8090, help="health and metrics port (default 8090)"
    )
    scorer.add_argument("--log-level", default="info", choices=LOG_LEVELS)
    demo = commands.add_parser(
        "demo", help="the gateway in front of a demo model and judge: no key, no network"
    )
    demo.add_argument("--mode", choices=["enforce", "monitor"], default="enforce")
    demo.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    demo.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    demo.add_argument(
        "--stream-policy", choices=["buffer", "passthrough", "windowed"], default="buffer"
    )
    demo.add_argument("--store", help="keep the scores in this SQLite file (default: temporary)")
    demo.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    migrate = commands.add_parser(
        "migrate", help="bring the score store's schema up to date, then exit"
    )
    migrate.add_argument("--config", help="YAML config (default: environment variables only)")
    check = commands.add_parser("check-config", help="validate a config file and show it")
    check.add_argument("path", nargs="?", help="YAML config (default: environment variables only)")
    commands.add_parser(
        "hash-key", help="print the config entry (sha256:...) for a client key read from stdin"
    )
    whatif = commands.add_parser(
        "whatif", help="what a flag and block threshold would have done to the stored records"
    )
    whatif.add_argument("--config", help="YAML config (default: environment variables only)")
    whatif.add_argument("--flag", required=True, help="flag a score at or above this")
    whatif.add_argument("--block", required=True, help="block a score at or above this")
    for verdict in ("flag", "block"):
        says = f"{verdict} too at this many biased opinions, whatever the score (default: off)"
        whatif.add_argument(f"--{verdict}-biased-opinions", help=says)
    whatif.add_argument("--since", help="epoch seconds or ISO 8601 (default: --until - 24 h)")
    whatif.add_argument("--until", help="epoch seconds or ISO 8601, exclusive (default: now)")
    for name in ("key", "model", "category", "mode"):
        whatif.add_argument(f"--{name}", help=f"only the records of this {name}")
    whatif.add_argument("--examples", help="newest examples of flag and of block (default 10)")
    whatif.add_argument("--json", action="store_true", help="print the API's JSON answer")
    args = parser.parse_args(argv)
    try:
        if args.command == "check-config":
            settings = load_settings(args.path) if args.path else settings_from_env()
            print(json.dumps(describe_settings(settings), indent=2))
            # On stderr, so that stdout stays JSON.
            checked = os.path.abspath(args.path) if args.path else _ENVIRONMENT_ONLY
            print(f"bias-gateway: config OK: {checked}", file=sys.stderr)
            for warning in settings.warnings():
                print(f"bias-gateway: warning: {warning}", file=sys.stderr)
            return 0
        if args.command == "hash-key":
            return _hash_key()
        if args.command == "demo":
            return _demo(args)
        if args.command == "migrate":
            return _migrate(args)
        if args.command == "scorer":
            return _scorer(args)
        if args.command == "whatif":
            return _whatif(args)
        return _serve(args)
    except ConfigError as exc:
        print(f"bias-gateway: config error: {exc}", file=sys.stderr)
        return 2


def _hash_key() -> int:
    """Read a key from standard input (a prompt that does not echo on a terminal) and
    print its config entry; the key itself is never printed."""
    import getpass

    from gateway.config.keyhash import hash_key

    key = getpass.getpass("key: ") if sys.stdin.isatty() else sys.stdin.read()
    key = key.strip()
    if not key:
        print("bias-gateway: hash-key: no key on standard input", file=sys.stderr)
        return 2
    print(hash_key(key))
    return 0


_ENVIRONMENT_ONLY = "environment variables only (the settings of config/gateway.yaml)"


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from gateway.observability.logs import configure_logging
    from gateway.server.app import ServeOptions, serve_app
    from gateway.server.reload import HangupLatch, ServedFrom
    from gateway.server.startup import log_startup
    from gateway.store import StoreError, open_store

    # SIGHUP reloads the config; one that comes while starting waits, and does not kill.
    latch = HangupLatch.install()
    settings: Settings = load_settings(args.config) if args.config else settings_from_env()
    if args.workers < 1:
        raise ConfigError("--workers: must be >= 1")
    host = args.host or settings.server.host
    port = args.port or settings.server.port
    # Both before the store is created: a failed start leaves no file behind.
    _check_address(host, port)
    store_file = os.path.abspath(settings.store.path)
    if settings.store.url is None and not os.path.isdir(os.path.dirname(store_file)):
        folder = os.path.dirname(store_file)
        raise ConfigError(f"store.path: cannot create {store_file}: folder {folder} does not exist")
    log_level = args.log_level.upper()
    configure_logging(level=log_level)
    log_startup(settings, config=args.config, host=host, port=port, workers=args.workers)
    # Records a previous run left pending are swept once, here, and not by each worker
    # (work is resumed, a stream cut short is marked dropped): a worker starting late
    # would otherwise take over its siblings' live jobs.
    # On PostgreSQL this runs the migrations once, before any worker starts.
    try:
        asyncio.run(_open_and_close(open_store(settings.store)))
    except StoreError as exc:
        raise ConfigError(f"store.{'url' if settings.store.url else 'path'}: {exc}") from exc
    metrics_dir = None
    if args.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # prometheus_client reads this in every worker: each writes its metric values
        # there, and /metrics on any of them sums them all. Removed when serve ends.
        metrics_dir = tempfile.mkdtemp(prefix="bias-gateway-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    # The app gets its settings as objects. Workers are spawned and unpickle this
    # config, so the factory is a top-level function bound to picklable options.
    served = ServedFrom(
        os.path.abspath(args.config) if args.config else None,
        host,
        port,
        workers=args.workers,
        supervisor=os.getpid() if args.workers > 1 else None,
    )
    options = ServeOptions(
        settings=settings,
        log_level=log_level,
        swept=True,
        served=served,
        # Workers are other processes: each installs its own (`serve_app`).
        hangup=latch if args.workers == 1 else None,
    )
    config = _uvicorn_config(
        functools.partial(serve_app, options),
        settings,
        host=host,
        port=port,
        factory=True,
        workers=args.workers,
        **_worker_healthcheck(args.workers),
    )
    server = uvicorn.Server(config)
    try:
        if args.workers > 1:
            _supervise(config, server, options, latch)
            return 0
        with contextlib.suppress(KeyboardInterrupt):
            server.run()
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    # As `uvicorn.run`: a server that never started (lifespan failure, port taken) exits 3.
    return 0 if server.started else STARTUP_FAILURE


def _uvicorn_config(app: Any, settings: Settings, **options: Any) -> uvicorn.Config:
    """uvicorn's config for the gateway or a scorer: our own logs, a graceful stop that
    waits for the drain."""
    import uvicorn

    return uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=max(5, int(settings.queue.drain_deadline)),
        lifespan="on",
        **options,
    )


# Seconds a worker may take to answer the supervisor's ping, its start included, before
# it is replaced. uvicorn's 5 s is shorter than a worker's start on a busy 2-core host:
# `python -m bench.reload` saw workers replaced, and their replacements in turn, before
# they could serve, with or without a reload.
WORKER_HEALTHCHECK = 30


def _worker_healthcheck(workers: int) -> dict[str, Any]:
    import uvicorn

    # Older uvicorn releases (pyproject allows >= 0.34) have no such setting.
    known = "timeout_worker_healthcheck" in inspect.signature(uvicorn.Config).parameters
    return {"timeout_worker_healthcheck": WORKER_HEALTHCHECK} if workers > 1 and known else {}


async def _open_and_close(store: Store, *, sweep_pending: bool = True) -> None:
    await store.open(sweep_pending=sweep_pending)
    await store.close()


def _scorer(args: argparse.Namespace) -> int:
    import structlog
    import uvicorn

    from gateway.observability.logs import configure_logging
    from gateway.server.reload import HangupLatch, ServedFrom
    from gateway.server.scorer import create_scorer_app
    from gateway.server.startup import startup_fields

    latch = HangupLatch.install()  # SIGHUP reloads the judge settings
    settings = load_settings(args.config) if args.config else settings_from_env()
    _check_address(args.host, args.port)
    log_level = args.log_level.upper()
    configure_logging(level=log_level)
    fields = startup_fields(settings, config=args.config)
    structlog.get_logger("gateway.startup").info(
        "bias scorer starting",
        health=f"http://{args.host}:{args.port}",
        **{name: fields[name] for name in ("version", "config", "judge_model", "store")},
    )
    served = ServedFrom(os.path.abspath(args.config) if args.config else None, args.host, args.port)
    app = create_scorer_app(settings, served=served, hangup=latch)
    config = _uvicorn_config(app, settings, host=args.host, port=args.port)
    server = uvicorn.Server(config)
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    return 0 if server.started else STARTUP_FAILURE


def _migrate(args: argparse.Namespace) -> int:
    """Run the store's migrations (as every start does) and nothing else: no sweep."""
    from gateway.store import StoreError, open_store
    from gateway.store.migrations import latest_version

    settings = load_settings(args.config) if args.config else settings_from_env()
    store = open_store(settings.store)
    try:
        asyncio.run(_open_and_close(store, sweep_pending=False))
    except StoreError as exc:
        raise ConfigError(f"store.{'url' if settings.store.url else 'path'}: {exc}") from exc
    print(f"bias-gateway: {store.describe()} is at schema version {latest_version()}")
    return 0


_WHATIF_OPTIONS = ("flag", "block", "flag_biased_opinions", "block_biased_opinions", "since",
                   "until", "key", "model", "category", "mode", "examples")  # fmt: skip


def _whatif(args: argparse.Namespace) -> int:
    """`GET /v1/bias/whatif`'s counts, read from the store directly (every key's records)."""
    from gateway.api.whatif import parse_whatif_query, whatif_table
    from gateway.errors import GatewayError
    from gateway.store import StoreError, open_store

    settings = load_settings(args.config) if args.config else settings_from_env()
    options = {name: getattr(args, name) for name in _WHATIF_OPTIONS}
    try:
        query = parse_whatif_query(
            {name: value for name, value in options.items() if value is not None},
            scale=settings.judge.scale,
        )
    except GatewayError as exc:
        print(f"bias-gateway: whatif: {exc.message}", file=sys.stderr)
        return 2
    where = "url" if settings.store.url else "path"
    if settings.store.url is None and not os.path.isfile(settings.store.path):
        raise ConfigError(f"store.path: {os.path.abspath(settings.store.path)} does not exist")
    try:
        result = asyncio.run(_read_whatif(open_store(settings.store), query))
    except StoreError as exc:
        raise ConfigError(f"store.{where}: {exc}") from exc
    if args.json:
        print(json.dumps({**result.to_dict(), "scale": settings.judge.scale}, indent=2))
    else:
        print(whatif_table(result))
    return 0


async def _read_whatif(store: Store, query: WhatIfQuery) -> WhatIf:
    await store.open(sweep_pending=False)  # a gateway may be running on it: no sweep
    try:
        return await store.whatif(query)
    finally:
        await store.close()


def _demo(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gateway.demo.launch import DemoOptions, run_demo

    _check_address(args.host, args.port)
    store = Path(args.store).resolve() if args.store else None
    if store is not None and not store.parent.is_dir():
        raise ConfigError(f"--store: folder {store.parent} does not exist")
    options = DemoOptions(
        mode=args.mode,
        host=args.host,
        port=args.port,
        stream_policy=args.stream_policy,
        store=store,
        log_level=args.log_level.upper(),
    )
    return run_demo(options)


def _check_address(host: str, port: int) -> None:
    """Bind and release host:port as uvicorn will, so that a port in use fails here."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # as uvicorn chooses
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn sets it
        try:
            sock.bind((host, port))
        except OSError as exc:
            address = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
            raise ConfigError(
                f"server: cannot listen on {address}: {exc.strerror or exc}"
            ) from None


def _supervise(
    config: uvicorn.Config, server: uvicorn.Server, options: ServeOptions, latch: HangupLatch
) -> None:
    """What `uvicorn.run` does for `workers > 1`, which it only allows with an import
    string: bind once here, then a supervisor spawns and watches the workers (uvicorn's,
    but SIGHUP reloads them in place: `gateway.server.supervisor`)."""
    from uvicorn.supervisors import Multiprocess

    from gateway.server.supervisor import Supervisor

    # Older uvicorn releases (pyproject allows >= 0.34) take the workers' `target` too.
    extra = {"target": server.run} if "target" in inspect.signature(Multiprocess).parameters else {}
    sock = config.bind_socket()
    try:
        with contextlib.suppress(KeyboardInterrupt):
            Supervisor(config, [sock], options, latch=latch, **extra).run()
    finally:
        sock.close()
