"""`BiasGuardrail`: the bias judge inside LiteLLM's proxy, as one of its guardrails.

Name it in LiteLLM's `config.yaml`; the proxy imports it from this package:

    guardrails:
      - guardrail_name: bias
        litellm_params:
          guardrail: gateway.integrations.litellm.BiasGuardrail
          mode: post_call            # or pre_call (the user's input), or both
          gateway_config: /etc/bias-gateway/gateway.yaml  # unset: the environment variables
          bias_policy: default       # the policy whose mode and thresholds apply

It scores with `guard` directly, in LiteLLM's process, with the gateway
config's judge, categories, scale and thresholds. The policy's `mode` decides:
`enforce` blocks a `block` verdict with the policy's `block_status` (and a
judge failure too under `on_judge_error: block`); `monitor` never blocks. Either
way the score goes back in the response headers (`x-bias-status`,
`x-bias-score`, `x-bias-verdict`, `x-bias-categories`, `x-bias-run-id`) and in
the request's metadata (`bias`), which LiteLLM's loggers receive. Nothing is
stored: the gateway's store belongs to the gateway (use its `/v1/moderations`
as LiteLLM's `openai_moderation` backend for that).

litellm is imported only here, so this module needs the LiteLLM proxy installed;
nothing else in the package imports it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any, Literal

from fastapi import HTTPException
from litellm.integrations.custom_guardrail import CustomGuardrail

from gateway.config import Policy, Settings, load_settings, settings_from_env
from gateway.domain import Mode, PolicyVerdict
from gateway.proxy.surfaces.base import content_text
from gateway.scoring.policy import block_reason, verdict_for
from gateway.wire.tools import ToolArgument, arguments_of, with_tool_lines
from guard import BiasScorer, JudgeError, create_bias_scorer

__all__ = ["BiasGuardrail"]

log = logging.getLogger("bias_gateway.litellm")
_METADATA = "bias"  # the key under the request's `metadata`


class BiasGuardrail(CustomGuardrail):
    """A LiteLLM guardrail that judges texts for bias under a gateway policy."""

    def __init__(
        self,
        *,
        gateway_config: str | None = None,
        bias_policy: str | None = None,
        bias_mode: Mode | None = None,
        streaming_buffer_until_moderated: bool = True,
        **kwargs: Any,
    ) -> None:
        """`gateway_config`: the gateway's YAML file (unset: the environment variables);
        `bias_policy`: a policy's name in it (unset: its default policy); `bias_mode`
        overrides the policy's mode (`monitor` or `enforce`)."""
        super().__init__(**kwargs)
        # A stream is judged once, whole, before any of it is sent (the gateway's
        # `stream_policy: buffer`); LiteLLM's default would run the whole judge every
        # fifth chunk and send what came before a block.
        self.streaming_buffer_until_moderated = streaming_buffer_until_moderated
        self.settings: Settings = (
            load_settings(gateway_config) if gateway_config else settings_from_env()
        )
        name = bias_policy or self.settings.default_policy
        if name not in self.settings.policies:
            raise ValueError(
                f"BiasGuardrail: no policy {name!r} in the gateway config"
                f" ({', '.join(sorted(self.settings.policies))})"
            )
        self.policy_name = name
        self.policy: Policy = self.settings.policies[name]
        self.mode: Mode = bias_mode or self.policy.mode
        self.scorer: BiasScorer = _scorer(self.settings)

    async def apply_guardrail(
        self,
        inputs: Any,
        request_data: dict[str, Any],
        input_type: Literal["request", "response"],
        logging_obj: Any = None,
    ) -> Any:
        """Judge the user's input (`request`) or the model's answer (`response`): its
        texts and, as the gateway does (`judge_tool_arguments`), the string arguments of
        its tool calls."""
        text = self._text(inputs, input_type)
        arguments = _tool_arguments(inputs) if input_type == "response" else []
        if arguments and self.policy.judge_tool_arguments:
            text = with_tool_lines([text] if text.strip() else [], arguments)[0]
        else:
            arguments = []
        if self.mode == "off" or not text.strip():
            return inputs
        details = await self.judge(text)
        details["input_type"] = input_type
        if arguments:
            details["tool_arguments"] = [
                {"tool": argument.tool, "argument": argument.argument} for argument in arguments
            ]
        _metadata(request_data)[_METADATA] = details
        if self.mode == "enforce":
            self._enforce(details)
        return inputs

    async def judge(self, text: str) -> dict[str, Any]:
        """The score of `text` and the policy's verdict, as the headers and metadata carry it."""
        run_id = str(uuid.uuid4())
        try:
            result = await self.scorer.run(output=text, run_id=run_id)
        except JudgeError as exc:
            log.error("bias judge failed: %s (run %s)", type(exc).__name__, run_id)
            return {"status": "error", "run_id": run_id, "error_type": type(exc).__name__}
        verdict: PolicyVerdict = verdict_for(result.score, result.biased_count, self.policy)
        if verdict != "pass":
            log.warning("bias %s: score %s (run %s)", verdict, result.score, run_id)
        return {
            "status": "scored",
            "run_id": run_id,
            "score": result.score,
            "scale": result.scale,
            "verdict": verdict,
            "biased_opinions": result.biased_count,
            "categories": result.categories,
            "reason": result.reason,
            "policy": self.policy_name,
            "mode": self.mode,
        }

    def _text(self, inputs: Any, input_type: str) -> str:
        """The last user message of a request (what its user just said), or every text
        of an answer."""
        if input_type == "request":
            for message in reversed(inputs.get("structured_messages") or []):
                if isinstance(message, dict) and message.get("role") == "user":
                    return content_text(message.get("content"), separator="\n")
        texts = inputs.get("texts") or []
        return "\n".join(text for text in texts if isinstance(text, str))

    def _enforce(self, details: Mapping[str, Any]) -> None:
        if details["status"] == "error":
            if self.policy.on_judge_error == "block":
                raise HTTPException(
                    status_code=503,
                    detail={
                        "error": "The bias judge failed and the policy blocks unscored texts.",
                        "code": "bias_judge_unavailable",
                        "bias": dict(details),
                    },
                )
            return
        if details["verdict"] == "block":
            raise HTTPException(
                status_code=self.policy.block_status,
                detail={
                    "error": "Blocked by the bias policy: "
                    + block_reason(details["score"], details["biased_opinions"], self.policy)
                    + ".",
                    "code": "bias_threshold_exceeded",
                    "bias": dict(details),
                },
            )

    async def async_post_call_response_headers_hook(
        self,
        data: dict[str, Any],
        user_api_key_dict: Any,
        response: Any,
        request_headers: dict[str, str] | None = None,
        litellm_call_info: dict[str, Any] | None = None,
    ) -> dict[str, str] | None:
        """The `x-bias-*` headers of the last text this guardrail judged for the request."""
        details = _metadata(data).get(_METADATA)
        if not isinstance(details, dict):
            return None
        headers = {"x-bias-status": str(details["status"]), "x-bias-run-id": details["run_id"]}
        if details["status"] == "scored":
            headers["x-bias-score"] = f"{details['score']:g}"
            headers["x-bias-verdict"] = details["verdict"]
            headers["x-bias-biased-opinions"] = str(details["biased_opinions"])
            headers["x-bias-categories"] = ",".join(details["categories"])
        return headers


