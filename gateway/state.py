"""The runtime resources one app instance owns, built in its lifespan."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.auth import Authenticator
from gateway.config import Settings
from gateway.metrics import Metrics
from gateway.policy import Sampler
from gateway.routing import Router
from gateway.scoring import Scoring
from gateway.store import Store
from gateway.telemetry import Telemetry
from gateway.upstream import Upstream

__all__ = ["Gateway"]


@dataclass(slots=True)
class Gateway:
    settings: Settings
    router: Router
    auth: Authenticator
    upstream: Upstream
    store: Store
    scoring: Scoring
    telemetry: Telemetry
    metrics: Metrics
    samplers: dict[str, Sampler] = field(default_factory=dict)
    ready: bool = False
