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
from gateway.store import ScoreRecord, SQLiteStore
from gateway.work.claims import Claimer
from guard.testing import scripted_bias_judge
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
