"""The judge lanes bench's pieces: keyed paced load, the allowance reached, the targets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bench.fakes.paced import Pace, PacedFake
from bench.judge import lanes as judge_lanes
from bench.judge import lanes_report
from testkit.servers import ServerThread


@pytest.fixture
def slow_upstream() -> Any:
    fake = PacedFake(Pace(chunks=2, ttft=0.05, chunk_interval=0.01, judge_latency=0.1, jitter=0.3))
    server = ServerThread(fake.app).start()
    yield fake, server
    server.stop()


def test_each_stream_is_paced_with_its_own_key(slow_upstream: Any) -> None:
    fake, server = slow_upstream
    streams = (("enforce", 20.0), ("small", 10.0))
    loads, _ = asyncio.run(judge_lanes._run_streams(server.url, streams, 0.5))
    assert [len(load.sent) for load in loads] == [10, 5]
    assert all(sent.status == 200 for load in loads for sent in load.sent)
    keys = [r.headers.get("authorization") for r in fake.requests if r.step == "chat"]
    assert sorted(set(keys)) == ["Bearer sk-enforce", "Bearer sk-small"]
    assert keys.count("Bearer sk-small") == 5


def test_the_allowance_is_reached_when_a_second_of_answers_passes_80_percent() -> None:
    samples = [
        {"t": 0.0, "answered": 0.0, "rate_limited": 0.0},
        {"t": 1.0, "answered": 100.0, "rate_limited": 0.0},
        {"t": 2.0, "answered": 500.0, "rate_limited": 2.0},
        {"t": 3.0, "answered": 1000.0, "rate_limited": 2.0, "limit": 540.0},
    ]
    found = judge_lanes._allowance(samples, 600.0)
    assert found == {"reached_80pct_s": 3.0, "share_429": 0.002, "peak_limit": 540.0}
    assert judge_lanes._allowance(samples[:3], 600.0)["reached_80pct_s"] is None
    assert judge_lanes._allowance(samples, 150.0)["reached_80pct_s"] == 2.0


def test_a_scaled_cell_keeps_its_shape() -> None:
    shipped = judge_lanes.Cell("two", (("monitor", 280.0), ("small", 20.0)))
    quarter = judge_lanes._scaled(shipped, 0.25)
    assert quarter.streams == (("monitor", 70.0), ("small", 5.0))
    assert quarter.judge == {"max_concurrency": 128}
    auto = judge_lanes.Cell("auto", (("monitor", 300.0),), {"max_concurrency": "auto"})
    assert judge_lanes._scaled(auto, 0.25).judge == {
        "max_concurrency": "auto",
        "concurrency_ceiling": 128,
    }
    assert judge_lanes._scaled(shipped, 1.0) is shipped


def cell(name: str, streams: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"cell": name, "judge": {}, "streams": streams, **extra}


def test_targets_judge_the_cells_that_ran() -> None:
    results: dict[str, Any] = {
        "direct": {"baseline": {"p50_ms": 500.0}, "full": {"p50_ms": 500.0}},
        "cells": [
            cell("enforce alone 20", [{"key": "enforce", "p50_ms": 2500.0}]),
            cell("enforce 50 + monitor 250", [{"key": "enforce", "p50_ms": 3100.0}]),
            cell("monitor two keys 280 + 20", [{"key": "small", "scored": 0.98}]),
        ],
    }
    found = {target["name"]: target for target in lanes_report.targets(results)}
    ratio = found["enforce beside monitor: p50 overhead / at 20 req/s alone"]
    assert (ratio["measured"], ratio["met"]) == (1.3, True)
    assert found["two keys: the 20 req/s key scored"]["met"] is False
    auto = cell("auto", [], judge={"max_concurrency": "auto"}, reached_80pct_s=12.0, share_429=0.02)
    results["cells"] = [*results["cells"][2:], auto]
    names = [(target["name"], target["met"]) for target in lanes_report.targets(results)]
    assert names == [
        ("two keys: the 20 req/s key scored", False),
        ("auto: 80 % of the judge's allowance reached after", True),
        ("auto: 429s of judge calls", False),
    ]
