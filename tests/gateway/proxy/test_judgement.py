"""`StreamJudgement` alone: fed a chat stream's bytes, judged in windows through the
scoring service (a judge that notes each call's lane and key), asking its request
only what `Verdicts` offers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.config import Policy
from gateway.proxy.judgement import StreamJudgement, Verdicts
from gateway.proxy.surfaces import ChatCompletions
from gateway.proxy.tap import StreamTap
from gateway.scoring.outcome import Outcome
from gateway.scoring.request import ScoreRequest
from gateway.scoring.service import Scoring
from gateway.scoring.window_judge import WindowJudge
from guard.limits import Lane
from guard.testing import scripted_bias_judge
from testkit.waiting import eventually
from tests.support.lane_judge import LaneJudge, scoring_for

CONFIG: dict[str, Any] = {
    "keys": [{"key": "sk-strict", "name": "strict", "policy": "default", "weight": 3}],
    "policies": {
        "default": {
            "mode": "enforce",
            "stream_policy": "windowed",
            "window_chars": 100,
            "context_chars": 40,
        }
    },
    "judge": {"reason": "off"},
}
SENTENCES = [f" I think topic {n:02d} matters to every team." for n in range(8)]


def chunk(content: str) -> bytes:
    delta = {"index": 0, "delta": {"content": content}, "finish_reason": None}
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": [delta]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"


@dataclass
class Request:
    """A `Verdicts` that concludes through the scoring service, and notes what it was asked."""

    scoring: Scoring
    job: ScoreRequest
    concluded: list[tuple[bool, bool]] = field(default_factory=list)  # (windows?, partial)
    settled: list[bool] = field(default_factory=list)

    @property
    def policy(self) -> Policy:
        return self.job.policy

    def window_judge(self) -> WindowJudge:
        return WindowJudge(self.scoring, self.job)

    async def conclude(
        self, tap: StreamTap, windows: WindowJudge | None, *, partial: bool
    ) -> Outcome:
        self.concluded.append((windows is not None, partial))
        if windows is None:
            return await self.scoring.score(self.job, tap.texts())
        return await windows.conclude(self.job, tap.texts())

    async def settle(self, tap: StreamTap, *, partial: bool) -> Outcome:
        self.settled.append(partial)
        return Outcome(self.job.run_id, "pending")


def judgement_of(scoring: Scoring, run_id: str) -> tuple[StreamJudgement, Request]:
    policy = scoring.settings.policies["default"]
    request = Request(scoring, ScoreRequest(run_id, policy, "enforce", key_name="strict"))
    verdicts: Verdicts = request
    tap = StreamTap(ChatCompletions().reader(max_chars=None))
    return StreamJudgement(verdicts, tap), request


async def test_a_long_answer_is_judged_window_by_window_in_enforces_lane(tmp_path: Path) -> None:
    lane_judge = LaneJudge()
    async with scoring_for(lane_judge, tmp_path, CONFIG) as scoring:
        judgement, request = judgement_of(scoring, "run-1")
        for sentence in SENTENCES:
            judgement.feed(chunk(sentence))
        judgement.feed(DONE)
        judgement.end()
        outcome = await judgement.outcome()

    assert request.concluded == [(True, False)]
    assert (outcome.status, outcome.verdict) == ("scored", "pass")
    assert len(outcome.windows or []) >= 2
    assert set(lane_judge.lanes()) == {(Lane.ENFORCE, "strict", 3.0)}
    # Every content event was released by a passed window; `[DONE]` is held for the trailer.
    assert judgement.released == len(judgement.frames) == len(SENTENCES)
    assert [event.data for event in judgement.held] == ["[DONE]"]


async def test_a_blocking_window_refuses_and_releases_none_of_its_events(tmp_path: Path) -> None:
    biased = scripted_bias_judge(opinions=["an opinion"], verdicts=[("yes", "a stereotype")])
    lane_judge = LaneJudge(biased)
    async with scoring_for(lane_judge, tmp_path, CONFIG) as scoring:
        judgement, request = judgement_of(scoring, "run-2")
        for sentence in SENTENCES:
            judgement.feed(chunk(sentence))
        await eventually(lambda: judgement.refused, "the first window to block")
        outcome = await judgement.outcome()

    assert judgement.released == 0
    assert (outcome.status, outcome.verdict) == ("scored", "block")
    assert request.concluded == [(True, False)]
    assert set(lane_judge.lanes()) == {(Lane.ENFORCE, "strict", 3.0)}


async def test_an_answer_shorter_than_a_window_is_judged_whole(tmp_path: Path) -> None:
    lane_judge = LaneJudge()
    async with scoring_for(lane_judge, tmp_path, CONFIG) as scoring:
        judgement, request = judgement_of(scoring, "run-3")
        judgement.feed(chunk(SENTENCES[0]))
        judgement.feed(DONE)
        judgement.end()
        outcome = await judgement.outcome()

    assert request.concluded == [(False, False)]
    assert outcome.status == "scored"
    assert outcome.windows is None
    assert set(lane_judge.lanes()) == {(Lane.ENFORCE, "strict", 3.0)}


async def test_a_client_gone_before_any_window_leaves_the_text_to_be_queued(
    tmp_path: Path,
) -> None:
    lane_judge = LaneJudge()
    async with scoring_for(lane_judge, tmp_path, CONFIG) as scoring:
        judgement, request = judgement_of(scoring, "run-4")
        judgement.feed(chunk(SENTENCES[0]))
        await judgement.abandon()

    assert request.settled == [True]
    assert request.concluded == []
    assert lane_judge.seen == []


async def test_a_tool_call_split_across_frames_holds_the_stream_from_its_first_event(
    tmp_path: Path,
) -> None:
    # The network cuts chunks anywhere: the event that begins the call arrives in two
    # chunks, neither of which holds the whole word `tool_calls`; it is the 4th frame.
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}
    delta = {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": [delta]}
    event = b"data: " + json.dumps(body).encode() + b"\n\n"
    cut = event.index(b"tool_calls") + 3
    async with scoring_for(LaneJudge(), tmp_path, CONFIG) as scoring:
        judgement, _ = judgement_of(scoring, "run-5")
        for sentence in SENTENCES[:3]:
            judgement.feed(chunk(sentence))
        judgement.feed(event[:cut])
        judgement.feed(event[cut:])
        assert judgement.tool_hold.at == 3  # held from that frame on
        for sentence in SENTENCES[3:]:
            judgement.feed(chunk(sentence))
        judgement.feed(DONE)
        judgement.end()
        outcome = await judgement.outcome()
    assert outcome.status == "scored"
    assert judgement.tool_hold.at == 3
    assert judgement.released <= 3  # nothing of the call went out before its judgement


def test_a_tap_cut_off_mid_event_keeps_the_text_it_read() -> None:
    # The upstream broke inside an event: that half event is dropped, not read as an
    # answer that cannot be parsed (which would skip the whole partial answer).
    half = chunk(" and then")[:25]
    for cut, readable in ((True, True), (False, False)):
        tap = StreamTap(ChatCompletions().reader(max_chars=None))
        tap.arrived()
        tap.feed(chunk(SENTENCES[0]) + half)
        tap.close(cut=cut)
        assert tap.readable is readable
        if readable:
            assert tap.texts() == [SENTENCES[0]]
