"""Part 2: how scoring grows with scorer processes, on one PostgreSQL store."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import asyncpg

from bench.harness import client
from bench.harness.cpu import CpuWatch, tree_cpu
from bench.harness.procs import ServerProcess
from bench.harness.report import fmt
from bench.peers.runner import chat_body
from bench.store.scaleout.plan import CALLS_PER_SCORING, GAUGE, POLL, SAMPLE, note
from bench.store.scaleout.processes import (
    Context,
    fresh_database,
    start_gateway,
    start_judge,
    start_scorer,
)


@dataclass
class Watched:
    """What the store and the scorers showed while N items were scored."""

    launched: float  # wall time the scorers were started
    first_claim: float | None = None
    done: float | None = None
    samples: list[tuple[float, list[float]]] = field(default_factory=list)  # t, in flight each
    claimed: list[int] = field(default_factory=list)
    completions: list[float] = field(default_factory=list)  # updated_at of final records
    statuses: dict[str, int] = field(default_factory=dict)
    judge: dict[str, Any] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)


@dataclass
class ScoringCell:
    scorers: int
    round: int
    items: int
    watched: Watched

    def window(self) -> tuple[int, int]:
        """Indexes of the 10th and 90th percentile completions."""
        n = len(self.watched.completions)
        return n // 10, n - n // 10 - 1

    @property
    def steady_rate(self) -> float | None:
        """Scorings a second between the 10th and 90th percentile completions."""
        times = self.watched.completions
        lo, hi = self.window()
        if hi <= lo or times[hi] <= times[lo]:
            return None
        return (hi - lo) / (times[hi] - times[lo])

    @property
    def span(self) -> float | None:
        """First claim to last completion, in seconds."""
        w = self.watched
        if w.first_claim is None or not w.completions:
            return None
        return w.completions[-1] - w.first_claim

    @property
    def overall_rate(self) -> float | None:
        span = self.span
        return len(self.watched.completions) / span if span else None

    def mean_in_flight(self) -> list[float]:
        """Each scorer's mean scorings in flight over the 10-90 % window."""
        times = self.watched.completions
        lo, hi = self.window()
        if hi <= lo:
            return []
        inside = [each for t, each in self.watched.samples if times[lo] <= t <= times[hi]]
        if not inside:
            return []
        return [round(statistics.fmean(column), 1) for column in zip(*inside, strict=True)]


def _fill(ctx: Context, store_url: str, items: int, name: str) -> int:
    """Enqueue `items` monitored responses through a gateway on `store_url`, then stop it."""
    gateway = start_gateway(ctx, name, mode="monitor", store_url=store_url)
    try:
        url = f"{gateway.url}/v1/chat/completions"
        answered = client.run(
            lambda: client.fire(
                url, chat_body(False), concurrency=16, count=items, deadline=60, api_key="bench"
            )
        )
    finally:
        ctx.procs.stop(gateway)
    return answered


async def _metrics(session: aiohttp.ClientSession, server: ServerProcess) -> dict[str, float]:
    async with session.get(f"{server.url}/metrics") as response:
        text = await response.text()
    return {name: float(value) for name, value in GAUGE.findall(text)}


async def _poll_store(conn: Any, items: int, watched: Watched, deadline: float) -> None:
    """Until every item is final: note the first claim and the moment the last one ends."""
    query = (
        "SELECT COUNT(*) FILTER (WHERE status <> 'pending'),"
        " COUNT(*) FILTER (WHERE status = 'pending' AND leased_by IS NOT NULL) FROM scores"
    )
    final = 0
    while time.time() < deadline:
        final, leased = await conn.fetchrow(query)
        now = time.time()
        if watched.first_claim is None and (final or leased):
            watched.first_claim = now
        if final >= items:
            watched.done = now
            return
        await asyncio.sleep(POLL)
    raise RuntimeError(f"scoring did not finish in time: {final} of {items} final")


async def _sample_scorers(
    session: aiohttp.ClientSession, scorers: list[ServerProcess], watched: Watched
) -> None:
    while True:
        with contextlib.suppress(aiohttp.ClientError, OSError):
            seen = [await _metrics(session, scorer) for scorer in scorers]
            in_flight = [values.get("bias_scorings_in_flight", 0.0) for values in seen]
            watched.samples.append((time.time(), in_flight))
        await asyncio.sleep(SAMPLE)


