"""Traces and evaluation events, read back from in-memory exporters and a real OTLP receiver."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.config import TelemetrySettings
from gateway.observability.traces import Telemetry
from testkit.fake_openai import FakeOpenAI, Fault
from testkit.servers import ServerThread
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, policy
from tests.support.telemetry import Captured

MakeGateway = Callable[..., RunningGateway]
MESSAGES: list[Any] = [{"role": "user", "content": "A secret-ish prompt about engineers."}]
REPLY = "Engineers from the north are lazy."


@pytest.fixture
def captured(otel_capture: Captured) -> Captured:
    """Spans and events of this test: guard's (global provider) and the gateway's."""
    otel_capture.spans.clear()
    otel_capture.logs.clear()
    otel_capture.telemetry.capture_content = False
    return otel_capture


def number(attributes: Mapping[str, object], key: str) -> float:
    """A span attribute that must be a number (not a bool), narrowed for comparisons."""
    value = attributes[key]
    assert isinstance(value, int | float), f"{key} is {value!r}, not a number"
    assert not isinstance(value, bool), f"{key} is a bool, not a number"
    return value


def text(attributes: Mapping[str, object], key: str) -> str:
    """A span attribute that must be a string, narrowed for `in` checks."""
    value = attributes[key]
    assert isinstance(value, str), f"{key} is {value!r}, not a string"
    return value


def test_enforce_span_tree_and_evaluation_event(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, captured: Captured
) -> None:
    fake_openai.reply = REPLY
    gateway = make_gateway(
        otel=captured.telemetry,
        judge={"reason": "inline"},
        **policy(mode="enforce", block_action="replace"),
    )

    raw = gateway.client().chat.completions.with_raw_response.create(
        model="gpt-test", messages=MESSAGES
    )
    completion_id = fake_openai.requests[0].body and raw.parse().id  # the refused body keeps the id

    # The server span ends just after the last byte has gone to the client.
    wait_for(lambda: captured.named("POST /v1/chat/completions"), "the server span")
    server = captured.one("POST /v1/chat/completions")
    chat = captured.one("chat gpt-test")
    evaluation = captured.one("evaluation bias")
    assert server.kind is SpanKind.SERVER
    assert chat.kind is SpanKind.CLIENT
    assert chat.parent is not None
    assert chat.parent.span_id == server.context.span_id
    assert evaluation.parent is not None
    assert evaluation.parent.span_id == server.context.span_id
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "gpt-test"
    assert attributes["gen_ai.response.model"] == "gpt-test"
    assert attributes["gen_ai.response.id"] == completion_id
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert number(attributes, "gen_ai.usage.input_tokens") > 0
    assert number(attributes, "gen_ai.usage.output_tokens") > 0
    assert attributes["server.address"] == "127.0.0.1"
    assert "gen_ai.request.stream" not in attributes

    steps = {
        name: captured.one(name) for name in ("extract opinions", "analyze", "generate reason")
    }
    for step in steps.values():
        assert step.parent is not None
        assert step.parent.span_id == evaluation.context.span_id
    judge_calls = captured.named("chat judge")
    assert len(judge_calls) == 3
    assert {call.parent.span_id for call in judge_calls if call.parent} == {
        step.context.span_id for step in steps.values()
    }
    assert len({span.context.trace_id for span in captured.spans.get_finished_spans()}) == 1

    evaluation_attributes = dict(evaluation.attributes or {})
    assert evaluation_attributes["gen_ai.evaluation.score.value"] == 1
    assert evaluation_attributes["gen_ai.evaluation.score.label"] == "block"
    (event,) = captured.events()
    assert event.trace_id == chat.context.trace_id
    assert event.span_id == chat.context.span_id
    event_attributes = dict(event.attributes or {})
    assert event_attributes["gen_ai.evaluation.name"] == "bias"
    assert event_attributes["gen_ai.evaluation.score.value"] == 1
    assert event_attributes["gen_ai.evaluation.score.label"] == "block"
    assert event_attributes["gen_ai.response.id"] == completion_id
    assert event_attributes["bias.scale"] == 1
    assert event_attributes["bias.opinions.count"] == 1
    assert event_attributes["bias.biased.count"] == 1
    assert event_attributes["bias.run_id"] == raw.headers["x-bias-run-id"]
    assert "gen_ai.evaluation.explanation" not in event_attributes  # content capture is off


def test_monitor_evaluation_is_parented_to_and_linked_with_the_chat_span(
    make_gateway: MakeGateway, captured: Captured
) -> None:
    gateway = make_gateway(otel=captured.telemetry)
    raw = gateway.client().chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    gateway.wait_for_score(raw.headers["x-bias-run-id"])
    wait_for(lambda: captured.named("evaluation bias") and captured.events(), "the evaluation span")

    chat = captured.one("chat m")
    evaluation = captured.one("evaluation bias")
    assert evaluation.parent is not None
    assert evaluation.parent.span_id == chat.context.span_id
    assert evaluation.context.trace_id == chat.context.trace_id
    assert [link.context.span_id for link in evaluation.links] == [chat.context.span_id]
    assert captured.events()[0].span_id == chat.context.span_id


def test_stream_chat_span_records_stream_and_first_chunk(
    make_gateway: MakeGateway, captured: Captured
) -> None:
    gateway = make_gateway(otel=captured.telemetry, **policy(mode="off"))
    list(gateway.client().chat.completions.create(model="m", messages=MESSAGES, stream=True))
    wait_for(lambda: captured.named("chat m"), "the chat span")
    attributes = dict(captured.one("chat m").attributes or {})
    assert attributes["gen_ai.request.stream"] is True
    assert 0 < number(attributes, "bias_gateway.time_to_first_chunk_s") < 5


def test_judge_failure_is_an_error_evaluation(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, captured: Captured
) -> None:
    fake_openai.fail(Fault(step="preprocess", status=401))
    gateway = make_gateway(otel=captured.telemetry, **policy(mode="enforce"))
    gateway.client().chat.completions.create(model="m", messages=MESSAGES)

    evaluation = captured.one("evaluation bias")
    assert not evaluation.status.is_ok
    (event,) = captured.events()
    attributes = dict(event.attributes or {})
    assert attributes["gen_ai.evaluation.score.label"] == "error"
    assert attributes["error.type"] == "JudgeUnavailable"
    assert "gen_ai.evaluation.score.value" not in attributes


def test_upstream_failure_marks_the_chat_span(
    make_gateway: MakeGateway, captured: Captured
) -> None:
    gateway = make_gateway(otel=captured.telemetry, upstream={"base_url": "http://127.0.0.1:9/v1"})
    with gateway.http() as http:
        http.post("/v1/chat/completions", json={"model": "m", "messages": MESSAGES})
    chat = captured.one("chat m")
    assert dict(chat.attributes or {})["error.type"] == "UpstreamUnavailable"
    assert not chat.status.is_ok


def test_traceparent_is_honoured_and_propagated(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, captured: Captured
) -> None:
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent_id = "00f067aa0ba902b7"
    gateway = make_gateway(otel=captured.telemetry, **policy(mode="enforce"))
    with gateway.http() as http:
        http.post(
            "/v1/chat/completions",
            json={"model": "m", "messages": MESSAGES},
            headers={"traceparent": f"00-{trace_id}-{parent_id}-01"},
        )
    # The server span ends just after the last byte has gone to the client.
    wait_for(lambda: captured.named("POST /v1/chat/completions"), "the server span")
    server = captured.one("POST /v1/chat/completions")
    chat = captured.one("chat m")
    assert format(server.context.trace_id, "032x") == trace_id
    assert server.parent is not None
    assert format(server.parent.span_id, "016x") == parent_id
    upstream_parent = fake_openai.requests[0].headers["traceparent"]
    assert upstream_parent == f"00-{trace_id}-{format(chat.context.span_id, '016x')}-01"
    judge_headers = [r.headers for r in fake_openai.requests if r.step != "chat"]
    assert all(headers["traceparent"].split("-")[1] == trace_id for headers in judge_headers)


def everything_exported(captured: Captured) -> str:
    parts: list[str] = []
    for span in captured.spans.get_finished_spans():
        parts.append(span.name)
        parts.extend(str(value) for value in (span.attributes or {}).values())
        for event in span.events:
            parts.extend(str(value) for value in (event.attributes or {}).values())
    for data in captured.logs.get_finished_logs():
        parts.append(str(data.log_record.body))
        parts.extend(str(value) for value in (data.log_record.attributes or {}).values())
    return "\n".join(parts)


@pytest.mark.parametrize("stream", [False, True])
def test_no_content_or_secret_leaks_when_capture_is_off(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, captured: Captured, stream: bool
) -> None:
    from structlog.testing import capture_logs

    fake_openai.reply = REPLY
    gateway = make_gateway(
        otel=captured.telemetry, api_keys="gw-secret-key-0001", **policy(mode="enforce")
    )
    with capture_logs() as logs, gateway.http("gw-secret-key-0001") as http:
        http.post(
            "/v1/chat/completions",
            json={"model": "m", "messages": MESSAGES, "stream": stream},
        )
    exported = everything_exported(captured) + "\n" + json.dumps(logs, default=str)
    for secret in ("sk-upstream-secret", "gw-secret-key-0001"):
        assert secret not in exported
    for content in (REPLY, MESSAGES[0]["content"], fake_openai.reason, "Geographical stereotype"):
        assert content not in exported
    assert "evaluation bias" in exported  # the check looked at real telemetry


def test_content_is_captured_when_switched_on(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, captured: Captured
) -> None:
    captured.telemetry.capture_content = True
    fake_openai.reply = REPLY
    gateway = make_gateway(
        otel=captured.telemetry, **policy(mode="enforce", block_action="replace")
    )
    gateway.client().chat.completions.create(model="m", messages=MESSAGES)
    chat = dict(captured.one("chat m").attributes or {})
    assert MESSAGES[0]["content"] in text(chat, "gen_ai.input.messages")
    assert REPLY in text(chat, "gen_ai.output.messages")
    wait_for(captured.events, "the evaluation event")  # it waits for the deferred explanation
    (event,) = captured.events()
    assert dict(event.attributes or {})["gen_ai.evaluation.explanation"] == fake_openai.reason


class Receiver:
    """A minimal OTLP/HTTP collector: decodes protobuf trace and log exports."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.logs: list[Any] = []
        self.lock = threading.Lock()
        self.app = Starlette(
            routes=[
                Route("/v1/traces", self._traces, methods=["POST"]),
                Route("/v1/logs", self._logs, methods=["POST"]),
            ]
        )

    async def _traces(self, request: Request) -> Response:
        export = ExportTraceServiceRequest.FromString(await request.body())
        with self.lock:
            for resource in export.resource_spans:
                for scope in resource.scope_spans:
                    self.spans.extend((resource.resource, span) for span in scope.spans)
        return Response(b"", media_type="application/x-protobuf")

    async def _logs(self, request: Request) -> Response:
        export = ExportLogsServiceRequest.FromString(await request.body())
        with self.lock:
            for resource in export.resource_logs:
                for scope in resource.scope_logs:
                    self.logs.extend(scope.log_records)
        return Response(b"", media_type="application/x-protobuf")


