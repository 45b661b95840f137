"""Retention: final records and cache entries older than `store.retention_days` are pruned.

In the background, in bounded batches with a pause between them, so neither
the store's writer nor the database's other users wait long. Pending records
are never pruned. Several gateways on one PostgreSQL prune side by side; they
only share the work.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import structlog

from gateway.observability.metrics import Metrics
from gateway.store import Store, StoreError

__all__ = ["Retention"]

log = structlog.get_logger("gateway.retention")

DAY = 86_400.0


class Retention:
    def __init__(
        self,
        store: Store,
        days: float,
        *,
        metrics: Metrics | None = None,
        interval: float = 3600.0,
        batch: int = 1000,
        pause: float = 0.05,
    ) -> None:
        if days <= 0:
            raise ValueError("retention_days of 0 keeps everything: build no Retention")
        self.store = store
        self.days = days
        self.metrics = metrics
        self.interval = interval
        self.batch = batch
        self.pause = pause
        self._task: asyncio.Task[None] | None = None

    async def prune_once(self, now: float | None = None) -> int:
        """Prune everything older than the cut-off, batch by batch; returns the count."""
        before = (time.time() if now is None else now) - self.days * DAY
        total = 0
        while True:
            deleted = await self.store.prune(before, batch=self.batch)
            total += deleted
            if self.metrics is not None and deleted:
                self.metrics.pruned.inc(deleted)
            if deleted < self.batch:
                break
            await asyncio.sleep(self.pause)
        if total:
            log.info("pruned old score records", deleted=total, older_than_days=self.days)
        return total

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="bias-retention")

    async def _loop(self) -> None:
        while True:
            try:
                await self.prune_once()
            except (StoreError, OSError) as exc:
                log.warning("pruning old score records failed; will try again", error=str(exc))
            except Exception:  # never let retention take the gateway down
                log.exception("pruning old score records failed")
            await asyncio.sleep(self.interval)

    async def stop(self) -> None:
        if self._task is not None:
            task, self._task = self._task, None
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
