"""Driving a gateway with the live probe on, as its tests do: a chat by the openai SDK,
the probe's counters from `/metrics`, waiting for its pairs, and its findings."""

from __future__ import annotations

from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway

__all__ = ["ask", "dropped", "findings", "replays", "scraped", "settled"]


def ask(gateway: RunningGateway, prompt: str, seed: int) -> bytes:
    """One chat through the gateway, as the client received its body."""
    with gateway.client() as client:
        raw = client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": prompt}], seed=seed, temperature=0.3
        )
    return raw.http_response.content


def scraped(gateway: RunningGateway) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with gateway.http("sk-admin") as http:
        text = http.get("/metrics").text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def replays(gateway: RunningGateway, outcome: str = "answered") -> float:
    return scraped(gateway).get(("bias_probe_replays_total", (("outcome", outcome),)), 0.0)


def dropped(gateway: RunningGateway, reason: str) -> float:
    key = ("bias_probe_replays_dropped_total", (("reason", reason),))
    return scraped(gateway).get(key, 0.0)


def settled(gateway: RunningGateway, count: int) -> None:
    """Wait until `count` replays were answered and every probe has stored its pairs."""
    wait_for(
        lambda: replays(gateway) == count and not gateway.state.probe.tasks,
        lambda: f"{count} replays answered and stored, saw {replays(gateway)}",
        timeout=60,
    )


def findings(gateway: RunningGateway, api_key: str = "sk-admin", **params: Any) -> httpx.Response:
    with gateway.http(api_key) as http:
        return http.get("/v1/bias/probe/findings", params=params)
