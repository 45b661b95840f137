"""The Grafana dashboard in gateway/observability/grafana (it ships in the wheel): its
panels, and that every metric its queries name is one the gateway's `/metrics` really serves.

No Grafana or Prometheus server runs here: the queries are checked by reading
them, and the metric names they use against a scrape of a real gateway.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from gateway.observability.metrics import Metrics
from testkit.fake_openai import FakeOpenAI
from tests.support.gateways import RunningGateway
from tests.support.promql import Served, metric_names, scrape_after_traffic

MakeGateway = Callable[..., RunningGateway]
DASHBOARD = (
    Path(__file__).resolve().parents[3]
    / "gateway"
    / "observability"
    / "grafana"
    / "bias-gateway.json"
)

PANELS = {
    "Request rate by route and status",
    "Gateway request latency p95 by route",
    "Upstream latency p95 by model",
    "Verdict rate by verdict",
    "Score distribution",
    "Score p50 / p90",
    "Biased opinions by category",
    "Biased opinions by category (over the range)",
    "Judge latency p50 / p95 by step",
    "Judge errors by type and 429s",
    "Judge tokens rate by step and type",
    "Judge calls rate by step",
    "Queue depth, scorings in flight, pending work",
    "Skipped by reason",
    "Dropped by reason",
    "Work claimed / expired by reason",
    "Flagged or blocked share by key: last 15 m and last day",
    "Judge error share, monitored answers shed",
    "Store buffer fill by instance",
    "Store records dropped by reason",
    "Last config reload applied",
    "Agreement with reviewers at the last judge change, by judge",
    "Agreement drop at the last judge change, and its limit",
    "Labelled records judged again",
}

# What the issue asks the dashboard to show, as the series its queries must read.
COVERED = {
    "gateway_requests_total",
    "gateway_request_duration_seconds_bucket",
    "bias_verdicts_total",
    "bias_score_bucket",
    "bias_category_opinions_total",
    "bias_judge_step_duration_seconds_bucket",
    "bias_judge_errors_total",
    "bias_judge_rate_limited_total",
    "bias_judge_tokens_total",
    "bias_scoring_queue_depth",
    "bias_scorings_in_flight",
    "bias_work_pending",
    "bias_skipped_total",
    "bias_dropped_total",
    "bias_work_claimed_total",
    "bias_work_expired_total",
    # What the alert rules in deploy/prometheus read (docs/observability.md#alerts).
    "bias_key_verdicts_total",
    "bias_overload_decisions_total",
    "bias_store_buffered_records",
    "bias_store_buffer_limit_records",
    "bias_store_records_dropped_total",
    "gateway_config_last_reload_successful",
    # The judge canary's figures (tests/gateway/server/test_canary.py sets them).
    "bias_review_canary_f1",
    "bias_review_canary_kappa",
    "bias_review_canary_drop",
    "bias_review_canary_drop_limit",
    "bias_review_canary_rejudged_records",
}

# Labelled counters that ordinary traffic does not increment, so they have no
# sample yet: for these the scrape must still declare the family (# HELP/# TYPE).
DECLARED_ONLY = {
    "bias_dropped_total": "only at shutdown, for enforce scorings still running",
    "bias_work_expired_total": "only when pending work exhausts its attempts or its gateway",
    "bias_store_records_dropped_total": "only when the store's writer cannot keep a record",
    "bias_review_canary_f1": "only once a judge change was checked against the labels",
    "bias_review_canary_kappa": "only once a judge change was checked against the labels",
    "bias_review_canary_drop": "only once a judge change was checked against the labels",
    "bias_reviews_total": "only once a reviewer has labelled a record",
}

_LABEL_VALUES = re.compile(r"label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{[^}]*\})?\s*,")


def load_dashboard() -> dict[str, Any]:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return dashboard


def panels_of(dashboard: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every panel that shows data: rows left out, collapsed rows' panels included."""
    found: list[dict[str, Any]] = []
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            found.extend(panel.get("panels", []))
        else:
            found.append(panel)
    return found


def exprs_of(dashboard: Mapping[str, Any]) -> list[str]:
    return [target["expr"] for panel in panels_of(dashboard) for target in panel["targets"]]


def referenced(dashboard: Mapping[str, Any]) -> set[str]:
    """Every metric name the dashboard's queries and query variables read."""
    names: set[str] = set()
    for expr in exprs_of(dashboard):
        names |= metric_names(expr)
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            text = query["query"] if isinstance(query, dict) else query
            names |= set(_LABEL_VALUES.findall(text))
    return names


