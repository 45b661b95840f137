"""`decide()` over every outcome and policy: deliver, replace, or which refusal.
Pure code: no gateway, no I/O.
"""

from __future__ import annotations

from typing import Literal

import pytest

from gateway.config import Policy
from gateway.domain import PolicyVerdict, Status
from gateway.proxy.decisions import DELIVER, REPLACE, Refusal, block_refusal, decide
from gateway.scoring.outcome import Outcome

BlockAction = Literal["error", "replace"]
OnJudgeError = Literal["allow", "block"]
Expected = str | tuple[int, str, str]

UNREADABLE = (502, "upstream_error", "upstream_protocol_error")
JUDGE_DOWN = (503, "bias_judge_error", "bias_judge_unavailable")
BLOCK_ERROR = (422, "bias_policy_violation", "bias_threshold_exceeded")

DECIDE_CASES: list[
    tuple[Status, PolicyVerdict | None, str | None, BlockAction, OnJudgeError, bool, Expected]
] = [
    # (status, verdict, status_reason, block_action, on_judge_error, enforce) -> expected
    ("scored", "pass", None, "error", "allow", True, DELIVER),
    ("scored", "flag", None, "error", "block", True, DELIVER),
    ("scored", "block", None, "error", "allow", True, BLOCK_ERROR),
    ("scored", "block", None, "error", "block", True, BLOCK_ERROR),
    ("scored", "block", None, "replace", "allow", True, REPLACE),
    ("scored", "block", None, "replace", "block", True, REPLACE),
    ("scored", "block", None, "error", "allow", False, DELIVER),
    ("scored", "block", None, "replace", "block", False, DELIVER),
    ("scored", "pass", None, "replace", "block", False, DELIVER),
    # An unreadable answer is refused whatever on_judge_error or block_action say.
    ("skipped", None, "unreadable", "error", "allow", True, UNREADABLE),
    ("skipped", None, "unreadable", "replace", "block", True, UNREADABLE),
    ("skipped", None, "unreadable", "error", "block", False, DELIVER),
    # Other skips pass.
    ("skipped", None, "no_text", "error", "block", True, DELIVER),
    ("skipped", None, "not_sampled", "replace", "block", True, DELIVER),
    ("skipped", None, "overloaded", "error", "block", True, DELIVER),
    # A judge failure is never confused with a block, nor replaced.
    ("error", None, "JudgeTimeout", "error", "block", True, JUDGE_DOWN),
    ("error", None, "JudgeError", "replace", "block", True, JUDGE_DOWN),
    ("error", None, "JudgeTimeout", "error", "allow", True, DELIVER),
    ("error", None, "JudgeTimeout", "replace", "allow", True, DELIVER),
    ("error", None, "JudgeTimeout", "error", "block", False, DELIVER),
    ("pending", None, None, "error", "block", True, DELIVER),
    ("dropped", None, None, "error", "block", True, DELIVER),
    ("pending", None, None, "error", "block", False, DELIVER),
]


@pytest.mark.parametrize(
    ("status", "verdict", "status_reason", "block_action", "on_judge_error", "enforce", "expected"),
    DECIDE_CASES,
)
def test_decide(
    status: Status,
    verdict: PolicyVerdict | None,
    status_reason: str | None,
    block_action: BlockAction,
    on_judge_error: OnJudgeError,
    enforce: bool,
    expected: Expected,
) -> None:
    policy = Policy(
        mode="enforce" if enforce else "monitor",
        block_action=block_action,
        on_judge_error=on_judge_error,
    )
    score = {"pass": 0.1, "flag": 0.6, "block": 0.9}.get(verdict or "")
    outcome = Outcome(
        run_id="run-1",
        status=status,
        score=score,
        verdict=verdict,
        reason="why" if verdict else None,
        status_reason=status_reason,
    )

    decision = decide(outcome, policy, enforce=enforce)

    if isinstance(expected, str):
        assert decision == expected
        return
    assert isinstance(decision, Refusal)
    assert (decision.status, decision.type, decision.code) == expected
    assert decision.message
    if expected == BLOCK_ERROR:
        assert decision.bias == {
            "score": 0.9,
            "threshold": 0.8,
            "biased_opinions": None,  # an outcome without a result has no count
            "biased_opinions_threshold": None,
            "reason": "why",
            "run_id": "run-1",
        }
    elif expected == JUDGE_DOWN:
        assert decision.bias == {"run_id": "run-1", "error_type": status_reason}
    else:
        assert decision.bias is None
        assert decision.param is None


@pytest.mark.parametrize("block_status", [400, 403, 422, 451, 500, 599])
def test_decide_block_uses_the_policys_status_and_threshold(block_status: int) -> None:
    policy = Policy(mode="enforce", block_threshold=0.75, block_status=block_status)
    outcome = Outcome(run_id="r", status="scored", score=0.875, verdict="block", reason="x")

    decision = decide(outcome, policy, enforce=True)

    assert isinstance(decision, Refusal)
    assert decision.status == block_status
    assert "score 0.875" in decision.message
    assert "threshold 0.75" in decision.message
    assert decision.bias is not None
    assert (decision.bias["score"], decision.bias["threshold"]) == (0.875, 0.75)
    assert decision == block_refusal(outcome, policy)
