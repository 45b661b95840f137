"""The runtime resources one app instance owns, built in its lifespan."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.config import Settings
from gateway.observability.metrics import Metrics
from gateway.observability.traces import Telemetry
from gateway.probe import LiveProbe
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
    """What a request works with. A request reads it once, at its start, and keeps it:
    a reload publishes a new one (`gateway.runtime.reconfigure`) for the requests after."""

    settings: Settings
    router: Router
    auth: Authenticator
    upstream: Upstream
    store: Store
    scoring: Scoring
    telemetry: Telemetry
    metrics: Metrics
    quotas: Quotas
    probe: LiveProbe
    samplers: dict[str, Sampler] = field(default_factory=dict)
    ready: bool = False

    @classmethod
    def build(
        cls,
        settings: Settings,
        *,
        upstream: Upstream,
        store: Store,
        scoring: Scoring,
        telemetry: Telemetry,
        metrics: Metrics,
        previous: Gateway | None = None,
    ) -> Gateway:
        """The gateway of `settings` over running parts. With `previous` (the one a
        reload replaces), a key whose limits stay keeps its quota, and a policy whose
        sample rate stays keeps its sampler, so neither starts counting again; the live
        probe keeps its replays in flight, and its sampler and caps where they stay."""
        keys = settings.all_keys()
        kept = previous.samplers if previous is not None else {}
        samplers: dict[str, Sampler] = {}
        for name, policy in settings.policies.items():
            sampler = kept.get(name)
            if sampler is None or sampler.rate != policy.sample_rate:
                sampler = Sampler(policy.sample_rate)
            samplers[name] = sampler
        return cls(
            settings=settings,
            router=Router(settings),
            auth=Authenticator(keys),
            upstream=upstream,
            store=store,
            scoring=scoring,
            telemetry=telemetry,
            metrics=metrics,
            quotas=Quotas(
                keys,
                settings.limits,
                on_limited=lambda key, limit: metrics.key_limited.labels(key, limit).inc(),
                previous=previous.quotas if previous is not None else None,
            ),
            probe=LiveProbe(
                settings,
                store=store,
                scoring=scoring,
                upstream=upstream,
                metrics=metrics,
                previous=previous.probe if previous is not None else None,
            ),
            samplers=samplers,
        )
