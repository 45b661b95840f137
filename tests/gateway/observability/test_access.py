"""The access line, the score line, and the JSON log format with trace ids."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator

import pytest
import structlog
from structlog.testing import capture_logs

from gateway.observability.access import route_of
from gateway.observability.logs import configure_logging
from testkit.fake_openai import FakeOpenAI, Fault
from tests.support.gateways import RunningGateway, policy
from tests.support.telemetry import Captured

MakeGateway = Callable[..., RunningGateway]
REQUEST = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}


def test_access_and_score_lines(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    gateway = make_gateway(
        keys=[{"key": "team-key-000001", "name": "team-a"}],
        judge={"reason": "inline"},
        **policy(mode="enforce", block_action="replace"),
    )
    with capture_logs() as logs, gateway.http("team-key-000001") as http:
        response = http.post("/v1/chat/completions", json=REQUEST)

    access = next(line for line in logs if line["event"] == "request")
    assert access["request_id"] == response.headers["x-request-id"]
    assert access["method"] == "POST"
    assert access["path"] == "/v1/chat/completions"
    assert access["status"] == 200
    assert access["model"] == "gpt-test"
    assert access["key_name"] == "team-a"
    assert access["bias_status"] == "scored"
    assert access["verdict"] == "block"
    assert access["score"] == 1
    assert access["latency_ms"] >= access["upstream_ms"] > 0
    scored = next(line for line in logs if line["event"] == "bias score")
    assert scored["run_id"] == response.headers["x-bias-run-id"]
    assert scored["status"] == "scored"
    assert scored["judge_calls"] == 3
    assert scored["judge_tokens"] > 0
    assert scored["calls_by_step"] == {"preprocess": 1, "analyze": 1, "generate_reason": 1}
    assert scored["reason_status"] == "done"
    assert scored["judge_ms"] > 0
    assert "team-key-000001" not in json.dumps(logs, default=str)


def test_fail_open_judge_error_logs_at_error_level(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="preprocess", status=401))
    gateway = make_gateway(**policy(mode="enforce", on_judge_error="allow"))
    with capture_logs() as logs, gateway.http() as http:
        http.post("/v1/chat/completions", json=REQUEST)
    failure = next(line for line in logs if line["event"].startswith("bias judge failed"))
    assert failure["log_level"] == "error"
    assert failure["error_type"] == "JudgeUnavailable"


def test_overload_warnings_are_rate_limited(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.judge_delay = 0.5
    gateway = make_gateway(queue={"size": 1}, judge={"max_concurrency": 1})
    with capture_logs() as logs, gateway.http() as http:
        statuses = [
            http.post("/v1/chat/completions", json=REQUEST).headers["x-bias-status"]
            for _ in range(8)
        ]
    warnings = [line for line in logs if line["event"].startswith("scoring queue full")]
    assert statuses.count("skipped") >= 4
    assert len(warnings) == 1
    assert warnings[0]["log_level"] == "warning"


@pytest.fixture
def restore_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()
    logging.getLogger().handlers = []


def test_json_lines_carry_trace_ids(
    restore_logging: None, capsys: pytest.CaptureFixture[str], otel_capture: Captured
) -> None:
    # Configured here, not in a fixture: the handler binds the sys.stdout of this phase.
    configure_logging(json_logs=True)
    tracer = otel_capture.telemetry.tracer
    with tracer.start_as_current_span("work") as span:
        structlog.get_logger("test").info("inside", answer=42)
    logging.getLogger("uvicorn.error").warning("from the stdlib")
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    inside = next(line for line in lines if line["event"] == "inside")
    assert inside["answer"] == 42
    assert inside["trace_id"] == format(span.get_span_context().trace_id, "032x")
    assert inside["span_id"] == format(span.get_span_context().span_id, "016x")
    assert inside["level"] == "info"
    stdlib = next(line for line in lines if line["event"] == "from the stdlib")
    assert stdlib["logger"] == "uvicorn.error"
    assert "trace_id" not in stdlib


def test_a_line_orjson_refuses_is_repaired_not_lost(
    restore_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging(json_logs=True)
    nested: list[object] = []
    for _ in range(300):  # deeper than orjson's encoder goes
        nested = [nested]
    log = structlog.get_logger("test")
    log.info("request", model="\ud800", path="/v1/x", extra={"k\udfff": ("v\ud800", 1)})
    log.info("deep", value=nested)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    request = next(line for line in lines if line["event"] == "request")
    assert request["model"] == "\N{REPLACEMENT CHARACTER}"
    assert request["extra"] == {"k\N{REPLACEMENT CHARACTER}": ["v\N{REPLACEMENT CHARACTER}", 1]}
    assert any(line["event"] == "deep" for line in lines)


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("/v1/chat/completions", "/v1/chat/completions"),
        ("/v1/bias/scores/abc", "/v1/bias/scores/{run_id}"),
        ("/v1/embeddings", "/v1/*"),
        ("/metrics", "/metrics"),
        ("/wp-admin", "other"),
    ],
)
def test_route_labels_are_bounded(path: str, route: str) -> None:
    assert route_of(path) == route