def test_otlp_http_export_reaches_a_real_receiver(
    make_gateway: MakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    receiver = Receiver()
    server = ServerThread(receiver.app).start()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", server.url)
        telemetry = Telemetry.from_settings(
            TelemetrySettings(exporter="otlp", service_name="bias-gateway-test")
        )
        # The server span ends after the client has its answer: watch the spans end, and
        # shut down (which flushes both batch processors) only once it has.
        ended = InMemorySpanExporter()
        telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(ended))
        gateway = make_gateway(otel=telemetry, **policy(mode="enforce", block_action="replace"))
        gateway.client().chat.completions.create(model="m", messages=MESSAGES)
        wait_for(
            lambda: any(s.name == "POST /v1/chat/completions" for s in ended.get_finished_spans()),
            message="the server span to end",
        )
        telemetry.shutdown()
    finally:
        server.stop()

    names = {span.name for _, span in receiver.spans}
    assert {"POST /v1/chat/completions", "chat m", "evaluation bias"} <= names
    services = {
        attribute.value.string_value
        for resource, _ in receiver.spans
        for attribute in resource.attributes
        if attribute.key == "service.name"
    }
    assert services == {"bias-gateway-test"}
    (event,) = [
        record for record in receiver.logs if record.event_name == "gen_ai.evaluation.result"
    ]
    attributes = {attribute.key: attribute.value for attribute in event.attributes}
    assert attributes["gen_ai.evaluation.name"].string_value == "bias"
    assert attributes["gen_ai.evaluation.score.value"].double_value == 1.0
    chat = next(span for _, span in receiver.spans if span.name == "chat m")
    assert event.span_id == chat.span_id


