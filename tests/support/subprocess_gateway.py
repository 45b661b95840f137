"""Run `bias-gateway serve` as a real subprocess, for signal and startup tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def gateway_command() -> list[str]:
    return [sys.executable, "-m", "gateway"]


def start_gateway(
    config: Path,
    *,
    env: dict[str, str] | None = None,
    extra: list[str] | None = None,
    command: list[str] | None = None,
) -> tuple[subprocess.Popen[str], str]:
    """Start `serve` (through `command`, default `gateway_command()`) and wait for /readyz."""
    return _start("serve", config, env=env, extra=extra, command=command)


def start_scorer(
    config: Path,
    *,
    env: dict[str, str] | None = None,
    extra: list[str] | None = None,
    command: list[str] | None = None,
) -> tuple[subprocess.Popen[str], str]:
    """Start `scorer` on a free health port (through `command`, default `gateway_command()`)
    and wait for its /readyz; returns the process and the health port's URL."""
    return _start("scorer", config, env=env, extra=extra, command=command)


def _start(
    subcommand: str,
    config: Path,
    *,
    env: dict[str, str] | None,
    extra: list[str] | None,
    command: list[str] | None,
) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    argv = command or gateway_command()
    process = subprocess.Popen(
        [*argv, subcommand, "--config", str(config), "--port", str(port), *(extra or [])],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    name = "gateway" if subcommand == "serve" else subcommand
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = process.stdout.read() if process.stdout else ""
            raise RuntimeError(f"{name} exited with {process.returncode}: {output}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"{name} did not become ready")
