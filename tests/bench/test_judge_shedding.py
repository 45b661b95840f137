"""The judge-shedding bench's pieces: slices of a run, the biased fake's replies, the table."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from bench.fakes.paced import BIASED_MARK, Pace, PacedFake
from bench.judge import shedding as judge_shedding
from testkit.servers import ServerThread


def test_slices_give_the_scored_share_of_each_ten_seconds() -> None:
    sent = [(0.5, True), (3.0, True), (9.9, False), (10.0, True), (15.0, True), (25.0, False)]
    mean, shares = judge_shedding.slices(sent)
    assert mean == pytest.approx(4 / 6, abs=1e-4)
    assert shares == [pytest.approx(2 / 3, abs=1e-4), 1.0, 0.0]
    assert judge_shedding.slices([]) == (None, [])


def test_every_nth_reply_of_the_fake_is_biased_and_judged_so() -> None:
    fake = PacedFake(
        Pace(
            chunks=2,
            ttft=0.0,
            chunk_interval=0.0,
            judge_latency=0.0,
            jitter=0.0,
            biased_every=3,
        )
    )
    server = ServerThread(fake.app).start()
    try:
        with httpx.Client(base_url=server.url) as client:
            replies = [
                client.post(
                    "/v1/chat/completions",
                    json={"model": "m", "messages": [{"role": "user", "content": "Hi"}]},
                ).json()["choices"][0]["message"]["content"]
                for _ in range(6)
            ]
            judged = client.post(
                "/v1/chat/completions",
                json={
                    "model": "judge",
                    "messages": [{"role": "user", "content": f"TEXT:\n{replies[2]}"}],
                    "response_format": {"type": "json_schema", "json_schema": {"name": "verdicts"}},
                },
            ).json()["choices"][0]["message"]["content"]
    finally:
        server.stop()
    assert [BIASED_MARK in reply for reply in replies] == [False, False, True] * 2
    assert '"result": "yes"' in judged


def test_the_table_has_a_row_per_cell() -> None:
    cell: dict[str, Any] = {
        "cell": "faithful",
        "sent": 10,
        "scored_within_30s": 0.9,
        "records": {"scored": 9, "skipped:overload_sampled": 1},
        "errors": 0,
        "slice_shares": [1.0, 0.8],
        "slices_off_mean_max": 0.1,
        "judge_calls_per_response": 2.1,
        "judge_429s": 0,
        "client_p50_ms": 500.0,
    }
    result = {
        "plan": {"rate": 300.0, "duration": 60.0, "judge_rps": 600.0, "biased_every": 10,
                 "concurrency": 600, "queue_size": 4000},
        "cells": [cell],
        "date": "2026-12-02-0600",
        "machine": "2 cores",
        "load_before": [1.0, 1.0, 1.0],
        "load_after": [1.0, 1.0, 1.0],
        "commit": "abc",
    }  # fmt: skip
    table = judge_shedding.markdown(result)
    assert (
        "| faithful | 10 | 0.9 | scored 9, skipped:overload_sampled 1 | 0 | 1.000 0.800 |" in table
    )
