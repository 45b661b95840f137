"""The judge canary: when the judge's model, endpoint or prompt version changes, the
labelled records are judged again and the agreement with the reviewers compared.

At start and after each reload (`gateway.server.app`) the judge in force
(`JudgeIdentity`) is compared with the one the store last recorded (`gateway.store.state`).
If it differs, the process that records the change (one, of all the workers and
replicas that see it) judges again up to `review.canary_size` labelled records whose
text was kept, newest label first, one label per record (its newest), through
`Scoring.rejudge`: the explanation lane, behind every enforced and monitored answer.
It then compares the agreement of the labels with the verdicts stored (before) and
with the new judge's under the policy in force (after), on the same records, with the
arithmetic of `GET /v1/bias/reviews/agreement`. The report is kept in the store, read
by `GET /v1/bias/reviews/canary` (`gateway.api.canary`) and set in the metrics; a fall
in F1 or kappa by more than `review.canary_drop` is logged as a warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import structlog

from gateway.api.agreement import agreement
from gateway.config import Settings
from gateway.observability.metrics import Metrics
from gateway.scoring.request import ScoreRequest
from gateway.scoring.service import Scoring
from gateway.store import Store, StoreError
from gateway.store.records import json_text
from gateway.store.reviews import Reviewed, Reviews
from gateway.store.state import CANARY, JUDGE, State
from guard import BiasScorer

__all__ = ["CONCURRENCY", "JudgeCanary", "JudgeIdentity", "labelled"]

log = structlog.get_logger("gateway.canary")

CONCURRENCY = 8  # records judged again at once: the lane orders calls, this bounds them
_FIGURES = ("f1", "kappa")


@dataclasses.dataclass(frozen=True, slots=True)
class JudgeIdentity:
    """What makes a judge's verdicts another judge's: its model, where it is called, and
    the scorer's prompt version (any prompt, schema, category or language)."""

    model: str
    endpoint: str | None  # None: a provider litellm calls
    prompt_version: str

    @classmethod
    def of(cls, scorer: BiasScorer) -> JudgeIdentity:
        judge = scorer.judge
        return cls(judge.model, getattr(judge, "base_url", None), scorer.prompt_version)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def label(identity: dict[str, Any]) -> str:
    """A judge as a metric label: `model@endpoint#version` (the version's first 8)."""
    version = str(identity.get("prompt_version", ""))[:8]
    return f"{identity.get('model')}@{identity.get('endpoint') or 'litellm'}#{version}"


def labelled(reviewed: Sequence[Reviewed], limit: int) -> list[Reviewed]:
    """The canary's records: of each record whose text was kept, its newest label
    (`reviewed` is oldest first), newest first, up to `limit`."""
    newest = {item.review.run_id: item for item in reviewed if item.completion}
    ordered = sorted(newest.values(), key=lambda item: item.review.created_at, reverse=True)
    return ordered[:limit]


def _request(item: Reviewed, settings: Settings) -> ScoreRequest:
    """The record judged as its key's policy in force says."""
    key = next((k for k in settings.all_keys() if k.name == item.review.key_name), None)
    name, policy = settings.policy_for(key)
    return ScoreRequest(
        run_id=item.review.run_id,
        policy=policy,
        policy_name=name,
        mode="monitor",
        key_name=item.review.key_name,
    )


def _drop(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float | None]:
    drops: dict[str, float | None] = {}
    for figure in _FIGURES:
        old, new = before["judge"][figure], after["judge"][figure]
        drops[figure] = None if old is None or new is None else round(old - new, 4)
    return drops


