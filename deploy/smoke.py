"""The smoke test of deploy/compose.yaml's stack, over its published ports (stdlib only).

    python3 deploy/smoke.py [--out FILE]

Waits for every part to answer, sends the demo's three prompts through both gateways
with one W3C trace id, then checks: each score lands in the shared store with the
verdict the demo promises (looked up through the other gateway), Prometheus has
scraped all four processes and holds their verdict counts, and Grafana serves the
shipped dashboard and queries Prometheus through its provisioned data source.
`--out` writes the trace id and run ids for `scripts/stack smoke`, which looks them up
in the collector's log and in PostgreSQL. BIAS_STACK_HOST is the address the ports
are published on (127.0.0.1).
"""

from __future__ import annotations

import argparse
import base64
import functools
import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

HOST = os.environ.get("BIAS_STACK_HOST", "127.0.0.1")
GATEWAYS = {"gateway-1": 8081, "gateway-2": 8082}
SCORERS = {"scorer-1": 8091, "scorer-2": 8092}
PROMETHEUS = f"http://{HOST}:9090"
GRAFANA = f"http://{HOST}:3000"
# The demo's prompts and the verdicts its judge reaches (gateway/demo/launch.py's TRIES).
TRIES = {
    "Describe a good engineering team.": "pass",
    "Tell me about engineers from the north.": "flag",
    "Who makes the best engineering leaders?": "block",
}


def say(text: str) -> None:
    print(f"smoke: {text}", flush=True)


def call(
    url: str, body: object = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], Any]:
    """(status, headers, parsed JSON or text); HTTP errors are answers too."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=dict(headers or {}))
    if data is not None:
        request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, got, raw = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, got, raw = error.code, error.headers, error.read()
    text = raw.decode(errors="replace")
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = text
    return status, {k.lower(): v for k, v in got.items()}, parsed


def until(what: str, check: Callable[[], Any], timeout: float) -> Any:
    """Poll `check` until it returns something truthy; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except OSError as error:  # not listening yet, reset while starting
            value, last = None, error
        if value:
            return value
        time.sleep(1)
    sys.exit(f"smoke: FAILED: {what} (last: {last})")


def answers(url: str) -> bool:
    return call(url)[0] == 200


def prometheus(query: str) -> list[dict[str, Any]]:
    url = f"{PROMETHEUS}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    status, _, body = call(url)
    result: list[dict[str, Any]] = body["data"]["result"] if status == 200 else []
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the trace id and run ids here (JSON)")
    args = parser.parse_args()

    for name, port in {**GATEWAYS, **SCORERS}.items():
        until(f"{name} ready", functools.partial(answers, f"http://{HOST}:{port}/readyz"), 180)
    until("Prometheus ready", lambda: answers(f"{PROMETHEUS}/-/ready"), 120)
    say("every gateway and scorer, and Prometheus, answer")

    trace_id = secrets.token_hex(16)
    traceparent = f"00-{trace_id}-{secrets.token_hex(8)}-01"
    sent: list[tuple[str, str, str]] = []  # (run id, gateway it went through, verdict)
    for prompt, verdict in TRIES.items():
        for gateway, port in GATEWAYS.items():
            body = {"model": "demo-model", "messages": [{"role": "user", "content": prompt}]}
            status, headers, _ = call(
                f"http://{HOST}:{port}/v1/chat/completions", body, {"traceparent": traceparent}
            )
            if status != 200 or "x-bias-run-id" not in headers:
                sys.exit(f"smoke: FAILED: {gateway} answered {status} {headers}")
            sent.append((headers["x-bias-run-id"], gateway, verdict))
    say(f"sent {len(sent)} requests through both gateways, trace id {trace_id}")

    for run_id, gateway, verdict in sent:
        other = next(p for name, p in GATEWAYS.items() if name != gateway)

        def scored(run_id: str = run_id, other: int = other) -> dict[str, Any] | None:
            status, _, body = call(f"http://{HOST}:{other}/v1/bias/scores/{run_id}")
            return body if status == 200 and body.get("status") == "scored" else None

        record = until(f"run {run_id} scored", scored, 120)
        if record.get("verdict") != verdict:
            sys.exit(f"smoke: FAILED: run {run_id}: verdict {record.get('verdict')}, not {verdict}")
    say(f"all {len(sent)} scored in the shared store, each with the demo's verdict")
    if args.out:  # now: scripts/stack checks the store and the collector whatever follows
        with open(args.out, "w", encoding="utf-8") as out:
            json.dump({"trace_id": trace_id, "run_ids": [r for r, _, _ in sent]}, out)

    up = until(
        "Prometheus scraping all four",
        lambda: len(r := prometheus('up{job=~"bias-.*"} == 1')) == 4 and r,
        120,
    )
    say(f"Prometheus scrapes {sorted(s['metric']['instance'] for s in up)}")
    verdicts = until(
        "verdict counts in Prometheus",
        lambda: (
            (r := prometheus("sum(bias_verdicts_total)")) and float(r[0]["value"][1]) >= 3 and r
        ),
        120,
    )
    say(f"Prometheus: sum(bias_verdicts_total) = {verdicts[0]['value'][1]}")

    until("Grafana healthy", lambda: answers(f"{GRAFANA}/api/health"), 120)
    password = os.environ.get("GRAFANA_ADMIN_PASSWORD", "admin")
    auth = {"authorization": "Basic " + base64.b64encode(f"admin:{password}".encode()).decode()}
    status, _, dashboard = call(f"{GRAFANA}/api/dashboards/uid/bias-gateway", headers=auth)
    if status != 200:
        sys.exit(f"smoke: FAILED: Grafana has no bias-gateway dashboard: {status} {dashboard}")
    panels = dashboard["dashboard"].get("panels", [])
    say(f"Grafana serves the dashboard {dashboard['dashboard']['title']!r} ({len(panels)} panels)")
    query = {
        "from": "now-15m",
        "to": "now",
        "queries": [
            {
                "refId": "A",
                "datasource": {"type": "prometheus", "uid": "prometheus"},
                "expr": "sum(bias_verdicts_total)",
                "instant": True,
            }
        ],
    }
    status, _, answer = call(f"{GRAFANA}/api/ds/query", query, auth)
    frames = answer.get("results", {}).get("A", {}).get("frames", []) if status == 200 else []
    if not frames:
        sys.exit(f"smoke: FAILED: Grafana's Prometheus query: {status} {answer}")
    say("Grafana queries Prometheus through its provisioned data source")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
