"""The runtime resources one app instance owns, built in its lifespan."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.config import Settings
from gateway.observability.metrics import Metrics
from gateway.observability.traces import Telemetry
from gateway.runtime.keys import Authenticator
from gateway.runtime.quotas import Quotas
from gateway.scoring.policy import Sampler
from gateway.scoring.service import Scoring
from gateway.store import Store
from gateway.upstream.client import Upstream
from gateway.upstream.routing import Router

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
    quotas: Quotas
    samplers: dict[str, Sampler] = field(default_factory=dict)
    ready: bool = False
