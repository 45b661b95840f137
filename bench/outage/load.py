"""What `bench.outage.run` runs while it watches: the paced open-loop traffic, the samples of
each process's `/metrics` and `/readyz`, the polls of the database, and the CPU of the
server and of the rest of the machine.

Times are seconds of `time.monotonic()` since the run's start (`Clock`), so that
requests, samples and polls line up with the outage's own marks.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import asyncpg
import orjson

from bench.harness.cpu import tree_cpu
from bench.harness.procs import machine_busy_seconds
from gateway.domain import FINAL_STATUSES
from testkit.postgres import PgCluster

__all__ = [
    "KEYS",
    "QUIET_CORES",
    "Clock",
    "Poller",
    "Request",
    "Sample",
    "Sampler",
    "Traffic",
    "postgres_cpu",
    "wait_quiet",
]

KEYS = {"monitor": "sk-bench-monitor", "enforce": "sk-bench-enforce"}
QUIET_CORES = 0.5  # the load starts once the rest of the machine uses less than this ...
QUIET_WINDOW = 3.0  # ... over this many seconds (or after Plan.quiet_wait)
_DONE = b"data: [DONE]"
_METRIC = re.compile(
    r"^(bias_store_buffered_records|bias_store_records_dropped_total|bias_scorings_in_flight"
    r"|bias_work_claimed_total)(\{[^}]*\})? (\S+)$",
    re.MULTILINE,
)


class Clock:
    """Seconds since the run's start."""

    def __init__(self) -> None:
        self.zero = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.zero


@dataclass
class Request:
    """One request of the traffic and what came back."""

    index: int
    mode: str  # monitor | enforce: the key it was sent with
    stream: bool
    gateway: int
    sent: float  # Clock seconds
    late: float  # seconds behind its place in the schedule
    status: int | None = None
    run_id: str | None = None
    error: str | None = None  # what the client saw go wrong, if anything
    latency_ms: float | None = None


class Traffic:
    """One request every 1/`rate` s, each on a task of its own whatever the answers do,
    until `stop_at` (Clock seconds) is set and reached. Requests alternate monitor and
    enforce, whole and streamed, and the gateways, so that each of the eight
    combinations gets an eighth of the load."""

    def __init__(self, gateways: list[str], rate: float, clock: Clock) -> None:
        self.gateways = gateways
        self.rate = rate
        self.clock = clock
        self.requests: list[Request] = []
        self.stop_at: float | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Send until `stop_at`, then wait for every answer."""
        connector = aiohttp.TCPConnector(limit=0)
        timeout = aiohttp.ClientTimeout(total=120)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            began = self.clock.now()
            index = 0
            while True:
                due = began + index / self.rate
                now = self.clock.now()
                if self.stop_at is not None and max(now, due) >= self.stop_at:
                    break
                if due > now:
                    await asyncio.sleep(due - now)
                    if self.stop_at is not None and self.clock.now() >= self.stop_at:
                        break
                sent = self.clock.now()
                request = Request(
                    index=index,
                    mode=("monitor", "enforce")[index % 2],
                    stream=index // 2 % 2 == 1,
                    gateway=index // 4 % len(self.gateways),
                    sent=sent,
                    late=max(0.0, sent - due),
                )
                self.requests.append(request)
                task = asyncio.create_task(self._one(session, request))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                index += 1
            while self._tasks:
                await asyncio.gather(*list(self._tasks))

    async def _one(self, session: aiohttp.ClientSession, request: Request) -> None:
        body: dict[str, Any] = {
            "model": "m",
            "messages": [
                {"role": "user", "content": f"Tell me about engineers ({request.index})."}
            ],
        }
        if request.stream:
            body["stream"] = True
        url = f"{self.gateways[request.gateway]}/v1/chat/completions"
        headers = {"authorization": f"Bearer {KEYS[request.mode]}"}
        started = time.monotonic()
        try:
            async with session.post(url, json=body, headers=headers) as response:
                data = await response.read()
                request.status = response.status
                request.run_id = response.headers.get("x-bias-run-id")
                request.error = _problem(request, data)
        except TimeoutError:
            request.error = "timeout"
        except aiohttp.ClientError as exc:
            request.error = f"transport: {type(exc).__name__}"
        request.latency_ms = (time.monotonic() - started) * 1000


def _problem(request: Request, data: bytes) -> str | None:
    """What is wrong with an answer the client received, or None."""
    if request.status != 200:
        code = None
        with contextlib.suppress(orjson.JSONDecodeError, AttributeError, TypeError):
            code = orjson.loads(data).get("error", {}).get("code")
        return f"http {request.status}" + (f" {code}" if code else "")
    if request.run_id is None:
        return "200 without x-bias-run-id"
    if request.stream:
        return None if _DONE in data else "stream without [DONE]"
    try:
        content = orjson.loads(data)["choices"][0]["message"]["content"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        return "200 with an unreadable body"
    return None if content else "200 with an empty answer"


@dataclass
class Sample:
    """One scrape of a process: `/readyz`'s status and the metrics the report uses."""

    at: float
    ready: int | None  # None: no answer
    buffered: float | None = None
    dropped: dict[str, float] = field(default_factory=dict)
    in_flight: float | None = None
    claimed: float | None = None


