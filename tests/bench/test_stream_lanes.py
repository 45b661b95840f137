"""The stream lanes bench's pieces: its gateway settings, the paced load, the figures and
targets, the report."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bench.fakes.paced import Pace, PacedFake
from bench.judge import stream_lanes
from gateway.config.loading import load_settings
from testkit.servers import ServerThread
from testkit.waiting import eventually


@pytest.mark.parametrize("variant", stream_lanes.VARIANTS, ids=lambda variant: variant.name)
def test_every_cell_configures_a_gateway_that_loads(
    variant: stream_lanes.Variant, tmp_path: Path
) -> None:
    settings = stream_lanes.settings_for("http://up", "http://judge", tmp_path / "s.db", variant)
    path = tmp_path / "gateway.yaml"
    path.write_text(json.dumps(settings))  # JSON is YAML
    loaded = load_settings(path)
    assert loaded.judge.limits.max_concurrency == 60
    assert loaded.judge.cache.size == 0
    weights = {key.name: key.weight for key in loaded.keys}
    assert weights == {"enforce": 1.0, "monitor": 20.0}
    strict = loaded.policies["strict"]
    assert (strict.mode, loaded.policies["default"].mode) == ("enforce", "monitor")
    assert strict.stream_policy == variant.policy.get("stream_policy", strict.stream_policy)
    if variant.name == "stream windowed":
        assert (strict.stream_policy, strict.windows.hold) == ("windowed", "window")
    expected = "stream" if "prejudge" in variant.name else "off"
    assert loaded.upstream.prejudge == expected


def test_the_load_is_paced_until_stopped_with_its_key_and_its_own_answers() -> None:
    fake = PacedFake(Pace(chunks=2, ttft=0.01, chunk_interval=0.0, judge_latency=0.1, jitter=0.0))
    server = ServerThread(fake.app).start()

    async def load() -> list[stream_lanes.Sent]:
        async with aiohttp.ClientSession() as session:
            stop = asyncio.Event()
            sending = asyncio.create_task(
                stream_lanes.paced(
                    session, server.url, "monitor", rate=50.0, stream=True, first_serial=7,
                    stop=stop,
                )
            )  # fmt: skip
            await eventually(lambda: sum(r.step == "chat" for r in fake.requests) >= 3, "3 sent")
            stop.set()
            return await sending

    try:
        sent = asyncio.run(load())
    finally:
        server.stop()
    assert len(sent) >= 3
    assert all(one.status == 200 and one.first_ms is not None for one in sent)
    chats = [request for request in fake.requests if request.step == "chat"]
    assert sorted(int(request.body["user"]) for request in chats) == list(range(7, 7 + len(sent)))
    assert {request.headers["authorization"] for request in chats} == {"Bearer sk-monitor"}
    assert all(request.body["stream"] is True for request in chats)


def sent(total_ms: float, status: int | None = 200) -> stream_lanes.Sent:
    run_id = f"run-{total_ms:g}"
    return stream_lanes.Sent(0.0, total_ms / 2, total_ms, status, run_id)


def test_a_summary_counts_every_request_and_times_the_answered_ones() -> None:
    records = {f"run-{ms}": "scored" for ms in range(1000, 1800, 100)} | {"run-1800": "error"}
    found = stream_lanes.summary(
        [sent(float(ms)) for ms in range(1000, 2000, 100)] + [sent(9000.0, 502), sent(0.0, None)],
        records,
    )
    assert found == {
        "n": 12,
        "answered": 10,
        "statuses": {"200": 10, "502": 1, "client error": 1},
        "scored": 8,
        "p50_ms": 1450.0,
        "p95_ms": 1855.0,
        "first_byte_p50_ms": 725.0,
    }


def cell(name: str, alone: float, beside: float, failed: int = 0) -> dict[str, Any]:
    def side(p50: float, failed: int) -> dict[str, Any]:
        statuses = {"200": 40 - failed, **({"502": failed} if failed else {})}
        return {"n": 40, "answered": 40 - failed, "statuses": statuses, "scored": 40 - failed,
                "p50_ms": p50, "p95_ms": p50 * 1.2, "first_byte_p50_ms": 300.0}  # fmt: skip

    lanes = {"enforce": {"calls": 240.0, "mean_wait_ms": 3.0}, "monitor": {"mean_wait_ms": 900.0}}
    return stream_lanes.ratios(
        {
            "variant": name, "alone": side(alone, 0), "beside": side(beside, failed),
            "judge_calls_per_answer": 6.0, "judge_calls_per_s_beside": 59.8,
            "lanes_alone": {}, "lanes_beside": lanes,
        }
    )  # fmt: skip


def test_targets_hold_each_cell_to_its_own_latency_alone() -> None:
    cells = [cell("whole", 3600.0, 3700.0), cell("stream buffer", 2200.0, 14600.0, failed=2)]
    assert (cells[1]["ratio_p50"], cells[1]["ratio_p95"]) == (6.64, 6.64)
    found = [(t["name"], t["measured"], t["met"]) for t in stream_lanes.targets(cells)]
    assert found == [
        ("whole: p50 beside / alone", 1.03, True),
        ("whole: enforced requests answered 200 and scored", "80, 80 of 80", True),
        ("stream buffer: p50 beside / alone", 6.64, False),
        ("stream buffer: enforced requests answered 200 and scored", "78, 78 of 80", False),
    ]


def test_the_report_names_the_machine_the_command_and_the_target() -> None:
    cells = [cell("stream windowed", 3500.0, 3650.0)]
    meta = {
        "date": "2026-12-03-1500", "machine": "2 cores (a CPU), Python 3.11.7",
        "commit": "636d2b7", "command": "python -m bench stream_lanes --duration 5",
        "load_average_before": [1.0, 1.0, 1.0], "load_average_after": [2.0, 1.5, 1.0],
    }  # fmt: skip
    results = {
        "meta": meta,
        "duration": 5.0,
        "cells": cells,
        "targets": stream_lanes.targets(cells),
    }
    text = stream_lanes.report(results)
    assert "Machine: 2 cores (a CPU), Python 3.11.7" in text
    assert "Command: `python -m bench stream_lanes --duration 5`" in text
    assert "Target: p50 beside / alone ≤ 1.3 in every cell." in text
    row = next(line for line in text.splitlines() if line.startswith("| stream windowed |"))
    assert row.split(" | ")[1:5] == ["40 / 40", "3,500", "3,650", "1.04"]
    assert "| stream windowed: p50 beside / alone | ≤ 1.3 | 1.04 | yes |" in text
