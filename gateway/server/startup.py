"""The one log line that says what a starting gateway will do, and the same line again
after a reload, with what changed. Pure, apart from the log."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog

from gateway.config import Settings
from gateway.observability.traces import exporter_name
from gateway.server.reload import ServedFrom
from gateway.store import redacted_url

__all__ = ["log_reloaded", "log_startup", "startup_fields"]

log = structlog.get_logger("gateway.startup")


def _set(value: object) -> str:
    # Never the secret itself, not even a prefix: only whether there is one.
    return "set" if value is not None else "not set"


def startup_fields(
    settings: Settings,
    *,
    config: str | None,
    source: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What runs: version, config source, policy modes, upstreams, judge, store, exporter,
    and which keys are set (never their values)."""
    from guard import __version__

    env = os.environ if env is None else env
    judge = settings.judge
    via_litellm = "/" in judge.model and judge.base_url is None
    return {
        "version": __version__,
        "config": str(Path(config).resolve()) if config else source or "environment variables only",
        "policies": {name: policy.mode for name, policy in settings.policies.items()},
        "upstream": settings.upstream.base_url,
        "anthropic_upstream": settings.anthropic.base_url,
        "judge_model": judge.model,
        "judge_endpoint": "litellm's default for the provider"
        if via_litellm
        else settings.judge_base_url(),
        "store": (
            redacted_url(settings.store.url.get_secret_value())
            if settings.store.url is not None
            else str(Path(settings.store.path).resolve())
        ),
        "scorer": settings.queue.scorer,
        "exporter": exporter_name(settings.telemetry, env),
        "keys": {
            "upstream": _set(settings.upstream.api_key),
            "anthropic": _set(settings.anthropic.api_key),
            "judge": _set(settings.judge_api_key()),
            "gateway": len(settings.all_keys()) or "none: open to anyone who can reach it",
        },
    }


def log_startup(
    settings: Settings,
    *,
    config: str | None,
    host: str,
    port: int,
    workers: int = 1,
    source: str | None = None,
) -> None:
    log.info(
        "bias-gateway starting",
        listen=f"http://{host}:{port}",
        workers=workers,
        **startup_fields(settings, config=config, source=source),
    )


def log_reloaded(
    settings: Settings,
    served: ServedFrom,
    *,
    changed: Mapping[str, str],
    needs_restart: list[str],
) -> None:
    """The startup line again, for the settings a reload put in force (per worker)."""
    log.info(
        "bias-gateway config reloaded",
        listen=f"http://{served.host}:{served.port}",
        workers=served.workers,
        pid=os.getpid(),
        changed=dict(changed),
        needs_restart=needs_restart,
        **startup_fields(settings, config=served.config),
    )
