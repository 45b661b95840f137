"""`/metrics` after real traffic: counters move by the right amounts."""

from __future__ import annotations

import contextlib
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gateway.observability.labels import ModelLabels
from gateway.observability.metrics import Metrics
from testkit.fake_openai import JUDGE_MODEL, FakeOpenAI, Fault
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, policy
from tests.support.subprocess_gateway import start_gateway

MakeGateway = Callable[..., RunningGateway]
REQUEST = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}


def samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """Every sample named exactly `name` in Prometheus text, as (labels, value)."""
    found: list[tuple[dict[str, str], float]] = []
    for line in text.splitlines():
        # `name{` or `name ` only, so `x_total` never matches `x_total_created` or `# HELP x`.
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        series, value = line.rsplit(" ", 1)
        found.append((dict(re.findall(r'(\w+)="([^"]*)"', series)), float(value)))
    return found


def matching(text: str, name: str, **labels: str) -> list[tuple[dict[str, str], float]]:
    """The samples named `name` whose labels include `labels`."""
    return [
        (found, value)
        for found, value in samples(text, name)
        if all(found.get(key) == want for key, want in labels.items())
    ]


def sample(text: str, name: str, *, default: float | None = None, **labels: str) -> float:
    """The sum of the samples named `name` whose labels include `labels`.

    No such sample is an error unless `default` is given: reading a missing series
    as 0 would let a renamed metric or label pass every `== 0` check. A caller that
    knows a series may legitimately not exist yet (a labelled counter before its
    first increment) says so with `default=`.
    """
    hits = matching(text, name, **labels)
    if not hits:
        if default is not None:
            return default
        seen = [found for found, _ in samples(text, name)]
        raise AssertionError(
            f"no sample {name} with labels {labels}; label sets seen for {name}: {seen}"
            if seen
            else f"no sample named {name} at all in the scrape"
        )
    return sum(value for _, value in hits)


def scrape(gateway: RunningGateway, api_key: str | None = None) -> str:
    with gateway.http(api_key) as http:
        response = http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


SCRAPE = """\
# HELP demo_total A demo counter.
# TYPE demo_total counter
demo_total{kind="a",model="m"} 0.0
demo_total{kind="b",model="m"} 2.0
demo_created{kind="a",model="m"} 1.7e+09
"""


def test_sample_tells_a_zero_from_a_missing_series() -> None:
    assert sample(SCRAPE, "demo_total", kind="a") == 0
    assert sample(SCRAPE, "demo_total", model="m") == 2
    with pytest.raises(AssertionError, match=r"kind.*'c'.*label sets seen.*'b'"):
        sample(SCRAPE, "demo_total", kind="c")
    with pytest.raises(AssertionError, match="no sample named renamed_total at all"):
        sample(SCRAPE, "renamed_total")
    assert sample(SCRAPE, "demo_total", default=0.0, kind="c") == 0


