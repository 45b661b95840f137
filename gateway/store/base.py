"""The one interface both score store engines keep."""

from __future__ import annotations

from typing import Protocol

from gateway.store.records import CacheEntry, ScoreRecord

__all__ = ["Store"]


class Store(Protocol):
    """Score records and cache entries, written off the request path.

    `submit` and `put_cache` return at once; a single writer commits in
    submission order, so a run's `pending` record never overtakes its final
    one. `get` flushes first, so it sees everything submitted before it.
    """

    engine: str  # "sqlite" or "postgresql"

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

    async def prune(self, before: float, *, batch: int) -> int: ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...