def _scorer(settings: Settings) -> BiasScorer:
    judge = settings.judge
    api_key = settings.judge_api_key()
    return create_bias_scorer(
        judge.model,
        # A `provider/model` judge without a base URL goes through litellm, as in the gateway.
        base_url=None
        if "/" in judge.model and judge.base_url is None
        else settings.judge_base_url(),
        api_key=api_key.get_secret_value() if api_key is not None else None,
        timeout=judge.timeout,
        max_retries=judge.max_retries,
        scale=judge.scale,
        reason="off" if judge.explanations.mode == "off" else "inline",
        pipeline=judge.pipeline,
        judge_whole_text_when_no_opinions=judge.judge_whole_text_when_no_opinions,
        categories=judge.bias_categories(),
        reason_language=judge.explanations.language,
    )


def _tool_arguments(inputs: Any) -> list[ToolArgument]:
    """The string arguments of the answer's tool calls, as LiteLLM hands them over
    (`tool_calls`: OpenAI's `{"function": {"name", "arguments"}}`, or a server tool's
    `{"name", "arguments" or "input"}`)."""
    found: list[ToolArgument] = []
    calls = inputs.get("tool_calls") if isinstance(inputs, Mapping) else None
    for given in calls if isinstance(calls, list) else []:
        call = given.model_dump() if hasattr(given, "model_dump") else given
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        named = function if isinstance(function, Mapping) else call
        given = named.get("arguments", named.get("input"))
        found += arguments_of(named.get("name"), given)
    return found


def _metadata(request_data: dict[str, Any]) -> dict[str, Any]:
    metadata = request_data.get("metadata")
    if not isinstance(metadata, dict):
        metadata = request_data["metadata"] = {}
    return metadata