class JudgeCanary:
    """Checks each judge change against the labels; one per process."""

    def __init__(self, store: Store, metrics: Metrics) -> None:
        self.state = State(store)
        self.reviews = Reviews(store)
        self.metrics = metrics
        self._task: asyncio.Task[None] | None = None

    async def start(self, scoring: Scoring) -> None:
        """Show the last canary's figures, then check the judge in force (`check`)."""
        try:
            report = await self.state.get(CANARY)
        except StoreError as exc:  # the store away at start: the check below tries again
            log.warning("the last judge canary could not be read", error=str(exc))
            report = None
        if report is not None and report.get("status") == "finished":
            self.observe(report)
        self.check(scoring)

    def check(self, scoring: Scoring) -> None:
        """Compare the judge in force with the one recorded, in a task of its own; a
        check under way gives way to it (the judge it checked is no longer in force)."""
        self.metrics.canary_drop_limit.set(scoring.settings.review.canary_drop)
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = asyncio.create_task(self._check(scoring, scoring.settings))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _check(self, scoring: Scoring, settings: Settings) -> None:
        try:
            after = JudgeIdentity.of(scoring.scorer).to_json()
            before = await self.state.get(JUDGE)
            if before == after or not await self.state.swap(JUDGE, before, after):
                return  # the same judge, or another process has taken this change
            if before is None:
                log.info("judge recorded; a later change is checked against the labels")
                return
            if settings.review.canary_size:
                try:
                    await self.run(scoring, settings, before=before, after=after)
                except asyncio.CancelledError:
                    await self._abandon(before, after)
                    raise
        except asyncio.CancelledError:
            raise
        except Exception:  # the store away, or a bug: the gateway serves on
            log.exception("the judge canary failed")

    async def _abandon(self, before: dict[str, Any], after: dict[str, Any]) -> None:
        """A check stopped before it ended (the process stopping, or a newer judge): the
        judge checked is recorded as unseen, so that a start with it checks it again,
        unless another change was recorded meanwhile; its report says it was cancelled."""
        with contextlib.suppress(Exception):  # the store away: the check is lost, not the stop
            if await self.state.swap(JUDGE, after, before):
                report = await self.state.get(CANARY)
                if report is not None and report.get("judge", {}).get("after") == after:
                    await self.state.put(CANARY, {**report, "status": "cancelled"})
        log.info("judge canary stopped before it ended", judge=label(after))

    async def run(
        self,
        scoring: Scoring,
        settings: Settings,
        *,
        before: dict[str, Any],
        after: dict[str, Any],
    ) -> dict[str, Any]:
        """Judge the labelled records again and keep the report (see the module)."""
        started = time.time()
        reviewed = await self.reviews.reviewed(since=0.0, until=started, key=None, texts=True)
        records = labelled(reviewed, settings.review.canary_size)
        report: dict[str, Any] = {
            "object": "bias.canary",
            "status": "running",
            "judge": {"before": before, "after": after},
            "started_at": started,
            "finished_at": None,
            "labelled": len(records),
            "canary_drop": settings.review.canary_drop,
        }
        await self.state.put(CANARY, report)
        log.info("judge changed; judging labelled records again", records=len(records))
        if not records:
            log.warning(
                "no labelled record with its text kept: the new judge is not checked"
                " (label records, with store.capture_content true or review)"
            )
        again = await self._rejudge(scoring, settings, records)
        judged = [pair for pair in zip(records, again, strict=True) if pair[1] is not None]
        scale, precision = settings.judge.scale, 0.9
        old = agreement(
            [item for item, _ in judged], scale=scale, precision=precision, category=None
        )
        new = agreement(
            [fresh for _, fresh in judged if fresh is not None],
            scale=scale,
            precision=precision,
            category=None,
        )
        drop = _drop(old, new)
        limit = settings.review.canary_drop
        exceeded = any(value is not None and value > limit for value in drop.values())
        report.update(
            status="finished",
            finished_at=time.time(),
            rejudged=len(judged),
            errors=len(records) - len(judged),
            before=old,
            after=new,
            drop=drop,
            exceeded=exceeded,
        )
        await self.state.put(CANARY, report)
        self.observe(report)
        figures = {
            f"{figure}_{when}": figures["judge"][figure]
            for figure in _FIGURES
            for when, figures in (("before", old), ("after", new))
        }
        if exceeded:
            log.warning(
                "agreement with reviewers fell after the judge changed",
                judge_before=label(before),
                judge_after=label(after),
                records=len(judged),
                canary_drop=limit,
                **figures,
            )
        else:
            log.info("judge canary finished", records=len(judged), **figures)
        return report

    async def _rejudge(
        self, scoring: Scoring, settings: Settings, records: Sequence[Reviewed]
    ) -> list[Reviewed | None]:
        """Each record as the judge in force says of it; None where it failed."""
        slots = asyncio.Semaphore(CONCURRENCY)

        async def one(item: Reviewed) -> Reviewed | None:
            assert item.completion is not None  # `labelled` keeps only records with text
            async with slots:
                outcome = await scoring.rejudge(_request(item, settings), item.completion)
            if outcome.status != "scored" or outcome.result is None:
                return None
            result = item.result_json  # read where the reviewer labelled opinions only
            if result is not None:
                result = json_text(outcome.result.model_dump(by_alias=True, mode="json"))
            return dataclasses.replace(
                item, score=outcome.score, verdict=outcome.verdict, result_json=result
            )

        return list(await asyncio.gather(*(one(item) for item in records)))

    def observe(self, report: dict[str, Any]) -> None:
        """Set the canary's gauges from a finished report."""
        for gauge in (self.metrics.canary_f1, self.metrics.canary_kappa):
            gauge.clear()
        for when in ("before", "after"):
            judge = label(report["judge"][when])
            self.metrics.canary_f1.labels(judge).set(_number(report[when]["judge"]["f1"]))
            self.metrics.canary_kappa.labels(judge).set(_number(report[when]["judge"]["kappa"]))
        for figure, value in report["drop"].items():
            self.metrics.canary_drop.labels(figure).set(_number(value))
        self.metrics.canary_rejudged.set(report["rejudged"])


def _number(value: float | None) -> float:
    return float("nan") if value is None else float(value)
