"""`POST /v1/bias/score`: the native form, for text that never went through a proxy.

One text (`text`, or `messages`, whose assistant text is judged with the string
arguments of its assistant turns' tool calls, as the proxy judges an answer's,
under the policy's `judge_tool_arguments`) gives guard's
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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.domain import Mode
from gateway.errors import BadRequest, JudgeFailureBlocked
from gateway.proxy.direct import MAX_TEXTS, DirectCall
from gateway.scoring.outcome import Outcome
from gateway.scoring.request import ScoreRequest, with_tool_arguments
from gateway.wire.tools import ToolArgument, messages_tool_arguments
from guard.errors import OutputShapeError
from guard.outputs import assistant_text, valid_text

__all__ = ["bias_score"]

_MODES: dict[str, Mode] = {"enforce": "enforce", "monitor": "monitor"}
_FORMS = ("text", "messages", "texts")


@dataclass(frozen=True, slots=True)
class _Given:
    """One text handed in, and the tool-call arguments of its messages."""

    text: str
    tool_arguments: tuple[ToolArgument, ...] = ()

    def judged(self, job: ScoreRequest) -> tuple[ScoreRequest, str]:
        """The text the judge reads, with the tool arguments as a proxied answer has
        them, and the job that knows them."""
        job, texts = with_tool_arguments(
            job, [self.text] if self.text.strip() else [], self.tool_arguments
        )
        return job, texts[0] if texts else ""


async def bias_score(request: Request) -> Response:
    mode = _mode(request.query_params.get("mode", "enforce"))
    call = await DirectCall.begin(request, "score")
    try:
        return await _score(call, mode)
    finally:
        call.release()


async def _score(call: DirectCall, mode: Mode) -> Response:
    body = call.body
    forms = [form for form in _FORMS if form in body]
    if len(forms) != 1:
        raise BadRequest(
            "Give exactly one of `text`, `messages` (one text) or `texts` (a list).",
            param="text",
        )
    listed = forms[0] == "texts"
    given = _listed(body["texts"]) if listed else [_one(body, "")]
    policy_name = _policy(call, body.get("policy"))
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRequest("`model` must be a string.", param="model")
    call.state.model = model
    judged = [one.judged(call.job(policy_name, mode, model)) for one in given]
    jobs, texts = [job for job, _ in judged], [text for _, text in judged]
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


def _listed(value: object) -> list[_Given]:
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
            texts.append(_Given(valid_text(item)))
        elif isinstance(item, dict) and sum(form in item for form in _FORMS[:2]) == 1:
            texts.append(_one(item, f"texts[{index}]."))
        else:
            raise BadRequest(
                f"`texts[{index}]` must be a string, or an object with `text` or `messages`.",
                param="texts",
            )
    return texts


def _one(body: dict[str, Any], where: str) -> _Given:
    """The text of one `{"text": ...}`, or of one `{"messages": [...]}` with the tool-call
    arguments of its assistant turns (which may be all there is to judge)."""
    if "text" in body:
        text = body["text"]
        if not isinstance(text, str):
            raise BadRequest(f"`{where}text` must be a string.", param=f"{where}text")
        return _Given(valid_text(text))
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise BadRequest(
            f"`{where}messages` must be a non-empty array of messages.", param=f"{where}messages"
        )
    arguments = tuple(messages_tool_arguments(messages))
    try:
        return _Given(assistant_text(messages), arguments)
    except OutputShapeError as exc:
        if arguments and all(isinstance(message, Mapping) for message in messages):
            return _Given("", arguments)  # an assistant turn that is only tool calls
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
