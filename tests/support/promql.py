"""PromQL read without a Prometheus server: the metric names an expression reads
(`metric_names`), and what a scrape of `/metrics` serves (`Served`), so that the Grafana
dashboard's queries and the alert rules can be checked against a running gateway."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from testkit.fake_openai import FakeOpenAI, Fault
from tests.support.gateways import RunningGateway, policy

__all__ = ["Served", "metric_names", "scrape", "scrape_after_traffic"]

_REQUEST: dict[str, Any] = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}

# Words that are PromQL but never a metric name: aggregation operators and their
# modifiers, set and vector-matching keywords, number literals.
KEYWORDS = frozenset(
    {
        "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
        "bottomk", "topk", "quantile", "limitk", "limit_ratio",
        "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
        "and", "or", "unless", "atan2", "offset", "start", "end", "inf", "nan",
    }
)  # fmt: skip
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_VARIABLE = re.compile(r"\$\{[^}]*\}|\$\w+")
_TOKEN = re.compile(
    r"(?P<number>(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[a-zA-Z]*(?:\d+[a-zA-Z]+)*)"
    r"|(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)"
    r"|(?P<other>\S)"
)


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads.

    String literals (label values, regexes, label_replace arguments), Grafana
    variables, label matchers `{...}`, ranges `[...]` and grouping lists
    (`by (...)`, `on (...)`, ...) go first; of the identifiers left, those followed
    by `(` are functions and the KEYWORDS are keywords: the rest are metrics.
    """
    if "__name__" in expr:
        raise ValueError(f"a metric chosen by __name__ cannot be checked: {expr}")
    text = _STRING.sub('""', expr)
    text = _VARIABLE.sub("", text)
    text = re.sub(r"\{[^{}]*\}", " ", text)
    text = re.sub(r"\[[^\[\]]*\]", " ", text)
    text = _GROUPING.sub(" ", text)
    names: set[str] = set()
    for token in _TOKEN.finditer(text):
        name = token.group("name")
        if name is None or name.lower() in KEYWORDS:
            continue
        if text[token.end() :].lstrip().startswith("("):
            continue  # a function call
        names.add(name)
    return names


class Served:
    """What a Prometheus text scrape offers to a query."""

    def __init__(self, text: str) -> None:
        self.samples: set[str] = set()
        self.declared: set[str] = set()
        self.labels: dict[str, set[str]] = {}
        for family in text_string_to_metric_families(text):
            # The parser names a counter family without its `_total`.
            if family.type == "counter":
                self.declared.add(family.name + "_total")
            elif family.type in ("histogram", "gaugehistogram"):
                self.declared |= {family.name + suffix for suffix in ("_bucket", "_sum", "_count")}
            elif family.type == "summary":
                self.declared |= {family.name, family.name + "_sum", family.name + "_count"}
            else:
                self.declared.add(family.name)
            for sample in family.samples:
                self.samples.add(sample.name)
                self.labels.setdefault(sample.name, set()).update(sample.labels)

    def unserved(self, names: Iterable[str], declared_only: Iterable[str] = ()) -> list[str]:
        """The names a query could not read: no sample, or for `declared_only` no family."""
        allowed = set(declared_only)
        return sorted(
            name
            for name in names
            if name not in self.samples and not (name in allowed and name in self.declared)
        )


def scrape(gateway: RunningGateway) -> str:
    with gateway.http() as http:
        response = http.get("/metrics")
    assert response.status_code == 200
    return response.text


def scrape_after_traffic(fake: FakeOpenAI, make_gateway: Callable[..., RunningGateway]) -> str:
    """`/metrics` of a gateway that has answered, scored, failed and monitored: an
    upstream error, a judge error, enforced scores and one monitored score."""
    fake.unique_replies = True  # no score cache hit hides the judge's cost metrics
    gateway = make_gateway(**policy(mode="enforce", allow_client_override=True))
    # The first upstream call fails (skipped: upstream_error); the next scoring's
    # preprocess step fails (bias_judge_errors_total).
    fake.fail(Fault(step="chat", status=500), Fault(step="preprocess", status=401))
    with gateway.http() as http:
        statuses = [
            http.post("/v1/chat/completions", json=_REQUEST).headers.get("x-bias-status")
            for _ in range(4)
        ]
        monitored = http.post(
            "/v1/chat/completions", json=_REQUEST, headers={"x-bias-mode": "monitor"}
        )
    assert statuses == ["skipped", "error", "scored", "scored"]
    assert monitored.headers["x-bias-status"] == "pending"
    assert gateway.wait_for_score(monitored.headers["x-bias-run-id"])["status"] == "scored"
    return scrape(gateway)
