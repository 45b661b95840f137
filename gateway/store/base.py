"""The one interface both score store engines keep."""

from __future__ import annotations

from typing import Any, Protocol

from gateway.store.outage import Backlog
from gateway.store.probes import ProbePair, ProbeQuery
from gateway.store.queries import ScoreQuery, StatsGroup, StatsQuery
from gateway.store.records import CacheEntry, ScoreRecord
from gateway.store.whatif import WhatIf, WhatIfQuery

__all__ = ["Store"]


class Store(Protocol):
    """Score records and cache entries, written off the request path.

    `submit` and `put_cache` return at once, from any thread; a single writer
    commits in submission order, so a run's `pending` record never overtakes its
    final one. `get` flushes first, so it sees everything submitted before it.
    """

    engine: str  # "sqlite" or "postgresql", for telling people
    # Gateways and scorers on any host share it, the score cache included (PostgreSQL).
    shared: bool
    # New work is announced to every listener (`listen`, `wait_for_work`); without it a
    # waiting scorer only hears of work when it next looks.
    notifies: bool

    def describe(self) -> str:
        """Where the store is, safe to log (no password)."""
        ...

    async def open(self, *, sweep_pending: bool = True) -> None: ...

    def submit(self, record: ScoreRecord) -> None: ...

    def keep_cache(self, limit: int) -> None: ...

    def put_cache(self, entry: CacheEntry) -> None: ...

    async def cached(self, limit: int) -> list[CacheEntry]: ...

    async def cache_get(self, key: str) -> str | None: ...

    async def flush(self) -> None: ...

    async def get(self, run_id: str) -> ScoreRecord | None: ...

    async def status_counts(self) -> dict[str, int]: ...

    async def search(self, query: ScoreQuery) -> list[ScoreRecord]:
        """Up to `query.limit + 1` records matching `query`, newest first."""
        ...

    async def stats(self, query: StatsQuery) -> list[StatsGroup]: ...

    async def whatif(self, query: WhatIfQuery) -> WhatIf:
        """What `query`'s thresholds would have done to its window (`gateway.store.whatif`)."""
        ...

    async def prune(self, before: float, *, batch: int) -> int:
        """Delete up to `batch` final records, up to `batch` cache entries and up to
        `batch` reviews made before `before`; returns how many went."""
        ...

    async def query(self, *statements: tuple[str, list[object]]) -> list[list[Any]]:
        """After a flush, each read statement's rows (`gateway.store.reviews`)."""
        ...

    async def insert(self, sql: str, values: list[object]) -> list[Any]:
        """One write, committed at once, in a transaction of its own; its RETURNING rows."""
        ...

    async def add_probe_pairs(self, pairs: list[ProbePair]) -> None:
        """Store a live probe's pairs (`gateway.store.probes`) at once, not queued."""
        ...

    async def probe_pairs(self, query: ProbeQuery) -> list[ProbePair]:
        """The pairs of `query`'s window, oldest first (at most the newest `MAX_PAIRS`)."""
        ...

    async def ping(self) -> None: ...

    def backlog(self) -> Backlog:
        """What the writer holds and could not store (`gateway.store.outage`)."""
        ...

    # Durable scoring work (`gateway.work.payload`): pending records that carry `work`.

    async def claim(
        self, worker: str, *, limit: int, lease_seconds: float, max_attempts: int
    ) -> list[ScoreRecord]:
        """Lease up to `limit` records of unclaimed (or lapsed) work, oldest first."""
        ...

    async def renew(self, worker: str, *, lease_seconds: float) -> int:
        """Extend every lease `worker` holds; returns how many."""
        ...

    async def release(self, worker: str, run_ids: list[str] | None = None) -> int:
        """Give back `worker`'s leases on work (all, or those of `run_ids`), the attempt
        unspent; returns how many."""
        ...

    async def expire(self, *, max_attempts: int) -> list[tuple[str, str]]:
        """End what lapsed for good, as (run_id, reason): work leased `max_attempts`
        times (`attempts_exhausted`), a workless pending record (`gateway_lost`)."""
        ...

    async def pending_work(self) -> int: ...

    async def listen(self) -> None:
        """Start hearing about new work (PostgreSQL: LISTEN); SQLite: nothing."""
        ...

    async def wait_for_work(self, timeout: float) -> None:
        """Return when new work is announced, or after `timeout` seconds."""
        ...

    async def close(self) -> None: ...
