"""`decide()` on a judge failure: its refusal is the error table's `JudgeFailureBlocked` row."""

from __future__ import annotations

import pytest

from gateway.config import Policy
from gateway.errors import JudgeFailureBlocked, error_response, status_of
from gateway.proxy.decisions import DELIVER, Refusal, decide
from gateway.scoring.outcome import Outcome

FAILED = Outcome("run-1", "error", status_reason="JudgeTimeout")


def test_a_judge_failure_the_policy_blocks_is_refused_with_the_tables_row() -> None:
    refusal = decide(FAILED, Policy(on_judge_error="block"), enforce=True)
    assert isinstance(refusal, Refusal)
    row = status_of(JudgeFailureBlocked("any"))
    assert (refusal.status, refusal.type, refusal.code) == row
    assert row == (503, "bias_judge_error", "bias_judge_unavailable")
    assert refusal.message == "The bias judge failed and the policy blocks unscored responses."
    assert refusal.bias == {"run_id": "run-1", "error_type": "JudgeTimeout"}


@pytest.mark.parametrize(("on_judge_error", "enforce"), [("allow", True), ("block", False)])
def test_a_judge_failure_is_delivered_unless_enforce_blocks_it(
    on_judge_error: str, enforce: bool
) -> None:
    policy = Policy.model_validate({"on_judge_error": on_judge_error})
    assert decide(FAILED, policy, enforce=enforce) == DELIVER


def test_a_direct_calls_judge_failure_names_no_run() -> None:
    # The moderations endpoint's: its texts' records say which failed, the error does not.
    response = error_response(JudgeFailureBlocked("The judge failed.", param="input"))
    assert response.status_code == 503
    assert b'"bias"' not in response.body
    assert b'"param":"input"' in response.body
