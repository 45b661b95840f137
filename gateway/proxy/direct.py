"""Texts scored without an upstream call: what `/v1/moderations` and `/v1/bias/score` share.

A direct call is a client handing the gateway text to judge. It goes through
the same parts as a proxied answer: the client key and its limits, the
policy, the score cache, the store (one record per text, under the caller's
key, so the lookup and search show it), the `evaluation bias` span, the
evaluation event and the metrics. Only the upstream call is missing.

A direct call is always judged, whatever the policy's `mode` and `sample_rate`
say: the client asked for a score. In the request (`enforce` records) by
default, or on the monitor queue (`monitor` records) when the caller says so.
Texts are judged concurrently; the judge client's limiter bounds the calls in
flight, these and the proxied answers' together.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from gateway.config import Policy
from gateway.domain import Api, Mode
from gateway.errors import BadRequest
from gateway.observability.access import CallState
from gateway.proxy.intake import Intake, gateway_of
from gateway.proxy.surfaces.base import parse_object
from gateway.runtime.resources import Gateway
from gateway.scoring.outcome import Outcome
from gateway.scoring.request import ScoreRequest
from guard import is_biased
from guard.outputs import valid_text

__all__ = ["MAX_TEXTS", "DirectCall", "bias_object", "text_list"]

# The texts one request may carry: each is a judge run of its own (two or three calls).
MAX_TEXTS = 64


@dataclass(slots=True)
class DirectCall:
    """One request that hands the gateway texts to judge, from its key to its records."""

    intake: Intake
    body: dict[str, Any]
    api: Api

    @classmethod
    async def begin(cls, request: Request, api: Api) -> DirectCall:
        """Check the key, read the body (a JSON object) and take the key's place."""
        intake = Intake.open(gateway_of(request), request, api=api)
        body = parse_object(await intake.body())
        intake.admit()
        return cls(intake, body, api)

    @property
    def gateway(self) -> Gateway:
        return self.intake.gateway

    @property
    def state(self) -> CallState:
        return self.intake.state

    def release(self) -> None:
        self.intake.release()

    @property
    def own_policy(self) -> str:
        """The name of the policy the caller's key follows."""
        return self.intake.policy_name

    def job(self, policy_name: str, mode: Mode, model: str | None) -> ScoreRequest:
        policy: Policy = self.gateway.settings.policies[policy_name]
        return ScoreRequest(
            run_id=str(uuid.uuid4()),
            policy=policy,
            policy_name=policy_name,
            mode=mode,
            model=model,
            api=self.api,
            key_name=self.intake.key_name,
            request_id=self.state.request_id,
        )

    async def judge(self, jobs: list[ScoreRequest], texts: list[str]) -> list[Outcome]:
        """Judge each text in the request, concurrently; an empty one is skipped (`no_text`).

        Shielded, as a proxied answer's scoring is: a client that leaves does not
        cancel the records."""
        scoring = self.gateway.scoring

        async def one(job: ScoreRequest, text: str) -> Outcome:
            if not text.strip():
                return scoring.skip(job, "no_text")
            return await asyncio.shield(scoring.spawn(job, [text]))

        outcomes = list(await asyncio.gather(*map(one, jobs, texts)))
        self.note(outcomes)
        return outcomes

    def queue(self, jobs: list[ScoreRequest], texts: list[str]) -> list[Outcome]:
        """Queue each text for the monitor's scorers; the records are `pending` at once."""
        scoring = self.gateway.scoring
        outcomes = [
            scoring.skip(job, "no_text") if not text.strip() else scoring.submit(job, [text])
            for job, text in zip(jobs, texts, strict=True)
        ]
        self.note(outcomes)
        return outcomes

    def note(self, outcomes: list[Outcome]) -> None:
        """The access line's bias fields: those of the one text, or of the worst of many."""
        scored = [outcome for outcome in outcomes if outcome.score is not None]
        shown = max(scored, key=lambda outcome: outcome.score or 0.0) if scored else outcomes[0]
        state = self.state
        state.bias_status, state.verdict = shown.status, shown.verdict
        state.score, state.run_id = shown.score, shown.run_id


def text_list(value: object, field: str) -> list[str]:
    """A non-empty list of at most `MAX_TEXTS` strings, or a 400 naming `field`."""
    if not isinstance(value, list) or not value:
        raise BadRequest(f"`{field}` must be a non-empty array.", param=field)
    if len(value) > MAX_TEXTS:
        raise BadRequest(
            f"`{field}` holds {len(value)} texts; at most {MAX_TEXTS} are scored in one request.",
            param=field,
        )
    if not all(isinstance(item, str) for item in value):
        raise BadRequest(f"Each entry of `{field}` must be a string.", param=field)
    return [valid_text(item) for item in value]


def bias_object(outcome: Outcome, *, scale: float, policy: str) -> dict[str, Any]:
    """What the gateway knows of one text's scoring: its score on the 0..scale range,
    the policy's verdict, and each opinion with the judge's verdict and reason."""
    result = outcome.result
    opinions: list[dict[str, Any]] = []
    if result is not None:
        found = result.preprocess_step_result.opinions
        for index, verdict in enumerate(result.analyze_step_result.results):
            opinions.append(
                {
                    # With no opinion found, the whole text was judged as one.
                    "opinion": found[index] if index < len(found) else None,
                    "biased": is_biased(verdict.result),
                    "result": verdict.result,
                    "reason": verdict.reason,
                    "categories": verdict.categories,
                }
            )
    return {
        "run_id": outcome.run_id,
        "status": outcome.status,
        "policy": policy,
        "score": outcome.score,
        "scale": scale,
        "verdict": outcome.verdict,
        "categories": outcome.categories,
        "reason": outcome.reason,
        "reason_status": outcome.reason_status,
        "opinions": opinions,
        "cached": outcome.cached,
        **_not_scored(outcome),
    }


def _not_scored(outcome: Outcome) -> Mapping[str, Any]:
    if outcome.status == "skipped":
        return {"skip_reason": outcome.status_reason}
    if outcome.status == "error":
        return {"error_type": outcome.status_reason}
    return {}
