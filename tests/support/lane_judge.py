"""A judge that notes the lane and key of every call it is sent (`guard.limits.caller`),
in the order its limiter let them through, so tests see where each scoring's judge
calls went without timing anything.

Its answers are a `FunctionJudge`'s (`guard.testing`); its limiter is a real one
(`max_concurrency`). Closing `gate` holds every call that reaches the judge until
it opens again: with one slot, later calls queue in the limiter, by lane and key.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.config import Settings
from gateway.observability.metrics import Metrics
from gateway.runtime.lifecycle import scoring_runtime
from gateway.scoring.service import Scoring
from guard import BaseJudge, JudgeLimiter, JudgeReply, Message, StructuredMode
from guard.limits import Lane, caller
from guard.testing import FunctionJudge, scripted_bias_judge
from guard.wire import OutputSchema

__all__ = ["LaneJudge", "Seen", "scoring_for"]


@dataclass(frozen=True, slots=True)
class Seen:
    """One call as the judge saw it: its lane, key and weight, and the text it judged."""

    lane: Lane
    key: str
    weight: float
    text: str


class LaneJudge(BaseJudge):
    """A judge whose every call is noted in `seen`, in the order the limiter served them."""

    def __init__(
        self,
        answers: FunctionJudge | None = None,
        *,
        max_concurrency: int | None = None,
        model: str = "lane-judge",
    ) -> None:
        super().__init__(
            model,
            timeout=30,
            max_retries=0,
            structured=StructuredMode.JSON_SCHEMA,
            temperature=0.0,
            backoff=0.01,
            limiter=JudgeLimiter(max_concurrency=max_concurrency),
        )
        self.answers = answers or scripted_bias_judge(
            opinions=["an opinion"], verdicts=[("no", "A fair remark.")]
        )
        self.seen: list[Seen] = []
        self.gate = threading.Event()  # threads: a test may open it from outside the loop
        self.gate.set()

    def lanes(self, text: str | None = None) -> list[tuple[Lane, str, float]]:
        """(lane, key, weight) of each call seen, those judging `text` only if given."""
        return [
            (seen.lane, seen.key, seen.weight)
            for seen in self.seen
            if text is None or text in seen.text
        ]

    async def send_once(
        self, messages: Sequence[Message], response_format: dict[str, Any] | None
    ) -> JudgeReply:
        who = caller()
        self.seen.append(Seen(who.lane, who.key, who.weight, messages[-1]["content"]))
        if not self.gate.is_set():
            await asyncio.to_thread(self.gate.wait)
        schema = None
        if response_format is not None:
            spec = response_format.get("json_schema", {})
            schema = OutputSchema(spec.get("name", ""), spec.get("schema", {}))
        return await self.answers.complete(messages, schema=schema)


@contextlib.asynccontextmanager
async def scoring_for(
    judge: LaneJudge, path: Path, config: dict[str, Any]
) -> AsyncIterator[Scoring]:
    """The gateway's scoring service, started as the gateway starts it, asking `judge`;
    `config` is merged into settings whose store lives under `path`."""
    settings = Settings.model_validate(
        {
            "upstream": {"base_url": "http://127.0.0.1:9"},
            "store": {"path": str(path / "scores.db")},
            **config,
        }
    )
    async with scoring_runtime(
        settings, Metrics(), judge=judge, sweep_pending=False, pull=False
    ) as runtime:
        yield runtime.scoring
