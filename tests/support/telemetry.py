"""In-memory OpenTelemetry for tests."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway.observability.traces import Telemetry


class Captured:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.logs = InMemoryLogRecordExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        self.telemetry = Telemetry(tracer_provider, logger_provider)

    def install_global(self) -> None:
        """guard's spans go to the global provider, which can be set once per process."""
        trace.set_tracer_provider(self.telemetry.tracer_provider)

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans.get_finished_spans() if span.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, [span.name for span in self.spans.get_finished_spans()]
        return found[0]

    def events(self) -> list[Any]:
        return [
            data.log_record
            for data in self.logs.get_finished_logs()
            if data.log_record.event_name == "gen_ai.evaluation.result"
        ]
