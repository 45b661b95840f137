"""Taking durable work from the store and keeping the leases on it (`gateway.work.payload`).

A `Claimer` runs beside a `Scoring` in every process that scores:

- the heartbeat renews, every third of `queue.lease_seconds`, each lease the
  process holds: its queued and running work and its streams in flight, in one
  statement, so a lease lapses only when its holder stopped;
- the puller (with `pull=True`) claims work into the scoring queue as there is
  room for it: new work (`queue.scorer: external`), and work whose holder died.
  On PostgreSQL new work wakes it at once (LISTEN/NOTIFY); work whose lease
  lapsed, which nothing announces, is looked for every `idle_wait` seconds;
- every `idle_wait` seconds (at least one) the puller also ends for good what
  lapsed too often (`attempts_exhausted`) or has nothing to score (`gateway_lost`);
  not for `lease_seconds` after the store last failed, though, since no lease could
  be renewed meanwhile.

A store that fails is logged and tried again a second later: scoring waits, the
work stays in the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Protocol

import structlog

from gateway.config import Settings
from gateway.observability.metrics import Metrics
from gateway.store import ScoreRecord, Store

__all__ = ["Claimer", "WorkTaker", "give_back"]


class WorkTaker(Protocol):
    """What the claimer hands claimed work to (`gateway.scoring.service.Scoring`)."""

    @property
    def worker(self) -> str:
        """The name this process holds its leases under."""
        ...

    def room(self) -> int:
        """How many more jobs it can take now."""
        ...

    async def wait_for_room(self) -> None:
        """Return once `room()` is above zero."""
        ...

    async def take(self, record: ScoreRecord) -> bool:
        """Queue a claimed record's work; False when there is no room for it after all."""
        ...


log = structlog.get_logger("gateway.claims")

_BATCH = 64  # most work one claim takes
_EXPIRE_EVERY = 1.0  # at least this many seconds between sweeps for work lapsed for good
_RETRY = 1.0  # seconds to wait after the store failed
# Seconds between counts of the pending work for `bias_work_pending`: a count walks
# every pending record, too slow to run on every sweep (bench/scaleout.py).
_COUNT_EVERY = 15.0


class Claimer:
    def __init__(
        self,
        store: Store,
        scoring: WorkTaker,
        settings: Settings,
        *,
        metrics: Metrics,
        pull: bool,
        idle_wait: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        queue = settings.queue
        self.store = store
        self.scoring = scoring
        self.settings = settings
        self.metrics = metrics
        self.pull = pull
        self.lease_seconds = queue.lease_seconds
        self.max_attempts = queue.max_attempts
        # Lapsed leases are noticed within this; new work on PostgreSQL at once.
        self.idle_wait = idle_wait if idle_wait is not None else min(queue.lease_seconds / 3, 5.0)
        self.claimed = 0
        self._clock = clock  # when sweeps are due (a test's own, to skip the wait)
        self._tasks: list[asyncio.Task[None]] = []
        self._next_expire = 0.0
        self._next_count = 0.0

    def start(self) -> None:
        self._tasks.append(asyncio.create_task(self._heartbeat(), name="bias-work-heartbeat"))
        if self.pull:
            self._tasks.append(asyncio.create_task(self._pull(), name="bias-work-puller"))

    async def stop(self) -> None:
        """Stop claiming and renewing (`Scoring.drain` then gives the leases back)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                await self.store.renew(self.scoring.worker, lease_seconds=self.lease_seconds)
            except Exception:
                log.exception("could not renew the leases on scoring work")
                self._hold_sweeps()

    async def _pull(self) -> None:
        with contextlib.suppress(Exception):  # without LISTEN it polls every idle_wait
            await self.store.listen()
        while True:
            try:
                await self.pull_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("could not claim scoring work")
                self._hold_sweeps()
                await asyncio.sleep(_RETRY)

    def _hold_sweeps(self) -> None:
        """The store failed: while it does, no holder can renew, so a lease that lapses
        then says nothing of its holder (a live gateway's stream, whose work waits in
        its writer's buffer). End nothing as lapsed until a whole lease has passed
        since the last failure: a holder alive has renewed by then."""
        self._next_expire = max(self._next_expire, self._clock() + self.lease_seconds)

    async def pull_once(self) -> int:
        """One round: sweep if due, wait for room, claim what fits, or wait for work."""
        await self._expire_if_due()
        await self.scoring.wait_for_room()
        limit = min(self.scoring.room(), _BATCH)
        records = await self.store.claim(
            self.scoring.worker,
            limit=limit,
            lease_seconds=self.lease_seconds,
            max_attempts=self.max_attempts,
        )
        # Requests may have filled the queue while the claim ran: what finds no room
        # goes back at once, or this process would renew leases on work it does not hold.
        refused = [record.run_id for record in records if not await self.scoring.take(record)]
        if refused:
            await self.store.release(self.scoring.worker, refused)
        if records:
            self.claimed += len(records)
            self.metrics.work_claimed.inc(len(records))
        if len(records) < limit:
            await self.store.wait_for_work(self.idle_wait)
        return len(records)

    async def _expire_if_due(self) -> None:
        now = self._clock()
        if now < self._next_expire:
            return
        self._next_expire = now + max(self.idle_wait, _EXPIRE_EVERY)
        ended = await self.store.expire(max_attempts=self.max_attempts)
        for run_id, reason in ended:
            self.metrics.work_expired.labels(reason).inc()
            log.warning("scoring work ended unscored", run_id=run_id, reason=reason)
        if now >= self._next_count:
            self._next_count = now + _COUNT_EVERY
            self.metrics.work_pending.set(await self.store.pending_work())


async def give_back(store: Store, worker: str, *, left_pending: int) -> None:
    """At shutdown: unfinished monitor work stays pending in the store and its leases go
    back, so the next start (or another process) scores it without waiting for them to
    lapse. `left_pending` counts the jobs this process left unfinished, for the log."""
    try:
        await store.flush()  # a pending write still queued must land before its release
        released = await store.release(worker)
    except Exception:  # the leases then lapse on their own: lateness, not loss
        log.exception("could not give back the leases of unfinished scorings")
        return
    if left_pending or released:
        log.warning(
            "scorings left pending at shutdown; they are scored after a restart",
            left_pending=left_pending,
            leases_released=released,
        )
