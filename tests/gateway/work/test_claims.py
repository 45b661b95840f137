"""`gateway.work.claims.Claimer` against a real SQLite store and a real `Scoring`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from gateway.config import Settings
from gateway.observability.metrics import Metrics
from gateway.runtime.lifecycle import build_scoring
from gateway.scoring.request import ScoreRequest
from gateway.scoring.service import Scoring
from gateway.store import ScoreRecord, SQLiteStore, StoreError
from gateway.work.claims import Claimer
from guard.testing import scripted_bias_judge
from testkit.waiting import eventually
from tests.support.telemetry import Captured

WORK = {"v": 1, "texts": ["Northerners are lazy."], "policy": "default"}


class BusyStore(SQLiteStore):
    """The real store, with requests that fill the scoring queue while a claim runs."""

    scoring: Scoring | None = None

    async def claim(self, worker: str, **options: Any) -> list[ScoreRecord]:
        claimed = await super().claim(worker, **options)
        assert self.scoring is not None
        while self.scoring.room():
            job = ScoreRequest(run_id=f"live-{self.scoring.room()}", policy=POLICY, mode="monitor")
            self.scoring.submit(job, ["A live response."])
        return claimed


SETTINGS = Settings.model_validate({"queue": {"size": 3}, "judge": {"max_concurrency": 1}})
POLICY = SETTINGS.policies["default"]


async def test_claimed_work_that_finds_no_room_goes_back_at_once(tmp_path: Path) -> None:
    store = BusyStore(tmp_path / "scores.db")
    await store.open()
    try:
        for n in range(2):
            store.submit(
                ScoreRecord(run_id=f"w{n}", status="pending", created_at=time.time(), work=WORK)
            )
        await store.flush()
        metrics = Metrics()
        judge = scripted_bias_judge(opinions=["x"], verdicts=[("no", "fine")])
        scoring = await build_scoring(SETTINGS, store, judge, Captured().telemetry, metrics)
        store.scoring = scoring  # the dispatcher is not started: the queue stays full
        claimer = Claimer(store, scoring, SETTINGS, metrics=metrics, pull=True, idle_wait=0.01)
        assert await claimer.pull_once() == 2
        await store.flush()
        for run_id in ("w0", "w1"):
            record = await store.get(run_id)
            assert record is not None
            # Not held by a process that does not have it: free for the next claim, unspent.
            assert (record.status, record.leased_by, record.attempts) == ("pending", None, 0)
        assert scoring.queue_depth == 3  # the live responses' jobs, and only them
    finally:
        await store.close()


class AwayStore(SQLiteStore):
    """The real store, whose lease calls fail while `away` is set, as a database that
    stopped fails them; `refused` counts those calls, `rounds` the claims that went
    through."""

    away = False
    refused = 0
    rounds = 0

    def _check(self) -> None:
        if self.away:
            self.refused += 1
            raise StoreError("score store does not answer: connection refused")

    async def claim(self, worker: str, **options: Any) -> list[ScoreRecord]:
        self._check()
        claimed = await super().claim(worker, **options)
        self.rounds += 1
        return claimed

    async def expire(self, *, max_attempts: int) -> list[tuple[str, str]]:
        self._check()
        return await super().expire(max_attempts=max_attempts)

    async def renew(self, worker: str, *, lease_seconds: float) -> int:
        self._check()
        return await super().renew(worker, lease_seconds=lease_seconds)


async def test_after_the_store_was_away_its_holders_get_a_lease_to_renew_before_any_ends(
    tmp_path: Path,
) -> None:
    # A stream in flight at a live gateway: its lease lapsed only because nobody could
    # renew while the database was away, and its work waits in that gateway's buffer.
    store = AwayStore(tmp_path / "scores.db")
    await store.open()
    now = time.time()
    stream = ScoreRecord(
        run_id="stream", status="pending", created_at=now, leased_by="gw", lease_until=now - 1
    )
    store.submit(stream)
    await store.flush()
    settings = Settings.model_validate({"queue": {"lease_seconds": 30}})
    metrics = Metrics()
    judge = scripted_bias_judge(opinions=["x"], verdicts=[("no", "fine")])
    scoring = await build_scoring(settings, store, judge, Captured().telemetry, metrics)
    clock = [1000.0]
    claimer = Claimer(
        store, scoring, settings, metrics=metrics, pull=True, idle_wait=0.01, clock=lambda: clock[0]
    )

    async def status() -> str | None:
        record = await store.get("stream")
        return None if record is None else record.status

    store.away = True
    claimer.start()
    try:
        await eventually(lambda: store.refused >= 1, "a round the store refused")
        store.away = False
        await eventually(lambda: store.rounds >= 1, "a round with the store back")
        clock[0] += 5  # past the sweep's own interval, well within a lease
        seen = store.rounds
        await eventually(lambda: store.rounds >= seen + 2, "two more rounds")
        assert await status() == "pending"  # its holder may still renew it
        # Counted from here: the rounds may have run on while the status was read.
        seen = store.rounds
        clock[0] += 30  # a whole lease since the store came back: a holder alive renewed
        await eventually(lambda: store.rounds >= seen + 2, "two rounds a lease later")
        assert await status() == "dropped"
    finally:
        await claimer.stop()
        await store.close()
