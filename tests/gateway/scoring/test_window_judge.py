"""`WindowJudge`: an enforced answer's windows judged through the scoring service, in
enforce's lane for the request's key, and concluded into one recorded outcome."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from gateway.scoring.request import ScoreRequest
from gateway.scoring.service import Scoring
from gateway.scoring.window_judge import WindowJudge
from gateway.scoring.windows import Window, WindowPart
from guard import JudgeUnavailable
from guard.limits import Lane
from guard.testing import FunctionJudge, scripted_bias_judge
from tests.support.lane_judge import LaneJudge, scoring_for

KEYS: dict[str, Any] = {
    "keys": [{"key": "sk-strict", "name": "strict", "policy": "default", "weight": 3}],
    "policies": {"default": {"mode": "enforce", "stream_policy": "windowed"}},
}
FIRST = "I think bridges carry loads across rivers."
SECOND = "I think towers stand on deep foundations."


def window(number: int, start: int, text: str, context: str = "") -> Window:
    part = WindowPart(0, start, start + len(text), text, context)
    return Window(number, start, start + len(text), number + 1, (part,))


def request_of(scoring: Scoring, run_id: str, key_name: str | None = "strict") -> ScoreRequest:
    policy = scoring.settings.policies["default"]
    return ScoreRequest(run_id, policy, "enforce", key_name=key_name, stream=True)


async def judged(scoring: Scoring, request: ScoreRequest, *texts: str) -> WindowJudge:
    """`texts` judged one window each, in order, and merged."""
    judge = WindowJudge(scoring, request)
    start = 0
    for number, text in enumerate(texts):
        shown = window(number, start, text, context=" ".join(texts[:number]))
        results, ms = await judge.judge(shown)
        judge.add(shown, results, ms)
        start += len(text) + 1
    return judge


@pytest.mark.parametrize(("key_name", "weight"), [("strict", 3.0), (None, 1.0)])
async def test_every_window_call_goes_in_enforces_lane_with_the_key_and_its_weight(
    tmp_path: Path, key_name: str | None, weight: float
) -> None:
    lane_judge = LaneJudge()
    config = {**KEYS, "judge": {"reason": "inline", "reason_for": "all"}}
    async with scoring_for(lane_judge, tmp_path, config) as scoring:
        request = request_of(scoring, "run-1", key_name)
        judge = await judged(scoring, request, FIRST, SECOND)
        outcome = await judge.conclude(request, [f"{FIRST} {SECOND}"])

    # Faithful pipeline: extract, then judge, for each window; then the explanation the
    # response waits for (`reason: inline`), still in enforce's lane.
    assert lane_judge.lanes() == [(Lane.ENFORCE, key_name or "", weight)] * 5
    assert (outcome.status, outcome.verdict, outcome.reason_status) == ("scored", "pass", "done")
    assert [entry["end"] for entry in outcome.windows or []] == [
        len(FIRST),
        len(FIRST) + 1 + len(SECOND),
    ]


async def test_a_deferred_explanation_of_windows_goes_in_the_last_lane(tmp_path: Path) -> None:
    lane_judge = LaneJudge()
    config = {**KEYS, "judge": {"reason": "deferred", "reason_for": "all"}}
    async with scoring_for(lane_judge, tmp_path, config) as scoring:
        request = request_of(scoring, "run-2")
        judge = await judged(scoring, request, FIRST)
        outcome = await judge.conclude(request, [FIRST])
        assert outcome.reason_status == "pending"
        await asyncio.wait(scoring.reasons.tasks)
        await scoring.recorder.store.flush()
        record = await scoring.recorder.store.get("run-2")

    assert record is not None
    assert record.reason_status == "done"
    assert lane_judge.lanes() == [
        (Lane.ENFORCE, "strict", 3.0),
        (Lane.ENFORCE, "strict", 3.0),
        (Lane.EXPLAIN, "strict", 3.0),
    ]


async def test_a_failed_window_is_the_answers_outcome_and_is_recorded(tmp_path: Path) -> None:
    answers = scripted_bias_judge(opinions=["an opinion"], verdicts=[("no", "fine")])

    async def fail_second(messages: Any, schema: Any) -> str:
        if SECOND in messages[-1]["content"]:
            raise JudgeUnavailable("the judge is down", status_code=503)
        return (await answers.complete(messages, schema=schema)).text

    lane_judge = LaneJudge(FunctionJudge(fail_second))
    async with scoring_for(lane_judge, tmp_path, KEYS) as scoring:
        request = request_of(scoring, "run-3")
        judge = WindowJudge(scoring, request)
        first, second = window(0, 0, FIRST), window(1, len(FIRST) + 1, SECOND)
        judge.add(first, *await judge.judge(first))
        with pytest.raises(JudgeUnavailable) as failed:
            await judge.judge(second)
        judge.fail(failed.value)
        assert not judge.open
        outcome = await judge.conclude(request, [f"{FIRST} {SECOND}"])
        await scoring.recorder.store.flush()
        record = await scoring.recorder.store.get("run-3")

    assert (outcome.status, outcome.status_reason) == ("error", "JudgeUnavailable")
    assert record is not None
    assert record.status == "error"
    assert len(outcome.windows or []) == 1  # the window judged before the failure
    assert {lane for lane, _, _ in lane_judge.lanes()} == {Lane.ENFORCE}


async def test_a_blocking_prefix_blocks_the_answer_whatever_the_whole_scores(
    tmp_path: Path,
) -> None:
    biased = scripted_bias_judge(opinions=["an opinion"], verdicts=[("yes", "a stereotype")])
    lane_judge = LaneJudge(biased)
    async with scoring_for(lane_judge, tmp_path, KEYS) as scoring:
        request = request_of(scoring, "run-4")
        judge = await judged(scoring, request, FIRST)
        assert judge.blocked
        assert judge.refused
        outcome = await judge.conclude(request, [FIRST])

    assert (outcome.status, outcome.verdict) == ("scored", "block")
    assert [entry["verdict"] for entry in outcome.windows or []] == ["block"]
