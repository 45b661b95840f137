"""`POST /v1/moderations`: OpenAI's moderation API, answered by the bias judge.

The request and answer have OpenAI's shape, so the `openai` SDK's
`client.moderations.create(...)` and LiteLLM's `openai_moderation` guardrail
call it unchanged. `input` is a string, a list of strings (one result each), or
a list of text parts (`{"type": "text", "text": ...}`, one result for them all;
images are refused). `model` chooses the policy whose thresholds decide
`flagged`:

- absent, the judge's model name, or one of OpenAI's moderation model names:
  the caller's key's policy;
- a policy's name under `policies`: that policy.

Anything else is a 400. Each result's `categories` and `category_scores` are
keyed by the configured category ids, scores on 0..1; `flagged` is the
policy's verdict (flag or block), and the `bias` object says the rest.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.errors import BadRequest, JudgeFailureBlocked
from gateway.proxy.direct import MAX_TEXTS, DirectCall, bias_object, text_list
from gateway.scoring.outcome import Outcome
from guard.outputs import valid_text

__all__ = ["OPENAI_MODERATION_MODELS", "moderations"]

# OpenAI's moderation models (https://platform.openai.com/docs/models): callers that
# name one (the SDK's examples, LiteLLM's guardrail by default) get their own policy.
OPENAI_MODERATION_MODELS = frozenset(
    {
        "omni-moderation-latest",
        "omni-moderation-2024-09-26",
        "text-moderation-latest",
        "text-moderation-stable",
        "text-moderation-007",
    }
)


async def moderations(request: Request) -> Response:
    call = await DirectCall.begin(request, "moderations")
    try:
        return await _moderate(call)
    finally:
        call.release()


async def _moderate(call: DirectCall) -> Response:
    body = call.body
    texts = input_texts(body.get("input"))
    model = body.get("model")
    policy_name = _policy_for(call, model)
    call.state.model = model if isinstance(model, str) else None
    jobs = [call.job(policy_name, "enforce", call.state.model) for _ in texts]
    outcomes = await call.judge(jobs, texts)
    policy = call.gateway.settings.policies[policy_name]
    if policy.on_judge_error == "block" and any(o.status == "error" for o in outcomes):
        raise JudgeFailureBlocked(
            "The bias judge failed and the policy blocks unscored texts.", param="input"
        )
    settings = call.gateway.settings
    categories = [category.id for category in settings.judge.bias_categories()]
    scale = call.gateway.scoring.scorer.scale
    return JSONResponse(
        {
            "id": f"modr-{outcomes[0].run_id}",
            "model": call.state.model or settings.judge.model,
            "results": [
                _result(outcome, categories, scale=scale, policy=policy_name)
                for outcome in outcomes
            ],
        }
    )


def input_texts(value: object) -> list[str]:
    """The texts `input` holds, one per result; a 400 for any other shape."""
    if isinstance(value, str):
        return [valid_text(value)]
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return [_parts_text(value)]
    if isinstance(value, list) and any(isinstance(item, dict) for item in value):
        raise BadRequest(
            "`input` must be a string, an array of strings or an array of content parts,"
            " not a mix.",
            param="input",
        )
    if value is None:
        raise BadRequest("`input` is required.", param="input")
    if not isinstance(value, list):
        raise BadRequest(
            "`input` must be a string, an array of strings or an array of content parts.",
            param="input",
        )
    return text_list(value, "input")


def _parts_text(parts: list[dict[str, Any]]) -> str:
    if len(parts) > MAX_TEXTS:
        raise BadRequest(f"`input` holds more than {MAX_TEXTS} parts.", param="input")
    texts = []
    for part in parts:
        kind = part.get("type")
        if kind != "text":
            raise BadRequest(
                f"Content parts of type {kind!r} are not scored: the bias judge reads text"
                " parts only.",
                param="input",
            )
        text = part.get("text")
        if not isinstance(text, str):
            raise BadRequest("A text part's `text` must be a string.", param="input")
        texts.append(valid_text(text))
    return "\n".join(texts)


def _policy_for(call: DirectCall, model: object) -> str:
    settings = call.gateway.settings
    if model is None:
        return call.own_policy
    if not isinstance(model, str):
        raise BadRequest("`model` must be a string.", param="model")
    if model in settings.policies:
        return model
    if model == settings.judge.model or model in OPENAI_MODERATION_MODELS:
        return call.own_policy
    raise BadRequest(
        f"Unknown moderation model {model!r}: name a policy"
        f" ({', '.join(sorted(settings.policies))}), the judge ({settings.judge.model}),"
        " or one of OpenAI's moderation models for your key's policy.",
        param="model",
    )


def _result(
    outcome: Outcome, categories: list[str], *, scale: float, policy: str
) -> dict[str, Any]:
    flagged = outcome.verdict in ("flag", "block")
    found = outcome.result.category_scores if outcome.result is not None else {}
    keys = [*categories, *(category for category in found if category not in categories)]
    scores = {category: round(found.get(category, 0.0) / scale, 4) for category in keys}
    return {
        "flagged": flagged,
        "categories": {category: flagged and scores[category] > 0 for category in keys},
        "category_scores": scores,
        "category_applied_input_types": {category: ["text"] for category in keys},
        "bias": bias_object(outcome, scale=scale, policy=policy),
    }
