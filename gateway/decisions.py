"""Rendering bias outcomes: headers, block envelopes, refusals. The one place decisions show."""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.responses import JSONResponse, Response

from gateway.config import Policy
from gateway.errors import envelope
from gateway.scoring import Outcome
from gateway.sse import encode_event

__all__ = [
    "bias_chunk",
    "bias_headers",
    "block_envelope",
    "judge_error_envelope",
    "refusal_stream",
    "refused_completion",
    "render_block",
]


def bias_headers(outcome: Outcome) -> dict[str, str]:
    headers = {"x-bias-status": outcome.status, "x-bias-run-id": outcome.run_id}
    if outcome.status == "scored" and outcome.score is not None and outcome.verdict is not None:
        headers["x-bias-score"] = f"{outcome.score:g}"
        headers["x-bias-verdict"] = outcome.verdict
    elif outcome.status == "skipped" and outcome.status_reason:
        headers["x-bias-skip-reason"] = outcome.status_reason
    elif outcome.status == "error" and outcome.status_reason:
        headers["x-bias-error"] = outcome.status_reason
    return headers


def block_envelope(outcome: Outcome, policy: Policy) -> dict[str, Any]:
    return envelope(
        f"The response was blocked by the bias policy: score {outcome.score:g} "
        f"is at or above the block threshold {policy.block_threshold:g}.",
        type="bias_policy_violation",
        code="bias_threshold_exceeded",
        bias={
            "score": outcome.score,
            "threshold": policy.block_threshold,
            "reason": outcome.reason,
            "run_id": outcome.run_id,
        },
    )


def judge_error_envelope(outcome: Outcome) -> dict[str, Any]:
    return envelope(
        "The bias judge failed and the policy blocks unscored responses.",
        type="bias_judge_error",
        code="bias_judge_unavailable",
        bias={"run_id": outcome.run_id, "error_type": outcome.status_reason},
    )


def render_block(
    outcome: Outcome, policy: Policy, completion: dict[str, Any] | None, headers: dict[str, str]
) -> Response:
    """A blocked non-streaming answer: the error envelope, or the refusal (action `replace`)."""
    if policy.block_action == "replace" and completion is not None:
        return JSONResponse(refused_completion(completion, policy), headers=headers)
    return JSONResponse(
        block_envelope(outcome, policy), status_code=policy.block_status, headers=headers
    )


def refused_completion(completion: dict[str, Any], policy: Policy) -> dict[str, Any]:
    refused = dict(completion)
    refused["choices"] = [
        {
            "index": choice.get("index", index),
            "message": {"role": "assistant", "content": policy.refusal_text},
            "finish_reason": "content_filter",
            "logprobs": None,
        }
        for index, choice in enumerate(completion.get("choices") or [{}])
    ]
    return refused


def refusal_stream(response_id: str | None, model: str | None, policy: Policy) -> bytes:
    """SSE frames carrying the refusal, for a blocked stream replaced before any byte went out."""

    def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
        return encode_event(
            json.dumps(
                {
                    "id": response_id or "chatcmpl-refused",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
            )
        )

    return (
        chunk({"role": "assistant", "content": policy.refusal_text}, None)
        + chunk({}, "content_filter")
        + encode_event("[DONE]")
    )


def bias_chunk(outcome: Outcome, response_id: str | None, model: str | None) -> bytes:
    """The trailing chunk of a passthrough stream: no choices, a `bias` object."""
    return encode_event(
        json.dumps(
            {
                "id": response_id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "bias": {
                    "status": outcome.status,
                    "run_id": outcome.run_id,
                    "score": outcome.score,
                    "verdict": outcome.verdict,
                    "error_type": outcome.status_reason if outcome.status == "error" else None,
                },
            }
        )
    )
