"""Bias decisions: what an `Outcome` means for the response, and the `x-bias-*` headers.

A decision is a value, never an exception. `decide()` is the one place that
reads an outcome against its policy; every surface and delivery (a whole
body, a buffered stream, a live stream) renders what it returns:

- `DELIVER`: the answer goes out as the upstream gave it;
- `REPLACE`: the answer is swapped for the policy's refusal text;
- a `Refusal`: an error (block, judge failure, unreadable answer) that each
  surface writes in its own shape (`Surface.error_body`, `Surface.error_frame`).

`render()` is the one place a decision becomes what the client gets: each
delivery says what delivering, replacing and refusing are in its form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from gateway.config import Policy
from gateway.domain import SkipReason
from gateway.errors import (
    GatewayError,
    JudgeFailureBlocked,
    error_details,
    status_of,
    unreadable_error,
)
from gateway.scoring.outcome import Outcome
from gateway.scoring.policy import block_reason, verdict_for

__all__ = [
    "DELIVER",
    "REPLACE",
    "Decision",
    "Refusal",
    "bias_details",
    "bias_headers",
    "block_refusal",
    "decide",
    "render",
    "skip_headers",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Refusal:
    """An error answer in no surface's shape yet: status, OpenAI type and code, details."""

    status: int
    type: str
    code: str
    message: str
    param: str | None = None
    bias: dict[str, Any] | None = None

    @classmethod
    def of(cls, exc: GatewayError) -> Refusal:
        status, kind, code = status_of(exc)
        bias = error_details(exc).get("bias")
        return cls(status, kind, code, exc.message, param=exc.param, bias=bias)

    def extra(self) -> dict[str, Any]:
        """The fields beyond message/type/code a rendered error carries."""
        return {} if self.bias is None else {"bias": self.bias}


DELIVER: Literal["deliver"] = "deliver"
REPLACE: Literal["replace"] = "replace"
Decision = Literal["deliver", "replace"] | Refusal


def decide(outcome: Outcome, policy: Policy, *, enforce: bool) -> Decision:
    """What the client gets for `outcome`. Only `enforce` ever withholds an answer.

    An answer the gateway could not read is refused in enforce whatever
    `on_judge_error` says: it cannot tell what text the client would see.
    A judge failure is never confused with a block.
    """
    if not enforce:
        return DELIVER
    if outcome.status == "skipped" and outcome.status_reason == "unreadable":
        return Refusal.of(unreadable_error())
    if outcome.status == "error" and policy.on_judge_error == "block":
        failed = JudgeFailureBlocked(
            "The bias judge failed and the policy blocks unscored responses.",
            run_id=outcome.run_id,
            error_type=outcome.status_reason,
        )
        return Refusal.of(failed)
    if outcome.verdict == "block":
        if policy.block_action == "replace":
            return REPLACE
        return block_refusal(outcome, policy)
    return DELIVER


def render(
    decision: Decision,
    *,
    deliver: Callable[[], T],
    replace: Callable[[], T],
    refuse: Callable[[Refusal], T],
) -> T:
    """What the client gets for `decision`, in a delivery's own form: the answer
    (`deliver`), the policy's refusal in its place (`replace`), or the error (`refuse`).

    >>> render(REPLACE, deliver=lambda: "answer", replace=lambda: "refusal", refuse=str)
    'refusal'
    """
    if decision == DELIVER:
        return deliver()
    if decision == REPLACE:
        return replace()
    assert isinstance(decision, Refusal)
    return refuse(decision)


def block_refusal(outcome: Outcome, policy: Policy) -> Refusal:
    """The block as an error; also what a live stream ends with when it cannot be replaced.

    A block the policy's rules (score, biased opinions) did not reach came from tamper
    (`on_tamper: block`), and says so with its own code."""
    bias: dict[str, Any] = {
        "score": outcome.score,
        "threshold": policy.block_threshold,
        "biased_opinions": outcome.biased_opinions,
        "biased_opinions_threshold": policy.block_biased_opinions,
        "reason": outcome.reason,
        "run_id": outcome.run_id,
    }
    if outcome.tamper:
        bias["tamper"] = outcome.tamper_kinds
    score = outcome.score if outcome.score is not None else 0.0
    by_rules = verdict_for(score, outcome.biased_opinions or 0, policy)
    if outcome.tamper and by_rules != "block":
        kinds = ", ".join(outcome.tamper_kinds)
        message = (
            "The response was blocked by the bias policy: its text addresses the bias "
            f"judge ({kinds})."
        )
        return Refusal(
            policy.block_status, "bias_policy_violation", "bias_tamper_detected", message, bias=bias
        )
    return Refusal(
        policy.block_status,
        "bias_policy_violation",
        "bias_threshold_exceeded",
        "The response was blocked by the bias policy: "
        f"{block_reason(outcome.score, outcome.biased_opinions, policy)}.",
        bias=bias,
    )


def bias_headers(outcome: Outcome) -> dict[str, str]:
    """The `x-bias-*` headers of a response whose outcome is known (or pending)."""
    headers = {"x-bias-status": outcome.status, "x-bias-run-id": outcome.run_id}
    if outcome.status == "scored" and outcome.score is not None and outcome.verdict is not None:
        headers["x-bias-score"] = f"{outcome.score:g}"
        headers["x-bias-verdict"] = outcome.verdict
        if outcome.biased_opinions is not None:
            headers["x-bias-biased-opinions"] = str(outcome.biased_opinions)
        # Comma-separated, most frequent first; empty when no opinion was biased.
        headers["x-bias-categories"] = ",".join(outcome.categories)
        if outcome.tamper:
            # Comma-separated kinds of what addressed the judge (`guard.integrity.tamper`).
            headers["x-bias-tamper"] = ",".join(outcome.tamper_kinds)
    elif outcome.status == "skipped" and outcome.status_reason:
        headers["x-bias-skip-reason"] = outcome.status_reason
    elif outcome.status == "error" and outcome.status_reason:
        headers["x-bias-error"] = outcome.status_reason
    return headers


def skip_headers(reason: SkipReason) -> dict[str, str]:
    """The headers of a response that was not scored and has no run id."""
    return {"x-bias-status": "skipped", "x-bias-skip-reason": reason}


def bias_details(outcome: Outcome) -> dict[str, Any]:
    """The `bias` object a live stream's last event carries."""
    return {
        "status": outcome.status,
        "run_id": outcome.run_id,
        "score": outcome.score,
        "verdict": outcome.verdict,
        "biased_opinions": outcome.biased_opinions if outcome.status == "scored" else None,
        "categories": outcome.categories if outcome.status == "scored" else None,
        "tamper": outcome.tamper_kinds if outcome.status == "scored" else None,
        "error_type": outcome.status_reason if outcome.status == "error" else None,
    }
