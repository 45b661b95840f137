"""structlog's configuration: JSON lines (or a console view on a terminal), with trace ids.

The gateway's own lines take structlog's short path, rendered by orjson and
written as bytes: 3.4x the lines/s of routing every line through the stdlib
`logging` machinery (119k against 35k lines/s, `python -m bench.log_pipeline`).
uvicorn's and the libraries' stdlib records still arrive through a
`ProcessorFormatter`, so every line on stdout has the same shape.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, BinaryIO

import orjson
import structlog
from opentelemetry import trace

from guard.outputs import valid_text

__all__ = ["add_trace_ids", "configure_logging"]


def add_trace_ids(
    logger: Any, method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: the current span's trace_id and span_id on every line."""
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        event.setdefault("trace_id", format(context.trace_id, "032x"))
        event.setdefault("span_id", format(context.span_id, "016x"))
    return event


def _dumps(value: Any, **_: Any) -> str:
    return _dump_bytes(value).decode()


def _dump_bytes(value: Any, **_: Any) -> bytes:
    try:
        return orjson.dumps(value, default=str)
    except TypeError:
        # orjson refuses what UTF-8 cannot hold (an unpaired surrogate a client sent
        # as valid escaped JSON) and nesting past its limit: repair, never lose the line.
        return orjson.dumps(_loggable(value, 0), default=_loggable_str)


def _loggable(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return valid_text(value)
    if depth > 32:
        return "…"
    if isinstance(value, Mapping):
        return {valid_text(str(key)): _loggable(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_loggable(item, depth + 1) for item in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return _loggable_str(value)


def _loggable_str(value: Any) -> str:
    return valid_text(str(value))


class _NamedBytesLogger(structlog.BytesLogger):
    """A `BytesLogger` that knows its name, for the `logger` field."""

    def __init__(self, file: BinaryIO, name: str) -> None:
        super().__init__(file)
        self.name = name


def configure_logging(*, json_logs: bool | None = None, level: str = "INFO") -> None:
    """JSON lines by default; readable console output when stdout is a terminal."""
    if json_logs is None:
        json_logs = not sys.stdout.isatty()
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        add_trace_ids,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    numeric_level = logging.getLevelNamesMapping()[level.upper()]
    if json_logs:
        stream = sys.stdout.buffer
        structlog.configure(
            processors=[
                *shared,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(serializer=_dump_bytes),
            ],
            logger_factory=lambda *args: _NamedBytesLogger(stream, str(args[0]) if args else ""),
            wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
            cache_logger_on_first_use=True,
        )
        renderer: Any = structlog.processors.JSONRenderer(serializer=_dumps)
    else:
        renderer = structlog.dev.ConsoleRenderer()
        structlog.configure(
            processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
            logger_factory=structlog.stdlib.LoggerFactory(),
            wrapper_class=structlog.stdlib.BoundLogger,
            cache_logger_on_first_use=True,
        )
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(numeric_level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers = []
        logging.getLogger(name).propagate = True
    # uvicorn's own access log would duplicate ours.
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    for noisy in ("httpx", "httpcore", "LiteLLM", "litellm"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
