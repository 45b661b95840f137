"""What an enforced response waits for: the verdicts only. Reason modes, pipelines, cost."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from structlog.testing import capture_logs

from testkit.fake_openai import FakeOpenAI, Fault
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
MESSAGES: list[Any] = [{"role": "user", "content": "Tell me about engineers."}]
BIASED = "Engineers from the north are lazy."
# The records keep the judge's explanation only with the text (`store.capture_content`).
KEEP_TEXT = {"capture_content": True}


def judge_steps(fake: FakeOpenAI) -> list[str]:
    return [step for step in fake.steps() if step != "chat"]


@pytest.mark.parametrize(
    ("pipeline", "on_the_path"),
    [("faithful", ["preprocess", "analyze"]), ("single", ["assess"])],
)
def test_enforce_waits_only_for_the_verdicts(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, pipeline: str, on_the_path: list[str]
) -> None:
    fake_openai.verdicts = [("no", "fine")]
    fake_openai.fail(Fault(step="reason", delay=1.0))
    gateway = make_gateway(
        judge={"pipeline": pipeline, "reason_for": "all"},
        store=KEEP_TEXT,
        **policy(mode="enforce"),
    )

    raw = gateway.client().chat.completions.with_raw_response.create(model="m", messages=MESSAGES)

    assert raw.headers["x-bias-status"] == "scored"
    assert judge_steps(fake_openai)[: len(on_the_path)] == on_the_path
    run_id = raw.headers["x-bias-run-id"]
    early = gateway.wait_for_score(run_id)
    assert (early["status"], early["reason"], early["reason_status"]) == ("scored", None, "pending")
    assert early["judge_calls"] == len(on_the_path)
    final = gateway.wait_for_score(run_id, reason=True)
    assert final["reason"] == fake_openai.reason
    assert final["reason_status"] == "done"
    assert final["judge_calls"] == len(on_the_path) + 1
    assert final["result"]["callsByStep"]["generate_reason"] == 1
    assert final["result"]["pipeline"] == pipeline
    assert final["judge_tokens"] > early["judge_tokens"] > 0


@pytest.mark.parametrize(
    ("pipeline", "calls", "mode"),
    [
        ("faithful", 2, "enforce"),
        ("single", 1, "enforce"),
        ("faithful", 2, "monitor"),
        ("single", 1, "monitor"),
    ],
)
def test_a_passing_answer_is_not_explained_by_default(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, pipeline: str, calls: int, mode: str
) -> None:
    fake_openai.verdicts = [("no", "fine")]
    gateway = make_gateway(judge={"pipeline": pipeline}, **policy(mode=mode))
    raw = gateway.client().chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"])
    assert (record["status"], record["verdict"]) == ("scored", "pass")
    assert (record["reason"], record["reason_status"]) == (None, "not_needed")
    assert record["judge_calls"] == calls
    assert "reason" not in judge_steps(fake_openai)


@pytest.mark.parametrize("verdict_mode", ["flag", "block"])
def test_a_flagged_or_blocked_answer_is_explained(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, verdict_mode: str
) -> None:
    fake_openai.reply = BIASED
    if verdict_mode == "flag":  # one biased opinion of two: 0.5, between the thresholds
        fake_openai.opinions = [BIASED, "Engineers build bridges."]
        fake_openai.verdicts = [("yes", "Geographical stereotype.", ["geographical"]), ("no", "ok")]
    gateway = make_gateway(
        store=KEEP_TEXT, **policy(mode="monitor", flag_threshold=0.4, block_threshold=0.8)
    )
    raw = gateway.client().chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"], reason=True)
    assert record["verdict"] == verdict_mode
    assert (record["reason"], record["reason_status"]) == (fake_openai.reason, "done")
    assert judge_steps(fake_openai).count("reason") == 1


def test_a_deferred_block_goes_out_before_its_explanation(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    fake_openai.fail(Fault(step="reason", delay=0.5))
    gateway = make_gateway(store=KEEP_TEXT, **policy(mode="enforce"))
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        gateway.client().chat.completions.create(model="m", messages=MESSAGES)
    body: Any = caught.value.body
    assert body["bias"]["score"] == 1
    assert body["bias"]["reason"] is None  # the lookup has it once it is written
    record = gateway.wait_for_score(body["bias"]["run_id"], reason=True)
    assert record["reason"] == fake_openai.reason


def test_the_score_line_and_event_wait_for_the_explanation(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(mode="enforce", block_action="replace"))
    with capture_logs() as logs:
        raw = gateway.client().chat.completions.with_raw_response.create(
            model="m", messages=MESSAGES
        )
        gateway.wait_for_score(raw.headers["x-bias-run-id"], reason=True)
    (line,) = [line for line in logs if line["event"] == "bias score"]
    assert line["reason_status"] == "done"
    assert line["judge_calls"] == 3
    assert line["calls_by_step"] == {"preprocess": 1, "analyze": 1, "generate_reason": 1}
    assert set(line["tokens_by_step"]) == set(line["calls_by_step"])
    assert sum(line["tokens_by_step"].values()) == line["judge_tokens"]


@pytest.mark.parametrize(
    ("judge", "calls", "status"),
    [({"reason": "off"}, 2, "off"), ({"include_reason": False}, 2, "off")],
)
def test_reason_off_makes_no_explanation_call(
    fake_openai: FakeOpenAI,
    make_gateway: MakeGateway,
    judge: dict[str, Any],
    calls: int,
    status: str,
) -> None:
    gateway = make_gateway(judge=judge, **policy(mode="enforce", block_action="replace"))
    raw = gateway.client().chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"])
    assert record["reason_status"] == status
    assert record["reason"] is None
    assert fake_openai.judge_calls() == calls


def test_a_failed_explanation_leaves_the_score(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="reason", status=500))
    gateway = make_gateway(
        judge={"max_retries": 0}, **policy(mode="enforce", block_action="replace")
    )
    raw = gateway.client().chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    assert raw.headers["x-bias-status"] == "scored"
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"], reason=True)
    assert (record["status"], record["reason_status"], record["score"]) == ("scored", "error", 1)


async def test_identical_texts_are_explained_once(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="reason", delay=0.5))
    gateway = make_gateway(store=KEEP_TEXT, **policy(mode="enforce", block_action="replace"))
    async with gateway.async_client() as client:
        answers = await asyncio.gather(
            *(
                client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
                for _ in range(6)
            )
        )
    for answer in answers:
        record = await asyncio.to_thread(
            gateway.wait_for_score, answer.headers["x-bias-run-id"], reason=True
        )
        assert record["reason"] == fake_openai.reason
    assert judge_steps(fake_openai) == ["preprocess", "analyze", "reason"]


@pytest.mark.parametrize("pipeline", ["faithful", "single"])
def test_the_cache_and_the_sampler_work_in_both_pipelines(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, pipeline: str
) -> None:
    gateway = make_gateway(
        judge={"pipeline": pipeline, "reason": "inline"},
        **policy(mode="enforce", block_action="replace", sample_rate=0.5),
    )
    statuses = []
    for _ in range(4):
        raw = gateway.client().chat.completions.with_raw_response.create(
            model="m", messages=MESSAGES
        )
        statuses.append(raw.headers["x-bias-status"])
    assert sorted(statuses) == ["scored", "scored", "skipped", "skipped"]
    per_score = 2 if pipeline == "single" else 3
    assert fake_openai.judge_calls() == per_score  # the second scored text was a cache hit


def test_a_deferred_explanation_at_shutdown_is_recorded_dropped(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, tmp_path: Path
) -> None:
    fake_openai.fail(Fault(step="reason", delay=5))
    gateway = make_gateway(
        queue={"drain_deadline": 0.2}, **policy(mode="enforce", block_action="replace")
    )
    raw = gateway.client().chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    gateway.server.stop()
    with sqlite3.connect(tmp_path / "scores.db") as db:
        row = db.execute(
            "SELECT status, reason_status FROM scores WHERE run_id = ?",
            (raw.headers["x-bias-run-id"],),
        ).fetchone()
    db.close()
    assert row == ("scored", "dropped")


def test_monitor_scores_with_the_single_pipeline(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway(judge={"pipeline": "single"})
    raw = gateway.client().chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"], reason=True)
    assert (record["status"], record["score"], record["reason_status"]) == ("scored", 1, "done")
    assert judge_steps(fake_openai) == ["assess", "reason"]
