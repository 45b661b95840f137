"""`python -m bench outage` at a tiny scale: a real cluster stopped for 2 s under 10
req/s through two gateways and a scorer; the report's figures must add up, and they
must say what the store's outage test asserts (no error, no record lost, all final)."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.outage import run as outage
from bench.outage.report import PHASES
from testkit.postgres import find_bin_dir
from tests.support.postgres import unavailable

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ARGS = ["--rate", "10", "--before", "2", "--outage", "2", "--after", "2"]
ARGS += ["--judge-latency", "0.05", "--sample-interval", "0.5", "--quiet-wait", "0"]


@pytest.fixture
def pg_bin(monkeypatch: pytest.MonkeyPatch) -> Path:
    found = find_bin_dir()
    if found is None:
        unavailable()
    monkeypatch.setenv("BIAS_TEST_PG_BIN", str(found))
    return found


@pytest.fixture
def signals() -> Iterator[None]:
    """main() takes SIGINT and SIGTERM for its cleanup; give them back afterwards."""
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in kept.items():
        signal.signal(sig, handler)


def test_a_tiny_outage_reports_figures_that_add_up(
    pg_bin: Path, signals: None, tmp_path: Path
) -> None:
    out = tmp_path / "outage.md"
    assert outage.main([*ARGS, "--out", str(out)]) == 0
    found: dict[str, Any] = json.loads(out.with_suffix(".json").read_text())
    report = out.read_text()

    sent = found["sent"]
    by_phase = found["sent_by_phase"]
    assert sum(by_phase.values()) == sent
    assert min(by_phase[phase] for phase in PHASES) >= 15, by_phase
    assert 8 <= found["offered_rate"] <= 11
    # Every request is an answer or an error of some kind and phase, counted once.
    errors = found["client_errors"]
    assert sum(found["errors_by_kind"].values()) == errors
    assert sum(found["errors_by_phase"].values()) == errors
    answered = sum(found["latency"][phase]["all"]["n"] for phase in PHASES)
    assert answered == sent - errors
    for phase in PHASES:
        row = found["latency"][phase]
        assert row["monitor"]["n"] + row["enforce"]["n"] == row["all"]["n"]
    # Every announced run id has one status: final, pending or missing.
    announced = found["run_ids_announced"]
    assert announced + found["run_ids_repeated"] <= found["answered_200"]
    assert sum(found["statuses"].values()) == announced
    assert found["statuses"].get("missing", 0) == found["records_missing"]
    assert found["not_final_at_end"] <= found["not_final_at_settle"] <= announced
    assert found["rows"] == announced - found["records_missing"] + found["rows_not_announced"]
    if found["not_final_at_end"] == 0:
        assert found["all_final_after_restart_s"] >= found["backlog_final_after_restart_s"]
    # The outage itself: seen by every process, the gateways' buffers filled and drained.
    assert 1.9 <= found["outage_s"] < 10
    for name in ("gateway-1", "gateway-2", "scorer"):
        process = found["processes"][name]
        assert set(process["readyz_during"]) == {"503"}, (name, process)
        assert process["readyz_200_after_s"] is not None
        # Balanced: a process that had nothing to write in a 2 s outage logs neither.
        assert found["logs"][name]["store_unavailable"] == found["logs"][name]["store_back"]
    for name in ("gateway-1", "gateway-2"):
        # A gateway writes with every request: it met the outage and saw the end of it.
        assert found["logs"][name]["store_unavailable"] >= 1
        assert found["processes"][name]["buffer_peak"] >= 1
        assert found["processes"][name]["buffer_last"] == 0
    assert found["buffer_peak_total"] >= 2
    # What the outage test asserts, the report says too.
    assert errors == 0, found["errors_by_kind"]
    assert announced == sent
    assert found["records_missing"] == 0
    assert found["dropped_total"] == 0
    assert found["duplicate_rows"] == 0
    assert found["not_final_at_settle"] == 0
    assert [t["status"] for t in found["targets"]] == ["met", "met", "met"]
    assert found["all_final_after_restart_s"] < 60
    for target in found["targets"]:
        assert f"| {target['target']} | {target['wanted']} | {target['measured']} | met |" in report
    assert f"| {sent} |" in report
