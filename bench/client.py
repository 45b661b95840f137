"""A small aiohttp client for what wrk cannot measure: time to first chunk, exact counts, bytes.

It runs on uvloop in the harness process. `StreamStats.cpu_percent` is the
harness's own CPU use during a probe, so a reader can check the client was not
saturated (and the probe against the fake directly shows its ceiling).
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import aiohttp
import uvloop

__all__ = ["StreamStats", "fetch_stream", "fire", "probe_streams", "run"]

T = TypeVar("T")


def run(main: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine function on a fresh uvloop event loop."""
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main())  # type: ignore[arg-type]  # an Awaitable is enough here


@dataclass
class StreamStats:
    """Streams completed in a probe and their time to first chunk and to the end (ms)."""

    streams: int
    rps: float
    ttft_p50_ms: float
    ttft_p99_ms: float
    total_p50_ms: float
    errors: int
    cpu_percent: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(share * 100) - 1]


def _session(concurrency: int, api_key: str) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=concurrency),
        timeout=aiohttp.ClientTimeout(total=30),
        headers={"authorization": f"Bearer {api_key}"},
    )


async def probe_streams(
    url: str, body: dict[str, Any], *, concurrency: int, duration: float, api_key: str
) -> StreamStats:
    """Closed-loop streams for `duration` s: time to the first body bytes and to the end."""
    ttfts: list[float] = []
    totals: list[float] = []
    errors = 0
    started_cpu = _cpu()
    started = time.perf_counter()
    stop_at = started + duration

    async with _session(concurrency, api_key) as session:

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < stop_at:
                sent = time.perf_counter()
                first = None
                try:
                    async with session.post(url, json=body) as response:
                        async for _ in response.content.iter_any():
                            if first is None:
                                first = time.perf_counter()
                        ok = response.status == 200
                except (aiohttp.ClientError, TimeoutError):
                    ok = False
                if not ok or first is None:
                    errors += 1
                    continue
                ttfts.append((first - sent) * 1000)
                totals.append((time.perf_counter() - sent) * 1000)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    return StreamStats(
        streams=len(ttfts),
        rps=round(len(ttfts) / wall, 1),
        ttft_p50_ms=round(_percentile(ttfts, 0.5), 3),
        ttft_p99_ms=round(_percentile(ttfts, 0.99), 3),
        total_p50_ms=round(_percentile(totals, 0.5), 3),
        errors=errors,
        cpu_percent=round(100 * (_cpu() - started_cpu) / wall, 1),
    )


async def fire(
    url: str,
    body: dict[str, Any],
    *,
    concurrency: int,
    count: int,
    deadline: float,
    api_key: str,
) -> int:
    """Send exactly `count` requests (or as many as fit before `deadline` s); return the 200s."""
    remaining = count
    ok = 0
    stop_at = time.monotonic() + deadline
    async with _session(concurrency, api_key) as session:

        async def worker() -> None:
            nonlocal remaining, ok
            while remaining > 0 and time.monotonic() < stop_at:
                remaining -= 1
                try:
                    async with session.post(url, json=body) as response:
                        await response.read()
                        ok += response.status == 200
                except (aiohttp.ClientError, TimeoutError):
                    pass

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ok


async def fetch_stream(url: str, body: dict[str, Any], *, api_key: str) -> bytes:
    """The raw body bytes of one streaming request."""
    async with (
        _session(1, api_key) as session,
        session.post(url, json=body) as response,
    ):
        return await response.read()


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
