"""OpenTelemetry for the gateway: providers, exporters, and the GenAI spans and events.

The gateway owns the SDK. `guard` only uses the API, so its spans (the judge
steps and judge calls) land wherever the global tracer provider sends them;
`Telemetry.install_global()` makes that this gateway's provider.

Attribute names follow the OpenTelemetry GenAI semantic conventions
(gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model, ...).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    ConsoleLogRecordExporter,
    LogRecordExporter,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from gateway.config import TelemetrySettings

__all__ = ["EVALUATION_EVENT", "Telemetry", "capture_content_enabled", "exporter_name"]

EVALUATION_EVENT = "gen_ai.evaluation.result"
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def capture_content_enabled(settings: TelemetrySettings, env: Mapping[str, str]) -> bool:
    if settings.capture_content is not None:
        return settings.capture_content
    return env.get(CAPTURE_ENV, "").strip().lower() in ("true", "1", "yes")


def exporter_name(settings: TelemetrySettings, env: Mapping[str, str]) -> str:
    """`telemetry.exporter`, else `$OTEL_TRACES_EXPORTER`, else `none`."""
    return settings.exporter or env.get("OTEL_TRACES_EXPORTER", "none").strip().lower()


class Telemetry:
    """The tracer, the event logger and the content switch of one gateway process."""

    def __init__(
        self,
        tracer_provider: TracerProvider,
        logger_provider: LoggerProvider,
        *,
        capture_content: bool = False,
        exporting: bool = True,
    ) -> None:
        self.exporting = exporting  # False: nothing leaves the process, so skip the events
        self.tracer_provider = tracer_provider
        self.logger_provider = logger_provider
        self.tracer = tracer_provider.get_tracer("gateway")
        self.events = logger_provider.get_logger("gateway")
        self.capture_content = capture_content

    @classmethod
    def from_settings(
        cls, settings: TelemetrySettings, env: Mapping[str, str] | None = None
    ) -> Telemetry:
        env = os.environ if env is None else env
        service = settings.service_name or env.get("OTEL_SERVICE_NAME") or "bias-gateway"
        resource = Resource.create({"service.name": service})
        exporters = _exporters(exporter_name(settings, env), env)
        # With no exporter, spans are not recorded at all; they still carry trace ids,
        # for the logs and for the traceparent sent upstream.
        sampler = ALWAYS_OFF if exporters is None else ParentBased(ALWAYS_ON)
        tracer_provider = TracerProvider(resource=resource, sampler=sampler)
        logger_provider = LoggerProvider(resource=resource)
        if exporters is not None:
            span_exporter, log_exporter = exporters
            tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
            logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter))
        return cls(
            tracer_provider,
            logger_provider,
            capture_content=capture_content_enabled(settings, env),
            exporting=exporters is not None,
        )

    def install_global(self) -> None:
        """Make this the global tracer provider, so `guard`'s spans reach the same exporter.

        OpenTelemetry allows one global provider per process; when one is set
        already (an embedding app, or a test), it is left in place. Without an
        exporter nothing is installed: `guard`'s spans then stay the API's no-op
        spans, which skip the SDK's sampling and id generation.
        """
        if not self.exporting:
            return
        current = trace.get_tracer_provider()
        if not isinstance(current, TracerProvider):
            trace.set_tracer_provider(self.tracer_provider)

    def shutdown(self) -> None:
        self.tracer_provider.force_flush()
        self.logger_provider.force_flush()
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()

    # -- GenAI spans -----------------------------------------------------------------

    def start_chat(
        self,
        model: str,
        *,
        provider: str,
        base_url: str,
        stream: bool,
        operation: str = "chat",
        api: str | None = None,
    ) -> Span:
        """The client span of one upstream model call, named `{operation} {model}`."""
        name = f"{operation} {model}"
        if not self.exporting:
            # The sampler drops every span here, so its attributes would be built for nothing.
            return self.tracer.start_span(name, kind=SpanKind.CLIENT)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        }
        if stream:
            attributes["gen_ai.request.stream"] = True
        if api is not None:
            attributes["bias_gateway.api"] = api
        if base_url:
            parts = urlsplit(base_url)
            if parts.hostname:
                attributes["server.address"] = parts.hostname
                attributes["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
        return self.tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)

    @staticmethod
    def end_chat(
        span: Span,
        *,
        response_model: str | None = None,
        response_id: str | None = None,
        finish_reasons: list[str] | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        status: int | None = None,
        error_type: str | None = None,
        ttft_s: float | None = None,
    ) -> None:
        if not span.is_recording():
            span.end()
            return
        if response_model:
            span.set_attribute("gen_ai.response.model", response_model)
        if response_id:
            span.set_attribute("gen_ai.response.id", response_id)
        if finish_reasons:
            span.set_attribute("gen_ai.response.finish_reasons", finish_reasons)
        if input_tokens is not None:
            span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        if output_tokens is not None:
            span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
        if ttft_s is not None:
            # Not (yet) a GenAI convention attribute, so it lives in our own namespace.
            span.set_attribute("bias_gateway.time_to_first_chunk_s", ttft_s)
        if status is not None:
            span.set_attribute("http.response.status_code", status)
        if error_type is not None:
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, error_type))
        span.end()

    def emit_evaluation(self, attributes: dict[str, Any], context: Context | None) -> None:
        """The `gen_ai.evaluation.result` event, in the chat span's context."""
        if not self.exporting:
            return
        self.events.emit(
            LogRecord(
                event_name=EVALUATION_EVENT,
                context=context,
                severity_number=SeverityNumber.INFO,
                attributes=attributes,
            )
        )


def _exporters(name: str, env: Mapping[str, str]) -> tuple[SpanExporter, LogRecordExporter] | None:
    if name in ("", "none"):
        return None
    if name == "console":
        return ConsoleSpanExporter(), ConsoleLogRecordExporter()
    if name != "otlp":
        raise ValueError(f"telemetry exporter must be none, console or otlp, got {name!r}")
    protocol = env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf").strip().lower()
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
                OTLPLogExporter as GrpcLogExporter,
            )
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcSpanExporter,
            )
        except ImportError as exc:
            raise ValueError(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the grpc extra: "
                "pip install 'bias-gateway[grpc]'"
            ) from exc
        return GrpcSpanExporter(), GrpcLogExporter()
    if protocol != "http/protobuf":
        raise ValueError(f"OTEL_EXPORTER_OTLP_PROTOCOL {protocol!r} is not supported")
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(), OTLPLogExporter()
