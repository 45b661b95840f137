"""Paced open-loop load on the chat endpoint: one request every 1/rate s whatever the
answers do, each on its own task, with the gateway's backlog sampled meanwhile.

`ticks` is the schedule every open loop of the bench keeps (this one, and the
scenarios' own, whose requests differ: streams, keys, serials). (`bench.harness.loadgen`
is the closed loop, from wrk.)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import psutil

from bench.harness.procs import ServerProcess
from bench.harness.store import wait_settled

__all__ = ["Load", "Sent", "open_loop", "post", "ticks"]

_SAMPLE = re.compile(r"^(bias_scoring_queue_depth|bias_scorings_in_flight) (\S+)$", re.MULTILINE)


@dataclass
class Sent:
    started: float
    latency_ms: float | None = None
    status: int | None = None
    run_id: str | None = None
    bias_status: str | None = None
    ended_wall: float | None = None


@dataclass
class Load:
    sent: list[Sent] = field(default_factory=list)
    backlog: list[tuple[float, float, float]] = field(default_factory=list)  # t, queued, running
    peak_judge_connections: int = 0
    settled_s: float | None = None


async def ticks(
    rate: float,
    *,
    count: int | None = None,
    duration: float | None = None,
    stop: asyncio.Event | None = None,
) -> AsyncIterator[int]:
    """0, 1, 2, ... each yielded at `index / rate` s after the first, whatever the caller
    did meanwhile (an open loop: a late tick comes at once, and the next keep their time).

    Ends after `count` ticks, at `duration` s, or when `stop` is set, whichever is first.
    """
    begin = time.perf_counter()
    for index in itertools.count():
        due = index / rate
        if (count is not None and index >= count) or (duration is not None and due >= duration):
            return
        wait = begin + due - time.perf_counter()
        if stop is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=max(0.0, wait))
            if stop.is_set():
                return
        elif wait > 0:
            await asyncio.sleep(wait)
        yield index


async def open_loop(
    url: str,
    *,
    rate: float,
    duration: float,
    gateway: ServerProcess | None = None,
    judge_port: int = 0,
    store: Path | None = None,
    drain_timeout: float = 0.0,
) -> Load:
    """One request every 1/rate s, each on its own task; the backlog sampled meanwhile.

    With a `store`, the sampling goes on after the last answer until no record
    and no explanation is pending (`settled_s`), or `drain_timeout` passes.
    """
    load = Load()
    body = {"model": "m", "messages": [{"role": "user", "content": "Tell me about engineers."}]}
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        sampler = asyncio.create_task(_sample(load, gateway, judge_port))
        tasks = []
        async for _ in ticks(rate, count=int(rate * duration)):
            sent = Sent(started=time.perf_counter())
            load.sent.append(sent)
            tasks.append(asyncio.create_task(post(session, url, body, sent)))
        await asyncio.gather(*tasks)
        if store is not None:
            load.settled_s = await asyncio.to_thread(wait_settled, store, drain_timeout)
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
    return load


async def post(
    session: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any],
    sent: Sent,
    headers: dict[str, str] | None = None,
) -> None:
    """One chat completion; what came back goes into `sent`."""
    try:
        async with session.post(
            f"{url}/v1/chat/completions", json=body, headers=headers
        ) as response:
            await response.read()
            sent.status = response.status
            sent.run_id = response.headers.get("x-bias-run-id")
            sent.bias_status = response.headers.get("x-bias-status")
    except (aiohttp.ClientError, TimeoutError):
        sent.status = None
    sent.latency_ms = (time.perf_counter() - sent.started) * 1000
    sent.ended_wall = time.time()


async def _sample(load: Load, gateway: ServerProcess | None, judge_port: int) -> None:
    if gateway is None:
        return
    started = time.monotonic()
    async with aiohttp.ClientSession() as session:
        while True:
            try:
                async with session.get(f"{gateway.url}/metrics") as response:
                    text = await response.text()
                values = {name: float(value) for name, value in _SAMPLE.findall(text)}
                load.backlog.append(
                    (
                        round(time.monotonic() - started, 2),
                        values.get("bias_scoring_queue_depth", 0.0),
                        values.get("bias_scorings_in_flight", 0.0),
                    )
                )
                load.peak_judge_connections = max(
                    load.peak_judge_connections, _connections_to(gateway, judge_port)
                )
            except (aiohttp.ClientError, psutil.Error):
                pass
            await asyncio.sleep(0.5)


def _connections_to(server: ServerProcess, port: int) -> int:
    total = 0
    for process in server._tree():
        with contextlib.suppress(psutil.Error):
            total += sum(
                1
                for conn in process.net_connections(kind="tcp")
                if conn.raddr and conn.raddr.port == port and conn.status == "ESTABLISHED"
            )
    return total
