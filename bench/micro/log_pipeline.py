"""Access lines per second: structlog through stdlib `logging` versus its own bytes path.

    .venv/bin/python -m bench log_pipeline

Both render the same JSON line, with the same fields as the gateway's access
line, to /dev/null. This is the measurement behind `gateway.observability.logs`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from typing import Any

import structlog

from gateway.observability.logs import configure_logging

LINES = 50_000
FIELDS: dict[str, Any] = {
    "request_id": "6d168359da6548c382cdf42ba0ae37ce",
    "method": "POST",
    "path": "/v1/chat/completions",
    "status": 200,
    "latency_ms": 2.33,
    "key_name": None,
    "model": "gpt-4o-mini",
    "stream": False,
    "bias_status": "pending",
    "run_id": "05867057-2763-4ac8-a239-27b49ad8b6f2",
}


def stdlib_pipeline() -> None:
    """The shape of the gateway's first logging setup: every line through a stdlib handler."""
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
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
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    logging.getLogger().handlers = [handler]
    logging.getLogger().setLevel(logging.INFO)


def measure(name: str) -> float:
    log = structlog.get_logger("gateway.access")
    started = time.perf_counter()
    for _ in range(LINES):
        log.info("request", **FIELDS)
    return LINES / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench log_pipeline", description=__doc__)
    parser.parse_args(argv)  # no options: it answers --help and refuses unknown arguments
    real_stdout = sys.stdout
    with open(os.devnull, "w") as sink:
        sys.stdout = sink
        try:
            stdlib_pipeline()
            old = measure("stdlib")
            structlog.reset_defaults()
            configure_logging(json_logs=True)
            new = measure("bytes")
        finally:
            sys.stdout = real_stdout
    print(f"stdlib logging + JSONRenderer : {old:9.0f} lines/s")
    print(f"BytesLogger + orjson          : {new:9.0f} lines/s  ({new / old:.1f}x)")


if __name__ == "__main__":
    main()
