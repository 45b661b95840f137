"""A client's request taken in: its key, its policy, its body within the size limit, its
mode, its key's place (quota) and whether it is sampled.

Every endpoint that works for a client key takes its request in through `Intake`:
the scored surfaces (`gateway.proxy.pipeline`), the direct calls
(`gateway.proxy.direct`: moderations and bias scores) and the pass-through
(`gateway.proxy.passthrough`). `Intake.open` checks the key and finds its policy;
each endpoint then takes the steps it needs, in its own order, and the intake
keeps what each step found:

- the scored path: `body`, (parse and route), `resolve_mode`, `admit`, `sample`;
- a direct call: `body`, `admit` (it is always judged, in the mode it asks for);
- the pass-through: `resolve_mode` (for a path with model text), `admit`, `body`.

`admit` comes after every step that may refuse the request before its answer
starts, so that a place it takes is never lost; whoever admits releases.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import ClientDisconnect, Request

from gateway.config import KeySettings, Policy
from gateway.domain import MODES, Api, Mode
from gateway.errors import BadRequest, PayloadTooLarge
from gateway.observability.access import CallState, call_state
from gateway.runtime.quotas import KeyQuota
from gateway.runtime.resources import Gateway

__all__ = ["Intake", "gateway_of", "read_body", "resolve_mode"]


def gateway_of(request: Request) -> Gateway:
    """The gateway a request works with, read once at its start: a reload publishes a
    new one for the requests after (`gateway.runtime.reconfigure`)."""
    gateway: Gateway = request.app.state.gateway
    return gateway


@dataclass(slots=True)
class Intake:
    """One request as taken in: the facts each intake step found, filled once.

    `mode` is None until `resolve_mode` runs, `quota` None until `admit` takes a place
    (or for a key without limits), `sampled` False until `sample` says otherwise.
    """

    gateway: Gateway
    request: Request
    state: CallState
    key: KeySettings | None
    key_name: str | None  # the key's name, None in open mode
    policy_name: str
    policy: Policy
    mode: Mode | None = None
    quota: KeyQuota | None = None
    sampled: bool = False

    @classmethod
    def open(cls, gateway: Gateway, request: Request, *, api: Api | None = None) -> Intake:
        """Check the client key (401 without a valid one) and find the policy it follows,
        in `gateway`, the snapshot the request read at its start (`gateway_of`). `api` names the
        endpoint on the access line (the pass-through names none)."""
        state = call_state(request.scope)
        if api is not None:
            state.api = api
        key = gateway.auth.check(request.headers)
        state.key_name = key_name = key.name if key else None
        policy_name, policy = gateway.settings.policy_for(key)
        return cls(gateway, request, state, key, key_name, policy_name, policy)

    async def body(self) -> bytes:
        """The request body, refused (413) past `server.max_body_bytes`."""
        return await read_body(self.request, self.gateway.settings.server.max_body_bytes)

    def resolve_mode(self) -> Mode:
        """The mode the request runs in: the policy's, or the client's `x-bias-mode`
        where the policy allows it (400 for a mode that is none)."""
        self.mode = resolve_mode(self.policy, self.request.headers.get("x-bias-mode"))
        return self.mode

    def admit(self) -> KeyQuota | None:
        """Take the key's place (429 past its limits); `release` gives it back."""
        self.quota = self.gateway.quotas.admit(self.key)
        return self.quota

    def sample(self) -> bool:
        """Whether the request is scored: a mode other than `off`, and the policy's
        sampler's turn. Runs after `resolve_mode`."""
        assert self.mode is not None, "resolve_mode runs before sample"
        self.sampled = self.mode != "off" and self.gateway.samplers[self.policy_name].take()
        return self.sampled

    def release(self) -> None:
        """Give back the key's place, if `admit` took one."""
        if self.quota is not None:
            self.quota.release()


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"Request body exceeds the {limit} byte limit.")
    # `receive` itself, not `request.stream()`: an async generator per request costs
    # asyncio a WeakSet entry, a visible share of a mode-off request's profile.
    parts: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        part: bytes = message.get("body", b"")
        more = message.get("more_body", False)
        size += len(part)
        if size > limit:
            raise PayloadTooLarge(f"Request body exceeds the {limit} byte limit.")
        parts.append(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def resolve_mode(policy: Policy, requested: str | None) -> Mode:
    """The policy's mode, or the client's `x-bias-mode` where the policy allows it."""
    if requested is None or not policy.allow_client_override:
        return policy.mode
    wanted = requested.strip().lower()
    for mode in MODES:
        if wanted == mode:
            return mode
    raise BadRequest(f"x-bias-mode must be one of {', '.join(MODES)}.", param="x-bias-mode")
