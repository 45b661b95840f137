"""A served request handed to the live probe (`gateway.probe`) once its answer has gone.

`offer_to_probe(call)` runs after the response is sent: the sampler's turn, then
a `Replay` with what the probe needs of the request, read in the request's own
API. Nothing here may fail the request: any error is logged and the probe skipped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import structlog

from gateway.probe import Replay, ReplayAnswer
from gateway.proxy.call import ScoredCall
from gateway.proxy.surfaces import Surface

__all__ = ["offer_to_probe", "read_answer"]

log = structlog.get_logger("gateway.probe")


def offer_to_probe(call: ScoredCall) -> None:
    """Offer `call` to the live probe if this request is the probe sampler's turn, and the
    upstream answered it (a failed call would only replay the failure, spending the caps)."""
    status = call.upstream_call.status
    if status is None or status >= 400:
        return
    probe = call.gateway.probe
    if not probe.take():
        return
    try:
        surface, parsed = call.surface, call.parsed
        probe.offer(
            Replay(
                prompt=surface.prompt_text(parsed.body),
                body=parsed.body,
                target=call.upstream_call.target,
                path=surface.upstream_path,
                headers=call.upstream_call.headers(),
                key_name=call.job.key_name,
                model=parsed.model,
                api=surface.name,
                read=lambda raw: read_answer(surface, raw),
            )
        )
    except Exception:  # the answer has gone: a probe's failure must not reach the client
        log.exception("a request could not be offered to the live probe")


def read_answer(surface: Surface, raw: bytes) -> ReplayAnswer | None:
    """A whole answer of `surface`'s API: its text, finish reason, the API's own refusal
    and the tokens its usage counts; None for a body that is no answer of it."""
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(body, dict) or not surface.readable(body):
        return None
    facts = surface.facts(body)
    return ReplayAnswer(
        text="\n".join(surface.texts(body)),
        finish_reason=facts.finish_reasons[0] if facts.finish_reasons else None,
        refusal=_refusal_field(body),
        tokens=(facts.input_tokens or 0) + (facts.output_tokens or 0),
    )


def _refusal_field(body: Mapping[str, Any]) -> str | None:
    """The API's own refusal: Chat's `message.refusal`, a Responses `refusal` part, or
    Messages' `stop_reason: refusal`."""
    if body.get("stop_reason") == "refusal":
        return "refusal"
    for choice in body.get("choices") or ():
        message = choice.get("message") if isinstance(choice, Mapping) else None
        if isinstance(message, Mapping) and isinstance(message.get("refusal"), str):
            return str(message["refusal"])
    for item in body.get("output") or ():
        parts = item.get("content") if isinstance(item, Mapping) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, Mapping) and part.get("type") == "refusal":
                return str(part.get("refusal") or "refusal")
    return None
