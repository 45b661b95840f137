"""The bench's judging and reporting, on a committed run's results (the harness itself
needs wrk and minutes, so it is run by `make bench`, not here)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from bench.harness.client import PacedStats
from bench.peers.profile import hot_frames
from bench.peers.report import markdown
from bench.peers.runner import _median_round
from bench.peers.targets import evaluate

RUN = Path(__file__).resolve().parents[2] / "bench" / "results" / "2026-11-29-2200.json"


@pytest.fixture
def results() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(RUN.read_text())
    return loaded


def by_name(results: dict[str, Any]) -> dict[str, str]:
    return {target.name: target.status for target in evaluate(results)}


def test_judging_a_run_again_gives_the_verdicts_it_recorded(results: dict[str, Any]) -> None:
    recorded = {target["name"]: target["status"] for target in results["targets"]}
    assert by_name(results) == recorded
    assert recorded["monitor: queue drained after load stops"] == "met"


def test_a_slow_drain_and_a_lost_score_are_missed(results: dict[str, Any]) -> None:
    changed = copy.deepcopy(results)
    monitor = [cell for cell in changed["cells"] if cell["config"] == "gateway monitor"]
    monitor[1]["drain_s"] = 1.5
    monitor[0]["store"]["statuses"]["skipped:overloaded"] = 3
    verdicts = by_name(changed)
    assert verdicts["monitor: queue drained after load stops"] == "missed"
    assert verdicts["monitor: every response's score stored"] == "missed"


def test_the_paced_targets_compare_medians_and_need_their_probe(
    results: dict[str, Any],
) -> None:
    changed = copy.deepcopy(results)
    changed["paced"]["gateway monitor"]["non-stream"]["p50_ms"] = (
        changed["paced"]["gateway off"]["non-stream"]["p50_ms"] * 1.2
    )
    assert by_name(changed)["monitor c=1 p50 vs off, paced"] == "missed"
    del changed["paced"]
    assert by_name(changed)["monitor c=1 p50 vs off, paced"] == "not measured"


def test_the_report_shows_the_paced_table_and_every_target(results: dict[str, Any]) -> None:
    text = markdown(results)
    assert "| gateway monitor | 1.444 | 2.769 | 1.961 | 1.44, 1.69, 1.33 | 2400 | 0 |" in text
    for target in results["targets"]:
        assert f"| {target['name']} | {target['wanted']} |" in text


def test_median_round() -> None:
    runs = [
        PacedStats(rate=200, requests=400, p50_ms=p50, p99_ms=2.0, ttft_p50_ms=None, errors=0)
        for p50 in (1.0, 3.0, 2.0)
    ]
    summary = _median_round(runs)
    assert summary["p50_ms"] == 2.0
    assert summary["ttft_p50_ms"] is None
    assert summary["requests"] == 1200
    assert summary["round_p50_ms"] == [1.0, 3.0, 2.0]


def test_hot_frames_counts_own_and_inclusive_samples() -> None:
    collapsed = "main;serve;parse 3\nmain;serve 1\nmain;log 2\nnot a stack line\n"
    own, inclusive, total = hot_frames(collapsed, top=10)
    assert total == 6
    assert dict(own) == {"parse": 3, "serve": 1, "log": 2}
    assert dict(inclusive)["main"] == 6
    assert dict(inclusive)["serve"] == 4
