"""The alert rules in deploy/prometheus: promtool checks them and runs their unit tests
(alerts.test.yml), every alert is tested firing and quiet, every metric a rule reads is
one a running gateway serves, and each alert is explained in docs/observability.md."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from testkit.fake_openai import FakeOpenAI
from tests.support.gateways import RunningGateway
from tests.support.promql import Served, metric_names, scrape_after_traffic

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "alerts.test.yml"
DOCS = ROOT / "docs" / "observability.md"

# Issue 31's alerts.
EXPECTED = {
    "BiasJudgeAgreementFell",
    "BiasKeyRateAboveBaseline",
    "BiasJudgeErrors",
    "BiasMonitorShedding",
    "BiasStoreBufferFilling",
    "BiasStoreRecordsDropped",
    "GatewayConfigReloadRefused",
}

# Labelled metrics that ordinary traffic does not set: the scrape must declare them.
DECLARED_ONLY = {
    "bias_store_records_dropped_total": "only when the store's writer cannot keep a record",
    # tests/gateway/server/test_canary.py reads it set, after a judge change.
    "bias_review_canary_drop": "only once a judge change was checked against the labels",
}


def read(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def rules() -> list[dict[str, Any]]:
    return [rule for group in read(RULES)["groups"] for rule in group["rules"]]


def alerts() -> dict[str, dict[str, Any]]:
    return {rule["alert"]: rule for rule in rules() if "alert" in rule}


def run(promtool: str, *args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    argv = [promtool, *map(str, args)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=cwd)


def test_promtool_checks_the_rules(promtool: str) -> None:
    done = run(promtool, "check", "rules", RULES)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules())} rules found" in done.stdout


def test_promtool_checks_the_config_that_loads_them(promtool: str) -> None:
    done = run(promtool, "check", "config", ROOT / "deploy" / "prometheus.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 1 rule files found" in done.stdout
    assert f"SUCCESS: {len(rules())} rules found" in done.stdout


def test_the_rules_pass_their_unit_tests(promtool: str) -> None:
    done = run(promtool, "test", "rules", RULE_TESTS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_the_unit_tests_fail_on_a_rule_that_fires_too_early(promtool: str, tmp_path: Path) -> None:
    # A lower threshold makes the buffer alert fire where the tests say it stays quiet.
    text = RULES.read_text(encoding="utf-8")
    assert text.count("bias_store_buffer_limit_records) > 0.5") == 1
    (tmp_path / "alerts.yml").write_text(text.replace("_records) > 0.5", "_records) > 0.2"))
    shutil.copy(RULE_TESTS, tmp_path / "alerts.test.yml")
    done = run(promtool, "test", "rules", "alerts.test.yml", cwd=tmp_path)
    assert done.returncode != 0
    assert "alertname: BiasStoreBufferFilling" in done.stdout + done.stderr


def test_every_alert_has_a_severity_a_summary_and_a_runbook_in_the_docs() -> None:
    assert set(alerts()) == EXPECTED
    headings = {line.removeprefix("### ").strip() for line in DOCS.read_text().splitlines()}
    for name, rule in alerts().items():
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert rule["annotations"]["summary"], name
        assert rule["annotations"]["runbook"] == f"docs/observability.md#{name.lower()}"
        assert name in headings, name


def test_every_alert_is_tested_firing_and_quiet() -> None:
    fired: set[str] = set()
    quiet: set[str] = set()
    for case in read(RULE_TESTS)["tests"]:
        for check in case["alert_rule_test"]:
            (fired if check["exp_alerts"] else quiet).add(check["alertname"])
    assert read(RULE_TESTS)["rule_files"] == [RULES.name]
    assert fired == set(alerts())
    assert quiet == set(alerts())


def test_the_agreement_alert_compares_the_canarys_drop_with_its_limit() -> None:
    expr = alerts()["BiasJudgeAgreementFell"]["expr"]
    assert metric_names(expr) == {"bias_review_canary_drop", "bias_review_canary_drop_limit"}
    assert "not yet" not in DOCS.read_text()


def test_every_metric_the_rules_read_is_served(
    fake_openai: FakeOpenAI, make_gateway: Callable[..., RunningGateway]
) -> None:
    recorded = {rule["record"] for rule in rules() if "record" in rule}
    read_names: set[str] = set()
    for rule in rules():
        read_names |= metric_names(rule["expr"])
    names = read_names - recorded
    assert recorded <= read_names  # every recording rule is used by an alert
    assert names >= set(DECLARED_ONLY)
    served = Served(scrape_after_traffic(fake_openai, make_gateway))
    assert served.unserved(names, declared_only=DECLARED_ONLY) == []
    # The check can fail: a name the gateway does not serve is reported.
    assert served.unserved([*names, "bias_nonexistent_total"], DECLARED_ONLY) == [
        "bias_nonexistent_total"
    ]
    # The rules group by the labels the metrics have.
    assert {"key", "verdict"} <= served.labels["bias_key_verdicts_total"]
    assert {"key", "decision"} <= served.labels["bias_overload_decisions_total"]
