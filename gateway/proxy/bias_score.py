"""`POST /v1/bias/score`: the native form, for text that never went through a proxy.

One text (`text`, or `messages`, whose assistant text is judged) gives guard's
result in Mastra's shape (`runId`, `preprocessStepResult`, ..., `score`,
`reason`) with the policy's `verdict` and the record's `status` beside it. A
list (`texts`: strings, or objects with `text` or `messages`) gives
`{"object": "list", "data": [...]}`, one entry per text, judged concurrently.

`?mode=monitor` answers at once (202) with each text's run id and status
`pending`; the score lands in the store (`GET /v1/bias/scores/{run_id}`).
`policy` names the policy whose thresholds decide (the key's own by default)
and `model` the model that wrote the text, kept on the record.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.domain import Mode
from gateway.errors import BadRequest, JudgeFailureBlocked
from gateway.proxy.direct import MAX_TEXTS, DirectCall
from gateway.scoring.outcome import Outcome
from guard.errors import OutputShapeError
from guard.outputs import assistant_text, valid_text

__all__ = ["bias_score"]

_MODES: dict[str, Mode] = {"enforce": "enforce", "monitor": "monitor"}
_FORMS = ("text", "messages", "texts")


async def bias_score(request: Request) -> Response:
    mode = _mode(request.query_params.get("mode", "enforce"))
    call = await DirectCall.begin(request, "score")
    try:
        return await _score(call, mode)
    finally:
        call.release()


async def _score(call: DirectCall, mode: Mode) -> Response:
    body = call.body
    given = [form for form in _FORMS if form in body]
    if len(given) != 1:
        raise BadRequest(
            "Give exactly one of `text`, `messages` (one text) or `texts` (a list).",
            param="text",
        )
    listed = given[0] == "texts"
    texts = _listed(body["texts"]) if listed else [_one(body, "")]
    policy_name = _policy(call, body.get("policy"))
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRequest("`model` must be a string.", param="model")
    call.state.model = model
    jobs = [call.job(policy_name, mode, model) for _ in texts]
    if mode == "monitor":
        outcomes = call.queue(jobs, texts)
    else:
        outcomes = await call.judge(jobs, texts)
    entries = [_entry(outcome, policy=policy_name) for outcome in outcomes]
    status = 202 if mode == "monitor" else 200
    if listed:
        return JSONResponse({"object": "list", "data": entries}, status_code=status)
    if outcomes[0].status == "error":
        raise JudgeFailureBlocked(
            f"The bias judge failed ({outcomes[0].status_reason}); run {outcomes[0].run_id}"
            " is recorded as error."
        )
    return JSONResponse(entries[0], status_code=status)


def _mode(value: str) -> Mode:
    mode = _MODES.get(value)
    if mode is None:
        raise BadRequest(
            f"`mode` must be enforce (score in the request) or monitor (score in the"
            f" background), got {value!r}.",
            param="mode",
        )
    return mode


def _listed(value: object) -> list[str]:
    if not isinstance(value, list) or not value:
        raise BadRequest("`texts` must be a non-empty array.", param="texts")
    if len(value) > MAX_TEXTS:
        raise BadRequest(
            f"`texts` holds {len(value)} texts; at most {MAX_TEXTS} are scored in one request.",
            param="texts",
        )
    texts = []
    for index, item in enumerate(value):
        if isinstance(item, str):
            texts.append(valid_text(item))
        elif isinstance(item, dict) and sum(form in item for form in _FORMS[:2]) == 1:
            texts.append(_one(item, f"texts[{index}]."))
        else:
            raise BadRequest(
                f"`texts[{index}]` must be a string, or an object with `text` or `messages`.",
                param="texts",
            )
    return texts


def _one(body: dict[str, Any], where: str) -> str:
    """The text of one `{"text": ...}` or `{"messages": [...]}`."""
    if "text" in body:
        text = body["text"]
        if not isinstance(text, str):
            raise BadRequest(f"`{where}text` must be a string.", param=f"{where}text")
        return valid_text(text)
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise BadRequest(
            f"`{where}messages` must be a non-empty array of messages.", param=f"{where}messages"
        )
    try:
        return assistant_text(messages)
    except OutputShapeError as exc:
        raise BadRequest(f"`{where}messages`: {exc}", param=f"{where}messages") from exc


def _policy(call: DirectCall, name: object) -> str:
    if name is None:
        return call.own_policy
    policies = call.gateway.settings.policies
    if not isinstance(name, str) or name not in policies:
        raise BadRequest(
            f"`policy` must name a policy: {', '.join(sorted(policies))}.", param="policy"
        )
    return name


def _entry(outcome: Outcome, *, policy: str) -> dict[str, Any]:
    """Guard's result in Mastra's shape, with this run's id, status and verdict."""
    entry: dict[str, Any] = outcome.result.to_json_dict() if outcome.result is not None else {}
    entry.update(
        runId=outcome.run_id,
        status=outcome.status,
        verdict=outcome.verdict,
        policy=policy,
        reasonStatus=outcome.reason_status,
    )
    if outcome.status == "skipped":
        entry["skipReason"] = outcome.status_reason
    elif outcome.status == "error":
        entry["errorType"] = outcome.status_reason
    return entry