async def _watch_scoring(
    ctx: Context, store_url: str, count: int, judge: ServerProcess, round_: int
) -> tuple[Watched, list[ServerProcess]]:
    """Start `count` scorers at once and watch the store until all items are final."""
    plan = ctx.plan
    expected = plan.concurrency * count / (CALLS_PER_SCORING * plan.judge_latency)
    deadline = time.time() + 60 + 4 * plan.items / expected
    watched = Watched(launched=time.time())
    conn = await asyncpg.connect(store_url)
    poller = asyncio.create_task(_poll_store(conn, plan.items, watched, deadline))
    try:
        scorers = await _start_scorers(ctx, store_url, count, judge, round_)
        watch = CpuWatch(
            {
                **{f"scorer {i + 1}": s.cpu_seconds for i, s in enumerate(scorers)},
                "judge": judge.cpu_seconds,
                "postgres": functools.partial(tree_cpu, ctx.cluster.postmaster_pid()),
            }
        )
        watch.start()
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            sampler = asyncio.create_task(_sample_scorers(session, scorers, watched))
            try:
                await poller
            except RuntimeError:
                for server in [*scorers, judge]:
                    note(f"the end of {server.name}'s log:\n{server.log_tail(25)}")
                raise
            finally:
                sampler.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sampler
            watched.cpu = watch.stop()
            for scorer in scorers:
                claimed = (await _metrics(session, scorer)).get("bias_work_claimed_total", 0)
                watched.claimed.append(int(claimed))
            async with session.get(f"{judge.url}/bench/stats") as response:
                watched.judge = await response.json()
        rows = await conn.fetch(
            "SELECT updated_at FROM scores WHERE status <> 'pending' ORDER BY updated_at"
        )
        watched.completions = [float(row[0]) for row in rows]
        counts = await conn.fetch("SELECT status, COUNT(*) FROM scores GROUP BY status")
        watched.statuses = {row[0]: int(row[1]) for row in counts}
    finally:
        poller.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poller
        await conn.close()
    return watched, scorers


async def _start_scorers(
    ctx: Context, store_url: str, count: int, judge: ServerProcess, round_: int
) -> list[ServerProcess]:
    """`count` scorer processes started side by side (each start waits for /readyz)."""
    loop = asyncio.get_running_loop()
    starts = [
        loop.run_in_executor(
            None,
            functools.partial(
                start_scorer,
                ctx,
                f"scorer-{count}x-r{round_}-{index}",
                store_url=store_url,
                judge=judge.url,
            ),
        )
        for index in range(count)
    ]
    return list(await asyncio.gather(*starts))


def _scoring_cell(ctx: Context, count: int, round_: int) -> ScoringCell:
    items = ctx.plan.items
    with fresh_database(ctx.cluster) as (database, store_url):
        answered = _fill(ctx, store_url, items, f"fill-{count}x-r{round_}")
        pending = int(
            ctx.cluster.psql(
                "SELECT COUNT(*) FROM scores WHERE status = 'pending' AND work IS NOT NULL",
                database=database,
            )
        )
        if answered != items or pending != items:
            raise RuntimeError(f"filling: {answered} answered, {pending} pending of {items}")
        judge = start_judge(ctx, f"judge-{count}x-r{round_}")
        scorers: list[ServerProcess] = []
        try:
            watched, scorers = client.run(
                lambda: _watch_scoring(ctx, store_url, count, judge, round_)
            )
        finally:
            for server in [*scorers, judge]:
                ctx.procs.stop(server)
    return ScoringCell(count, round_, items, watched)


def run_scoring(ctx: Context) -> list[ScoringCell]:
    cells = []
    for round_ in range(1, ctx.plan.rounds + 1):
        for count in (1, 2):
            ctx.quiet.wait()
            note(f"scoring, round {round_}: {count} scorer(s), {ctx.plan.items} items")
            cell = _scoring_cell(ctx, count, round_)
            note(
                f"  steady {fmt(cell.steady_rate, 2)} scorings/s, overall"
                f" {fmt(cell.overall_rate, 2)}, in flight {cell.mean_in_flight()},"
                f" claimed {cell.watched.claimed}"
            )
            cells.append(cell)
    return cells