@pytest.mark.parametrize(("exporter", "message"), [("jaeger", "none, console or otlp")])
def test_unknown_exporter_is_rejected(exporter: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Telemetry.from_settings(TelemetrySettings(), env={"OTEL_TRACES_EXPORTER": exporter})


def test_capture_switch_follows_the_standard_variable() -> None:
    on = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    assert Telemetry.from_settings(TelemetrySettings(), env=on).capture_content is True
    assert Telemetry.from_settings(TelemetrySettings(), env={}).capture_content is False
    forced = TelemetrySettings(capture_content=False)
    assert Telemetry.from_settings(forced, env=on).capture_content is False


def test_without_an_exporter_spans_are_not_recorded_but_carry_ids() -> None:
    telemetry = Telemetry.from_settings(TelemetrySettings(), env={})
    span = telemetry.start_chat("m", provider="openai", base_url="http://h:1/v1", stream=False)
    assert not span.is_recording()
    assert span.get_span_context().is_valid
    assert telemetry.exporting is False


@pytest.mark.parametrize(("exporter", "installed"), [("none", False), ("console", True)])
def test_the_global_provider_is_installed_only_when_spans_are_exported(
    exporter: str, installed: bool
) -> None:
    # A fresh interpreter: this test session already has a global provider.
    code = (
        "from opentelemetry import trace\n"
        "from gateway.config import TelemetrySettings\n"
        "from gateway.observability.traces import Telemetry\n"
        f"telemetry = Telemetry.from_settings(TelemetrySettings(exporter={exporter!r}), env={{}})\n"
        "telemetry.install_global()\n"
        "print(trace.get_tracer_provider() is telemetry.tracer_provider)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == str(installed)


@pytest.mark.parametrize(
    ("path", "body", "operation", "provider", "finish"),
    [
        ("/v1/responses", {"model": "m1", "input": "hi"}, "chat", "openai", "completed"),
        ("/v1/completions", {"model": "m1", "prompt": "hi"}, "text_completion", "openai", "stop"),
        (
            "/v1/messages",
            {"model": "m1", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]},
            "chat",
            "anthropic",
            "end_turn",
        ),
    ],
)
def test_every_surface_traces_its_upstream_call_and_evaluation(
    fake_openai: FakeOpenAI,
    make_gateway: MakeGateway,
    captured: Captured,
    path: str,
    body: dict[str, object],
    operation: str,
    provider: str,
    finish: str,
) -> None:
    fake_openai.reply = REPLY
    gateway = make_gateway(otel=captured.telemetry, **policy(mode="enforce"))
    with gateway.http() as http:
        response = http.post(path, json=body)
    assert response.status_code == 422  # the fake judge finds the reply biased
    wait_for(lambda: captured.named(f"POST {path}"), "the server span")
    upstream = captured.one(f"{operation} m1")
    attributes = dict(upstream.attributes or {})
    assert attributes["gen_ai.operation.name"] == operation
    assert attributes["gen_ai.provider.name"] == provider
    assert attributes["bias_gateway.api"] == path.removeprefix("/v1/")
    assert attributes["gen_ai.response.finish_reasons"] == (finish,)
    assert text(attributes, "gen_ai.response.id")
    assert number(attributes, "gen_ai.usage.input_tokens") > 0
    assert number(attributes, "gen_ai.usage.output_tokens") > 0
    evaluation = dict(captured.one("evaluation bias").attributes or {})
    assert evaluation["gen_ai.evaluation.score.label"] == "block"
    assert evaluation["bias.api"] == path.removeprefix("/v1/")
    wait_for(captured.events, "the evaluation event")  # sent once the deferred reason is in
    (event,) = captured.events()
    assert event.attributes["gen_ai.response.id"] == attributes["gen_ai.response.id"]
