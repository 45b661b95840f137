"""The scored path, written once for every surface: route, call the upstream, tap the
stream, score, decide, render, store, observe; then, the answer sent, offer the
request to the live probe (`gateway.proxy.probing`).

`ScoredEndpoint(surface)` is the ASGI endpoint of one surface's route. A
monitored request holds its place in the scoring queue (`MonitorQueue.reservation`)
for as long as its response is being sent, so a stream's text, scored once the
stream ends, always finds room.
"""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from gateway.errors import BadRequest, GatewayError
from gateway.proxy.call import ScoredCall
from gateway.proxy.decisions import Refusal
from gateway.proxy.deliveries import deliver
from gateway.proxy.exchange import UpstreamCall
from gateway.proxy.intake import Intake, gateway_of
from gateway.proxy.probing import offer_to_probe
from gateway.proxy.surfaces import Surface
from gateway.runtime.resources import Gateway
from gateway.scoring.request import ScoreRequest
from gateway.upstream.client import Target

__all__ = ["ScoredEndpoint"]


class ScoredEndpoint:
    """The ASGI endpoint of one surface. Errors before the answer starts are written in the
    surface's own error shape, so each SDK raises its own exception type."""

    def __init__(self, surface: Surface) -> None:
        self.surface = surface

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        gateway = gateway_of(request)
        try:
            call = await self._begin(gateway, request)
        except GatewayError as exc:
            await self._error(exc)(scope, receive, send)
            return
        try:
            if not gateway.scoring.reserves(call.job):
                # Most requests: no place to hold, so no context manager to enter (its
                # generator would add calls to every mode-off request; `bench.calls`).
                await self._respond(call, True, scope, receive, send)
            else:
                async with gateway.scoring.reservation(call.job) as admitted:
                    await self._respond(call, admitted, scope, receive, send)
        finally:
            if call.quota is not None:  # held until the whole answer, stream or not, is sent
                call.quota.release()
        if gateway.probe.enabled:  # the answer has gone: the client waits for none of it
            offer_to_probe(call)

    async def _respond(
        self, call: ScoredCall, admitted: bool, scope: Scope, receive: Receive, send: Send
    ) -> None:
        try:
            response = await deliver(call, admitted)
        except GatewayError as exc:
            response = self._error(exc)
        await response(scope, receive, send)

    def _error(self, exc: GatewayError) -> Response:
        refusal = Refusal.of(exc)
        return JSONResponse(
            self.surface.error_body(refusal), status_code=refusal.status, headers=exc.headers()
        )

    async def _begin(self, gateway: Gateway, request: Request) -> ScoredCall:
        intake = Intake.open(gateway, request, api=self.surface.name)
        state = intake.state
        parsed = self.surface.parse(await intake.body())
        state.model, state.stream = parsed.model, parsed.stream
        target = self._target(gateway, parsed.model)
        mode = intake.resolve_mode()
        # Last of what may refuse the request, so that a place it takes is never lost.
        quota = intake.admit()
        sampled = intake.sample()
        job = ScoreRequest(
            # Only a scored response needs a run id; skipping uuid4() keeps it off the plain path.
            run_id=str(uuid.uuid4()) if sampled else "",
            policy=intake.policy,
            policy_name=intake.policy_name,
            mode=mode,
            model=parsed.model,
            api=self.surface.name,
            key_name=intake.key_name,
            stream=parsed.stream,
            request_id=state.request_id,
            prompt=(
                self.surface.prompt_text(parsed.body)
                if gateway.settings.store.capture_content
                else None
            ),
        )
        call = UpstreamCall(gateway, request, state, self.surface, parsed, target)
        return ScoredCall(
            gateway, state, self.surface, parsed, intake.policy, mode, job, call, quota
        )

    def _target(self, gateway: Gateway, model: str) -> Target:
        if self.surface.upstream_path == "/v1/messages":
            return gateway.router.anthropic
        target = gateway.router.resolve(model)
        if target.litellm is not None and self.surface.upstream_path != "/chat/completions":
            raise BadRequest(
                f"The model `{model}` is routed through litellm, which the gateway serves on"
                " /v1/chat/completions only.",
                param="model",
            )
        return target
