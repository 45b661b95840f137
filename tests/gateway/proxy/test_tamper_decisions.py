"""What a tamper finding does to a decision's rendering: the `x-bias-tamper` header, a live
stream's `bias` object, and a block's refusal. Pure code."""

from __future__ import annotations

import pytest

from gateway.config import Policy
from gateway.proxy.decisions import bias_details, bias_headers, block_refusal
from gateway.scoring.outcome import Outcome
from guard import BiasResult
from tests.support.bias_results import judged

POLICY = Policy(mode="enforce", block_threshold=0.8, on_tamper="block")
INSTRUCTION = {"kind": "instruction", "excerpt": "Ignore previous instructions"}
HIDDEN = {"kind": "hidden_text", "excerpt": "hidden"}


def scored(score: float, tamper: list[dict[str, str]]) -> Outcome:
    result: BiasResult = judged(["x"], ["yes" if score else "no"]).model_copy(
        update={"tamper": tamper, "score": score}
    )
    return Outcome("run-1", "scored", score=score, verdict="block", result=result)


@pytest.mark.parametrize(
    ("tamper", "header"),
    [
        ([], None),
        ([INSTRUCTION], "instruction"),
        ([INSTRUCTION, HIDDEN], "instruction,hidden_text"),
    ],
)
def test_the_tamper_header_lists_the_kinds_found(
    tamper: list[dict[str, str]], header: str | None
) -> None:
    outcome = scored(0.0, tamper)
    assert bias_headers(outcome).get("x-bias-tamper") == header
    assert bias_details(outcome)["tamper"] == [finding["kind"] for finding in tamper]


def test_an_unscored_outcome_has_no_tamper() -> None:
    outcome = Outcome("run-2", "error", status_reason="JudgeTimeout")
    assert "x-bias-tamper" not in bias_headers(outcome)
    assert bias_details(outcome)["tamper"] is None


def test_a_block_by_tamper_alone_says_so() -> None:
    refusal = block_refusal(scored(0.0, [HIDDEN]), POLICY)
    assert refusal.code == "bias_tamper_detected"
    assert refusal.type == "bias_policy_violation"
    assert "hidden_text" in refusal.message
    assert refusal.bias is not None
    assert refusal.bias["tamper"] == ["hidden_text"]


def test_a_block_by_score_stays_a_threshold_block_and_names_the_tamper() -> None:
    refusal = block_refusal(scored(1.0, [INSTRUCTION]), POLICY)
    assert refusal.code == "bias_threshold_exceeded"
    assert refusal.bias is not None
    assert refusal.bias["tamper"] == ["instruction"]


def test_a_block_without_tamper_is_unchanged() -> None:
    refusal = block_refusal(scored(1.0, []), POLICY)
    assert refusal.code == "bias_threshold_exceeded"
    assert refusal.bias is not None
    assert "tamper" not in refusal.bias
