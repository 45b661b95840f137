"""Reloading a running process's config: on SIGHUP, or `POST /admin/reload`.

The `Reloader` reads the config again from where the process started (`ServedFrom`:
the YAML file, or the environment alone), validates it with the normal loader and,
if it is valid, hands it to the process's own `apply`: the gateway publishes a new
`Gateway` for new requests (`gateway.runtime.reconfigure`), a scorer switches its
judge. Settings that cannot change live keep their running values, each named in a
warning; a config that cannot be read or fails validation is refused, logged with
its reason, and the running one is kept.

With `--workers N` each worker reloads itself when SIGHUP reaches it, which the
supervisor forwards to all of them (`gateway.server.supervisor`).
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Literal

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.config import ConfigError, Settings, load_settings, settings_from_env
from gateway.errors import PermissionDenied
from gateway.observability.metrics import Metrics
from gateway.runtime.reconfigure import changes, keep_running
from gateway.runtime.resources import Gateway

__all__ = [
    "HangupLatch",
    "ReloadResult",
    "Reloader",
    "ServedFrom",
    "admin_reload",
    "read_again",
]

log = structlog.get_logger("gateway.reload")


@dataclass(frozen=True)
class ServedFrom:
    """Where a served process's settings came from, and where it listens: what a
    reload reads again and what its startup line says. Pickles, for the workers."""

    config: str | None  # the YAML file; None: the environment variables alone
    host: str
    port: int
    workers: int = 1
    # With workers: the supervisor's pid. It forwards a SIGHUP to every worker.
    supervisor: int | None = None

    def load(self) -> Settings:
        """The settings as the source says now; raises `ConfigError`."""
        return load_settings(self.config) if self.config else settings_from_env()


def read_again(served: ServedFrom, running: Settings) -> tuple[Settings, list[str]]:
    """The settings to put in force, read again from `served`, with the settings that
    need a restart at their `running` values; and the names of those the config changes.

    Raises `ConfigError` for a config that cannot be read or is not valid, and for one
    that would take a gateway with keys to none: a reload never opens a gateway.
    """
    settings, restart = keep_running(running, served.load())
    if running.all_keys() and not settings.all_keys():
        raise ConfigError(
            "the new config has no client keys: a reload never opens a gateway that"
            " requires keys (restart it to run open)"
        )
    return settings, restart


@dataclass(frozen=True)
class ReloadResult:
    outcome: Literal["ok", "refused"]
    changed: dict[str, str] = field(default_factory=dict)
    needs_restart: list[str] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "changed": self.changed,
            "needs_restart": self.needs_restart,
            "error": self.error,
        }


class Reloader:
    """Reads the config again and applies it, or refuses it; never raises.

    `running()` gives the settings in force; `apply(settings)` puts new ones in force
    and must not await; `announce(settings, result)` logs the process's startup line.
    """

    def __init__(
        self,
        served: ServedFrom | None,
        *,
        running: Callable[[], Settings],
        apply: Callable[[Settings], None],
        announce: Callable[[Settings, ReloadResult], None],
        metrics: Metrics,
    ) -> None:
        self.served = served
        self._running = running
        self._apply = apply
        self._announce = announce
        self._metrics = metrics
        self.active = True  # False once the process is stopping: a reload then is refused

    def reload(self) -> ReloadResult:
        if not self.active:
            return self._refuse("the process is stopping")
        if self.served is None:
            return self._refuse(
                "this gateway was given its settings in code, not read from a config"
                " file or the environment: there is nothing to read again"
            )
        running = self._running()
        try:
            settings, restart = read_again(self.served, running)
        except ConfigError as exc:
            return self._refuse(str(exc), config_failed=True)
        changed = changes(running, settings)
        if changed:
            try:
                self._apply(settings)
            except Exception as exc:  # a bug, or a judge that cannot be built
                log.exception("applying the reloaded config failed")
                return self._refuse(f"{type(exc).__name__}: {exc}", config_failed=True)
        for name in restart:
            log.warning("config change needs a restart; the running value is kept", setting=name)
        result = ReloadResult("ok", changed, restart)
        self._metrics.config_reloads.labels("ok").inc()
        self._metrics.config_reload_ok.set(1)
        self._announce(settings, result)
        return result

    def _refuse(self, error: str, *, config_failed: bool = False) -> ReloadResult:
        """`config_failed`: the config could not be read or applied (not merely a
        process with nothing to reload, or one stopping), which the alerts look for."""
        self._metrics.config_reloads.labels("refused").inc()
        if config_failed:
            self._metrics.config_reload_ok.set(0)
        log.error(
            "config reload refused; the running config is kept",
            config=self._source(),
            error=error,
            pid=os.getpid(),
        )
        return ReloadResult("refused", error=error)

    def _source(self) -> str:
        if self.served is None:
            return "settings given in code"
        return os.path.abspath(self.served.config) if self.served.config else "environment"

    def listen(self, loop: asyncio.AbstractEventLoop, latch: HangupLatch | None = None) -> None:
        """Reload on SIGHUP from now on, in `loop`; first, if `latch` caught one while
        the process was starting, reload for it."""
        if hasattr(signal, "SIGHUP"):  # not on Windows
            loop.add_signal_handler(signal.SIGHUP, self.reload)
        if latch is not None and latch.caught:
            self.reload()


class HangupLatch:
    """Remembers a SIGHUP that comes before the app listens for it (while the process
    starts), instead of letting it end the process; `Reloader.listen` then acts on it."""

    def __init__(self) -> None:
        self.caught = False

    @classmethod
    def install(cls) -> HangupLatch:
        latch = cls()
        if hasattr(signal, "SIGHUP"):  # not on Windows
            signal.signal(signal.SIGHUP, latch._catch)
            # A worker starts with SIGHUP blocked (`gateway.server.supervisor`): one sent
            # meanwhile is delivered now, to the latch.
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP})
        return latch

    def _catch(self, signum: int, frame: FrameType | None) -> None:
        self.caught = True


async def admin_reload(request: Request) -> Response:
    """`POST /admin/reload`: reload now, for an admin key. 200 with what changed, or 422
    with the error when the config is refused. With workers, the others reload
    asynchronously, on the SIGHUP this sends the supervisor."""
    gateway: Gateway = request.app.state.gateway
    key = gateway.auth.check(request.headers)
    if key is None:
        raise PermissionDenied(
            "Reloading the config needs an admin key, and this gateway has no keys:"
            " send its process SIGHUP instead."
        )
    if not key.admin:
        raise PermissionDenied("Reloading the config needs an admin key.")
    reloader: Reloader = request.app.state.reloader
    result = reloader.reload()
    body = {"object": "bias.config_reload", **result.to_dict(), "pid": os.getpid()}
    served = reloader.served
    if served is not None and served.supervisor is not None and result.outcome == "ok":
        os.kill(served.supervisor, signal.SIGHUP)
        body["workers"] = (
            f"this worker reloaded; the supervisor was sent SIGHUP, and the other"
            f" {served.workers - 1} reload asynchronously"
        )
    return JSONResponse(body, status_code=200 if result.outcome == "ok" else 422)
