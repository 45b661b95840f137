"""`LiveProbe` across a reload: what it keeps of the one it replaces."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.probe import LiveProbe
from tests.support.gateways import RunningGateway


def rebuilt(gateway: RunningGateway, previous: LiveProbe, **probe: Any) -> LiveProbe:
    state = gateway.state
    fields = {**state.settings.probe.model_dump(), **probe}
    settings = state.settings.model_copy(
        update={"probe": state.settings.probe.model_validate(fields)}
    )
    return LiveProbe(
        settings,
        store=state.store,
        scoring=state.scoring,
        upstream=state.upstream,
        metrics=state.metrics,
        previous=previous,
    )


def test_a_reload_keeps_the_replays_in_flight_and_what_did_not_change(
    probed: Callable[..., RunningGateway],
) -> None:
    gateway = probed(sample_rate=0.5)
    old = gateway.state.probe
    same = rebuilt(gateway, old)
    assert same.tasks is old.tasks  # shutdown still stops the replays the old one started
    assert (same.sampler, same.caps) == (old.sampler, old.caps)
    capped = rebuilt(gateway, old, max_per_minute=7)
    assert capped.sampler is old.sampler
    assert capped.caps is not old.caps
    assert capped.caps.max_per_minute == 7
    resampled = rebuilt(gateway, old, sample_rate=0.25)
    assert resampled.sampler is not old.sampler
    assert resampled.caps is old.caps
    off = rebuilt(gateway, old, sample_rate=0)
    assert not off.enabled
    assert not off.take()
    assert off.tasks is old.tasks