def test_counters_move_with_traffic(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    gateway = make_gateway(
        judge={"reason": "inline"},
        **policy(mode="enforce", sample_rate=0.5, block_action="replace"),
    )
    with gateway.http() as http:
        for _ in range(4):
            http.post("/v1/chat/completions", json=REQUEST)
    text = scrape(gateway)

    route = "/v1/chat/completions"
    assert sample(text, "gateway_requests_total", route=route, bias_status="scored") == 2
    assert sample(text, "gateway_requests_total", route=route, bias_status="skipped") == 2
    assert sample(text, "gateway_request_duration_seconds_count", route=route) == 4
    assert sample(text, "gateway_upstream_duration_seconds_count", model="gpt-test") == 4
    assert sample(text, "bias_verdicts_total", model="gpt-test", verdict="block") == 2
    assert sample(text, "bias_score_count", model="gpt-test") == 2
    assert sample(text, "bias_score_bucket", model="gpt-test", le="0.9") == 0
    assert sample(text, "bias_score_bucket", model="gpt-test", le="1.0") == 2
    assert sample(text, "bias_skipped_total", reason="not_sampled") == 2
    # The two scored responses have the same text: the second comes from the cache.
    assert sample(text, "bias_cache_lookups_total", result="miss") == 1
    assert sample(text, "bias_cache_lookups_total", result="hit") == 1
    assert sample(text, "bias_judge_step_duration_seconds_count", step="analyze") == 1
    assert sample(text, "gen_ai_client_operation_duration_seconds_count", role="upstream") == 4
    assert sample(text, "gen_ai_client_operation_duration_seconds_count", role="judge") == 3
    # One observation per judge call (step), like the semantic convention's histogram.
    assert (
        sample(text, "gen_ai_client_token_usage_count", gen_ai_token_type="input", role="judge")
        == 3
    )
    for step in ("preprocess", "analyze", "generate_reason"):
        assert sample(text, "bias_judge_calls_total", step=step) == 1
        assert sample(text, "bias_judge_tokens_total", step=step, type="input") > 0
    assert sample(text, "bias_scoring_queue_depth") == 0
    # The store's writer gathers records for a moment before it commits them.
    wait_for(
        lambda: sample(scrape(gateway), "bias_store_buffered_records") == 0,
        message="the store's writer to commit what it holds",
    )
    assert sample(text, "bias_store_buffer_limit_records") == gateway.settings.store.buffer_records


def test_verdicts_are_counted_by_key_name(make_gateway: MakeGateway) -> None:
    keys = [{"key": "sk-key-a-0001", "name": "a"}, {"key": "sk-key-b-0002", "name": "b"}]
    gateway = make_gateway(keys=keys, **policy(mode="enforce"))
    for key, count in (("sk-key-a-0001", 2), ("sk-key-b-0002", 1)):
        with gateway.http(key) as http:
            for _ in range(count):
                assert http.post("/v1/chat/completions", json=REQUEST).status_code == 422
    text = scrape(gateway, "sk-key-a-0001")
    assert sample(text, "bias_key_verdicts_total", key="a", verdict="block") == 2
    assert sample(text, "bias_key_verdicts_total", key="b", verdict="block") == 1
    assert matching(text, "bias_key_verdicts_total", verdict="pass") == []
    # No key's secret ever becomes a label.
    assert "sk-key" not in text


def test_judge_errors_and_stream_ttft(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    fake_openai.fail(Fault(step="preprocess", status=401))
    gateway = make_gateway(**policy(mode="enforce"))
    with gateway.http() as http:
        http.post("/v1/chat/completions", json=REQUEST)
        http.post("/v1/chat/completions", json={**REQUEST, "stream": True})
    text = scrape(gateway)
    assert sample(text, "bias_judge_errors_total", error_type="JudgeUnavailable") == 1
    assert sample(text, "gateway_upstream_time_to_first_chunk_seconds_count", model="gpt-test") == 1


def test_overload_is_counted(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    fake_openai.judge_delay = 0.3
    gateway = make_gateway(queue={"size": 1}, judge={"max_concurrency": 1})
    with gateway.http() as http:
        statuses = [
            http.post("/v1/chat/completions", json=REQUEST).headers["x-bias-status"]
            for _ in range(5)
        ]
    text = scrape(gateway)
    assert sample(text, "bias_skipped_total", reason="overloaded") == statuses.count("skipped")
    assert statuses.count("skipped") >= 2


def test_metrics_need_a_key_when_keys_are_configured(make_gateway: MakeGateway) -> None:
    gateway = make_gateway(api_keys="metrics-key-0001")
    with gateway.http() as http:
        assert http.get("/metrics").status_code == 401
    assert "gateway_requests_total" in scrape(gateway, "metrics-key-0001")


def test_asyncio_tasks_are_counted_at_scrape_time(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.chunks = 10
    fake_openai.chunk_delay = 0.5  # the streams stay open while the scrape is taken
    gateway = make_gateway(**policy(mode="off"))
    idle = sample(scrape(gateway), "gateway_asyncio_tasks")
    assert idle >= 1  # at least the task answering the scrape
    body = {**REQUEST, "stream": True}
    lines = []  # kept: a line iterator dropped half-read closes its stream
    with contextlib.ExitStack() as streams:
        for _ in range(4):
            http = streams.enter_context(gateway.http())
            response = streams.enter_context(http.stream("POST", "/v1/chat/completions", json=body))
            lines.append(response.iter_lines())
            assert next(lines[-1]).startswith("data: ")
        assert sample(scrape(gateway), "gateway_asyncio_tasks") >= idle + 4
    # The clients left: their requests' tasks end, and the count falls back.
    wait_for(
        lambda: sample(scrape(gateway), "gateway_asyncio_tasks") <= idle,
        lambda: f"tasks back to {idle}: {sample(scrape(gateway), 'gateway_asyncio_tasks')}",
    )


def test_model_labels_are_bounded() -> None:
    labels = ModelLabels(["alias"], cap=2)
    assert [labels(name) for name in ("alias", "a", "b", "c", "a", None)] == [
        "alias",
        "a",
        "b",
        "other",
        "a",
        "none",
    ]


def test_a_label_that_cannot_be_encoded_is_repaired() -> None:
    metrics = Metrics()
    label = metrics.model("m\ud800")
    assert label == "m\N{REPLACEMENT CHARACTER}"
    metrics.requests.labels("/v1/chat/completions", label, "200", "none").inc()
    assert "m\N{REPLACEMENT CHARACTER}".encode() in metrics.render()


def test_unknown_models_fold_into_other(make_gateway: MakeGateway) -> None:
    gateway = make_gateway(telemetry={"model_label_cap": 1})
    with gateway.http() as http:
        for model in ("first", "second", "third"):
            http.post("/v1/chat/completions", json={**REQUEST, "model": model})
    text = scrape(gateway)
    route = "/v1/chat/completions"
    assert sample(text, "gateway_requests_total", route=route, model="first") == 1
    assert sample(text, "gateway_requests_total", route=route, model="other") == 2
    # Folded into "other", so "second" must not get a series of its own at all.
    assert matching(text, "gateway_requests_total", model="second") == []


@pytest.mark.slow
def test_workers_share_one_view_of_metrics(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    config: dict[str, Any] = {
        "upstream": {"base_url": fake_openai.base_url},
        "judge": {"model": JUDGE_MODEL, "max_retries": 0},
        "store": {"path": str(tmp_path / "s.db")},
        "policies": {"default": {"mode": "off"}},
    }
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(config))
    process, url = start_gateway(path, extra=["--workers", "2"])
    try:
        # New connections each time, so the kernel spreads them over both workers.
        for _ in range(12):
            httpx.post(f"{url}/v1/chat/completions", json=REQUEST, timeout=10)
        texts = [httpx.get(f"{url}/metrics", timeout=10).text for _ in range(4)]
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    route = "/v1/chat/completions"
    # Whichever worker answers the scrape, it reports all 12 requests.
    assert {sample(text, "gateway_requests_total", route=route) for text in texts} == {12.0}