class Sampler:
    """Scrapes `/metrics` and `/readyz` of every named process every `interval` s (a
    gateway's `/metrics` wants a client key once keys are configured)."""

    def __init__(self, processes: dict[str, str], clock: Clock, interval: float) -> None:
        self.processes = processes
        self.clock = clock
        self.interval = interval
        self.samples: dict[str, list[Sample]] = {name: [] for name in processes}

    async def run(self) -> None:
        timeout = aiohttp.ClientTimeout(total=max(self.interval, 2.0))
        headers = {"authorization": f"Bearer {KEYS['monitor']}"}
        async with aiohttp.ClientSession(timeout=timeout, headers=headers) as session:
            while True:
                began = self.clock.now()
                await asyncio.gather(
                    *(self._scrape(session, name, url) for name, url in self.processes.items())
                )
                await asyncio.sleep(max(0.0, began + self.interval - self.clock.now()))

    async def _scrape(self, session: aiohttp.ClientSession, name: str, url: str) -> None:
        sample = Sample(at=self.clock.now(), ready=None)
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            async with session.get(f"{url}/readyz") as response:
                await response.read()
                sample.ready = response.status
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            async with session.get(f"{url}/metrics") as response:
                text = await response.text() if response.status == 200 else ""
            for metric, labels, value in _METRIC.findall(text):
                number = float(value)
                if metric == "bias_store_buffered_records":
                    sample.buffered = number
                elif metric == "bias_store_records_dropped_total":
                    reason = re.search(r'reason="([^"]*)"', labels or "")
                    sample.dropped[reason.group(1) if reason else ""] = number
                elif metric == "bias_scorings_in_flight":
                    sample.in_flight = number
                else:
                    sample.claimed = number
        self.samples[name].append(sample)


@dataclass
class Poll:
    at: float
    rows: int
    pending: int


class Poller:
    """Reads every record's status from the database every `interval` s; keeps, for each
    run id, when it was first seen final, and the rows the last poll saw. A poll that
    finds the database away is skipped."""

    def __init__(self, url: str, clock: Clock, interval: float) -> None:
        self.url = url
        self.clock = clock
        self.interval = interval
        self.first_final: dict[str, float] = {}
        self.statuses: dict[str, str] = {}
        self.polls: list[Poll] = []
        self.failed = 0
        self._conn: Any = None
        self._polled = asyncio.Event()

    async def run(self) -> None:
        try:
            while True:
                began = self.clock.now()
                await self.poll()
                await asyncio.sleep(max(0.0, began + self.interval - self.clock.now()))
        finally:
            await self.close()

    async def poll(self) -> bool:
        try:
            if self._conn is None:
                self._conn = await asyncpg.connect(self.url, timeout=2)
            rows = await self._conn.fetch("SELECT run_id, status FROM scores", timeout=5)
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
            self.failed += 1
            await self.close()
            return False
        at = self.clock.now()
        statuses = {row["run_id"]: row["status"] for row in rows}
        for run_id, status in statuses.items():
            if status in FINAL_STATUSES and run_id not in self.first_final:
                self.first_final[run_id] = at
        self.statuses = statuses
        pending = sum(1 for status in statuses.values() if status == "pending")
        self.polls.append(Poll(at, len(statuses), pending))
        self._polled.set()
        return True

    async def rows_per_run_id(self) -> dict[str, int]:
        """Run ids with more than one row (none, while run_id is the table's key)."""
        conn = await asyncpg.connect(self.url, timeout=5)
        try:
            found = await conn.fetch(
                "SELECT run_id, COUNT(*) AS n FROM scores GROUP BY run_id HAVING COUNT(*) > 1"
            )
        finally:
            await conn.close()
        return {row["run_id"]: row["n"] for row in found}

    async def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # a connection the server already cut
                await self._conn.close(timeout=2)
            self._conn = None

    def all_final(self, run_ids: list[str]) -> bool:
        return all(run_id in self.first_final for run_id in run_ids)

    async def settle(self, run_ids: list[str], timeout: float) -> bool:
        """Wait (with `run()` polling) until every one of `run_ids` is final; False if
        `timeout` s pass first."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, timeout)):
                while not self.all_final(run_ids):
                    self._polled.clear()
                    await self._polled.wait()
        return self.all_final(run_ids)


def postgres_cpu(cluster: PgCluster) -> float:
    """CPU seconds of the running server and the backends it has reaped; 0 while it is
    down (a phase's marks are both taken with the server up, or both with it down)."""
    try:
        return tree_cpu(cluster.postmaster_pid())
    except (OSError, ValueError):
        return 0.0


def wait_quiet(longest: float) -> tuple[float, float]:
    """Wait (up to `longest` s) until the machine's busy CPU, which is other sessions' once
    our processes idle, is below `QUIET_CORES` over a few seconds: (waited s, cores)."""
    began = time.monotonic()
    while True:
        before = machine_busy_seconds()
        time.sleep(QUIET_WINDOW)
        cores = (machine_busy_seconds() - before) / QUIET_WINDOW
        if cores < QUIET_CORES or time.monotonic() - began >= longest:
            return time.monotonic() - began, cores
