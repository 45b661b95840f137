"""Timing the cases: through the store's own calls, the page they build, and HTTP."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from bench.harness.report import percentile
from bench.store.queries.cases import SLOW_MS, Case, Plan, case_sql
from bench.store.queries.records import log
from gateway.store.base import Store
from gateway.store.dialect import Dialect
from gateway.store.queries import ScoreQuery


@dataclass
class Timing:
    case: str
    times_ms: list[float]
    rows: int
    plans: list[Plan] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def p95(self) -> float:
        return percentile(self.times_ms, 0.95) or 0.0


@dataclass(frozen=True)
class Settings:
    records: int
    runs: int = 20
    warmups: int = 2
    budget: float = 12.0  # seconds of timed calls a case may take before it stops early
    engines: tuple[str, ...] = ("sqlite", "postgresql")
    http: bool = True
    suggest: bool = True


async def time_calls(
    call: Callable[[], Awaitable[int]], settings: Settings
) -> tuple[list[float], int]:
    rows = 0
    for i in range(settings.warmups):
        started = time.perf_counter()
        rows = await call()
        if i == 0 and time.perf_counter() - started > settings.budget / 6:
            break  # a slow case: one warm-up is enough
    times: list[float] = []
    spent = 0.0
    while len(times) < settings.runs and (len(times) < 3 or spent < settings.budget):
        started = time.perf_counter()
        rows = await call()
        elapsed = time.perf_counter() - started
        spent += elapsed
        times.append(elapsed * 1000)
    return times, rows


async def run_cases(
    store: Store,
    case_list: list[Case],
    settings: Settings,
    explain: Callable[[str, str, list[object], bool], Awaitable[Plan]],
    dialect: Dialect,
    used: Callable[[str], Awaitable[tuple[int, int]]] | None = None,
) -> list[Timing]:
    timings = []
    for case in case_list:
        query = case.search
        if case.pages_in and query is not None:
            for _ in range(case.pages_in):
                page = await store.search(query)
                last = page[query.limit - 1]
                query = replace(query, cursor=(last.created_at, last.run_id))

        async def call(query: ScoreQuery | None = query, case: Case = case) -> int:
            if case.stats is not None:
                return len(await store.stats(case.stats))
            if case.whatif is not None:
                return (await store.whatif(case.whatif)).total.records
            if query is None:
                raise ValueError(f"case {case.name!r} names no search, stats or what-if query")
            return len(await store.search(query))

        statements = case_sql(case, query, dialect)
        before = {sql: await used(sql) for _, sql, _ in statements} if used else {}
        times, rows = await time_calls(call, settings)
        timing = Timing(case.name, times, rows)
        slow = timing.median > SLOW_MS
        for label, sql, values in statements:
            plan = await explain(label, sql, values, slow)
            if used is not None:
                (custom, generic), (custom_before, generic_before) = await used(sql), before[sql]
                plan.used = f"{custom - custom_before} custom / {generic - generic_before} generic"
            timing.plans.append(plan)
        timings.append(timing)
        flag = " FULL SCAN" if any(plan.full_scan for plan in timing.plans) else ""
        log(
            f"  {case.name}: median {timing.median:.1f} ms, p95 {timing.p95:.1f} ms,"
            f" {len(times)} runs, {rows} rows{flag}"
        )
    return timings


async def time_page_building(store: Any, settings: Settings) -> list[Timing]:
    """What `GET /v1/bias/scores` does besides the query, in this process: each record's
    `public()` (a `dataclasses.asdict`) and the JSON body."""
    from starlette.responses import JSONResponse

    page = (await store.search(ScoreQuery()))[:50]

    async def public() -> int:
        return len([record.public() for record in page])

    async def body() -> int:
        data = [record.public() for record in page]
        return len(JSONResponse({"object": "list", "data": data}).body)

    timings = []
    for name, call in (
        ("50 x record.public() (no query, no HTTP)", public),
        ("50 x record.public() + JSONResponse body", body),
    ):
        times, rows = await time_calls(call, settings)
        timings.append(Timing(name, times, rows))
    return timings


HTTP_CASES = (
    ("GET /v1/bias/scores?limit=50", "/v1/bias/scores", {"limit": "50"}, "data"),
    ("GET /v1/bias/stats?group_by=verdict", "/v1/bias/stats", {"group_by": "verdict"}, "groups"),
)


async def time_http(url: str, settings: Settings) -> list[Timing]:
    import httpx

    timings = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        for name, path, params, key in HTTP_CASES:

            async def call(path: str = path, params: Any = params, key: str = key) -> int:
                answer = await client.get(path, params=params)
                answer.raise_for_status()
                return len(answer.json()[key])

            times, rows = await time_calls(call, settings)
            timings.append(Timing(name, times, rows))
            log(f"  {name}: median {statistics.median(times):.1f} ms, {rows} rows")
    return timings


@contextlib.contextmanager
def gateway_app(store_settings: dict[str, Any]) -> Iterator[str]:
    """The gateway app on the store, under uvicorn in a thread; yields its URL. Retention
    off and no sweep at start, so that it changes nothing; an external scorer queue,
    so that it claims nothing."""
    from gateway.config import Settings as GatewaySettings
    from gateway.server.app import create_app
    from testkit.servers import ServerThread

    settings = GatewaySettings.model_validate(
        {"store": {**store_settings, "retention_days": 0}, "queue": {"scorer": "external"}}
    )
    server = ServerThread(create_app(settings, sweep_pending=False), lifespan="on").start()
    try:
        yield server.url
    finally:
        server.stop()
