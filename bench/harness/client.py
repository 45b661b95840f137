"""A small aiohttp client for what wrk cannot measure: time to first chunk, exact counts, bytes.

It runs on uvloop in the harness process. `StreamStats.cpu_percent` is the
harness's own CPU use during a probe, so a reader can check the client was not
saturated (and the probe against the fake directly shows its ceiling).
"""

from __future__ import annotations

import asyncio
import resource
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import aiohttp
import uvloop

from bench.harness.report import percentile

__all__ = [
    "PacedStats",
    "StreamStats",
    "fetch_stream",
    "fire",
    "probe_paced",
    "probe_streams",
    "run",
]

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


def _ms(values: list[float], share: float) -> float:
    """A percentile to three places, or NaN for no values (the fields are floats)."""
    found = percentile(values, share, 3)
    return float("nan") if found is None else found


def _session(concurrency: int, api_key: str) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=concurrency),
        timeout=aiohttp.ClientTimeout(total=30),
        headers={"authorization": f"Bearer {api_key}"},
    )


async def _timed_post(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any]
) -> tuple[float | None, float] | None:
    """POST and read the whole body: (first body bytes, end) perf_counter times; None unless 200."""
    first = None
    try:
        async with session.post(url, json=body) as response:
            async for _ in response.content.iter_any():
                if first is None:
                    first = time.perf_counter()
            ok = response.status == 200
    except (aiohttp.ClientError, TimeoutError):
        return None
    return (first, time.perf_counter()) if ok else None


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
                timed = await _timed_post(session, url, body)
                first, ended = timed or (None, 0.0)
                if first is None:
                    errors += 1
                    continue
                ttfts.append((first - sent) * 1000)
                totals.append((ended - sent) * 1000)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    return StreamStats(
        streams=len(ttfts),
        rps=round(len(ttfts) / wall, 1),
        ttft_p50_ms=_ms(ttfts, 0.5),
        ttft_p99_ms=_ms(ttfts, 0.99),
        total_p50_ms=_ms(totals, 0.5),
        errors=errors,
        cpu_percent=round(100 * (_cpu() - started_cpu) / wall, 1),
    )


@dataclass
class PacedStats:
    """Requests sent one at a time at a fixed rate: latency (and TTFT for streams), ms."""

    rate: float
    requests: int
    p50_ms: float
    p99_ms: float
    ttft_p50_ms: float | None
    errors: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


async def probe_paced(
    url: str, body: dict[str, Any], *, rate: float, duration: float, api_key: str
) -> PacedStats:
    """One connection, one request every 1/`rate` s: latency when the server is not saturated.

    wrk's closed loop at c=1 keeps a gateway busy all the time; in monitor mode
    its scoring then competes with every request. At a rate the scorer keeps
    up with, this shows what monitoring costs a request. A late request is sent
    at once and the schedule is not caught up, so the rate is a ceiling.
    """
    interval = 1 / rate
    totals: list[float] = []
    ttfts: list[float] = []
    errors = 0
    stream = bool(body.get("stream"))
    async with _session(1, api_key) as session:
        stop_at = time.perf_counter() + duration
        next_at = time.perf_counter()
        while next_at < stop_at:
            delay = next_at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            sent = time.perf_counter()
            next_at = max(next_at + interval, sent)
            timed = await _timed_post(session, url, body)
            if timed is None:
                errors += 1
                continue
            first, ended = timed
            totals.append((ended - sent) * 1000)
            if stream and first is not None:
                ttfts.append((first - sent) * 1000)
    return PacedStats(
        rate=rate,
        requests=len(totals),
        p50_ms=_ms(totals, 0.5),
        p99_ms=_ms(totals, 0.99),
        ttft_p50_ms=_ms(ttfts, 0.5) if stream else None,
        errors=errors,
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
