"""Waiting in tests for a condition to hold: poll it, and fail saying what never came.

A test waits for a positive sign that the system reached a state (a row written, a
call received, a log line), never for a fixed time: a sleep passes on a fast
machine without proving anything, and fails on a busy one.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx

__all__ = ["answering", "eventually", "eventually_async", "wait_for"]

T = TypeVar("T")

Message = str | Callable[[], object]


def wait_for(
    condition: Callable[[], T | None],
    message: Message = "the condition",
    *,
    timeout: float = 10,
    interval: float = 0.02,
) -> T:
    """Call `condition` until it returns something truthy, and return that.

    After `timeout` seconds, fail with an AssertionError naming `message`; a callable
    `message` is called then, so the failure can show the state it found, e.g.
    `wait_for(lambda: rows(store).get(run_id), lambda: rows(store))`.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_timed_out(message, timeout))
        time.sleep(interval)


async def eventually(
    condition: Callable[[], T | None],
    message: Message = "the condition",
    *,
    timeout: float = 10,
    interval: float = 0.02,
) -> T:
    """`wait_for` for async tests: polls without blocking the event loop."""

    async def now() -> T | None:
        return condition()

    return await eventually_async(now, message, timeout=timeout, interval=interval)


async def eventually_async(
    condition: Callable[[], Awaitable[T | None]],
    message: Message = "the condition",
    *,
    timeout: float = 10,
    interval: float = 0.02,
) -> T:
    """`eventually` for a condition that must be awaited, e.g. a store's read."""
    deadline = time.monotonic() + timeout
    while True:
        value = await condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_timed_out(message, timeout))
        await asyncio.sleep(interval)


def _timed_out(message: Message, timeout: float) -> str:
    said = message() if callable(message) else message
    return f"timed out after {timeout:g} s waiting for {said}"


def answering(
    process: subprocess.Popen[Any], url: str, name: str, output: Callable[[], str]
) -> Callable[[], bool]:
    """A `wait_for` condition for a server started as `process`: `url` answers 200. If the
    process exits first, `RuntimeError` with its `output()`, rather than waiting out the
    timeout."""

    def check() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}: {output()}")
        try:
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    return check
