"""Run `bias-gateway serve`, `scorer` or `demo` as a real subprocess, for signal, startup
and install tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from testkit.servers import free_port
from testkit.waiting import answering, wait_for

__all__ = ["free_port", "gateway_command", "start_demo", "start_gateway", "start_scorer"]


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

    def output() -> str:
        return process.stdout.read() if process.stdout else ""

    ready = answering(process, f"{url}/readyz", name, output)
    try:
        wait_for(ready, f"{name} to become ready", timeout=30, interval=0.05)
    except AssertionError:
        process.kill()
        raise
    return process, url


def start_demo(
    command: list[str], cwd: Path, env: dict[str, str], *extra: str
) -> tuple[subprocess.Popen[str], str, list[str]]:
    """Start `demo` on a free port as a user would (`command`: what runs `bias-gateway`);
    return the process, its URL and the lines it printed, once it has printed what to
    try and answers."""
    port = free_port()
    process = subprocess.Popen(
        [*command, "demo", "--port", str(port), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=cwd,
    )
    assert process.stdout is not None
    printed: list[str] = []
    try:
        deadline = time.monotonic() + 30
        while not any("Stop with Ctrl-C" in line for line in printed):
            assert time.monotonic() < deadline, "".join(printed)
            line = process.stdout.readline()
            assert line or process.poll() is None, "".join(printed)
            printed.append(line)
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answers(f"{url}/readyz"), "the demo to answer")
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process, url, printed


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.TransportError:
        return False