# -- the extractor and the checker -------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        (
            'histogram_quantile(0.95, sum by (le, route) (rate(a_bucket{model=~"$model",'
            ' le="0.5"}[$__rate_interval])))',
            {"a_bucket"},
        ),
        ("a_total / ignoring(code) group_left b_total offset 1h30m", {"a_total", "b_total"}),
        ("sum(rate(c_total[5m])) by (reason) > 0.5 and on(job) up == bool 1e3", {"c_total", "up"}),
        ("max_over_time(g[1h:5m]) * -.5 + 0x1F", {"g"}),
        ('count(label_replace(m, "dst", "$1", "src", "(rate|sum) x_total{}"))', {"m"}),
        ("sum without (instance) (d:rate5m) unless e @ start()", {"d:rate5m", "e"}),
        ("topk(5, sum (rate(f_total[$__range])))", {"f_total"}),
    ],
)
def test_metric_names_are_read_from_promql(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_a_metric_chosen_by_name_is_refused() -> None:
    with pytest.raises(ValueError, match="__name__"):
        metric_names('rate({__name__="x_total"}[5m])')


def test_the_checker_finds_a_metric_that_is_not_served() -> None:
    served = Served(Metrics().render().decode())
    # Unlabelled series exist at once; labelled ones only once they are set.
    assert served.unserved(["bias_judge_rate_limited_total", "bias_scoring_queue_depth"]) == []
    assert served.unserved(["bias_nonexistent_total"]) == ["bias_nonexistent_total"]
    # A histogram is queried by its series, never by the family's bare name.
    assert served.unserved(["bias_score"], declared_only=["bias_score"]) == ["bias_score"]
    assert served.unserved(["bias_dropped_total"]) == ["bias_dropped_total"]
    assert served.unserved(["bias_dropped_total"], declared_only=["bias_dropped_total"]) == []
    assert served.unserved(["bias_nonexistent_total"], declared_only=["bias_nonexistent_total"])
    assert "bias_judge_calls_total" in served.declared  # declared as "bias_judge_calls"


# -- the dashboard -----------------------------------------------------------------


def test_dashboard_has_the_panels_and_settings() -> None:
    dashboard = load_dashboard()
    assert dashboard["title"] == "bias-gateway"
    assert dashboard["uid"]
    assert dashboard["tags"]
    assert dashboard["time"] == {"from": "now-6h", "to": "now"}
    assert dashboard["refresh"] == "30s"
    assert dashboard["schemaVersion"] >= 39
    panels = panels_of(dashboard)
    titles = [panel["title"] for panel in panels]
    assert len(titles) == len(set(titles))
    assert set(titles) >= PANELS, PANELS - set(titles)
    nested = [inner for row in dashboard["panels"] for inner in row.get("panels", [])]
    ids = [panel["id"] for panel in [*dashboard["panels"], *nested]]
    assert len(ids) == len(set(ids))
    variables = {variable["name"]: variable for variable in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert variables["model"]["query"]["query"] == "label_values(bias_verdicts_total, model)"
    assert variables["model"]["allValue"] == ".*"
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["expr"].strip(), panel["title"]
            assert target["datasource"] == panel["datasource"], panel["title"]
        grid = panel["gridPos"]
        assert grid["x"] >= 0, panel["title"]
        assert grid["w"] > 0, panel["title"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
    by_title = {panel["title"]: panel for panel in panels}
    assert by_title["Score distribution"]["type"] in ("heatmap", "bargauge")
    assert by_title["Biased opinions by category (over the range)"]["type"] == "bargauge"


def test_dashboard_covers_what_the_issue_asks_for() -> None:
    names = referenced(load_dashboard())
    assert names >= COVERED, COVERED - names
    assert names >= set(DECLARED_ONLY)  # an entry the dashboard no longer needs is removed


def test_every_dashboard_metric_is_served(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    served = Served(scrape_after_traffic(fake_openai, make_gateway))
    dashboard = load_dashboard()
    names = referenced(dashboard)
    assert served.unserved(names, declared_only=DECLARED_ONLY) == []
    # The check can fail: a name the gateway does not serve is reported.
    assert served.unserved([*names, "bias_nonexistent_total"], DECLARED_ONLY) == [
        "bias_nonexistent_total"
    ]
    # Every query over a metric with a model label follows the model variable.
    for expr in exprs_of(dashboard):
        if any("model" in served.labels.get(name, set()) for name in metric_names(expr)):
            assert '=~"$model"' in expr, expr
