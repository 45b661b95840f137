"""`bias-gateway serve --workers N`: uvicorn's supervisor, with SIGHUP as a reload.

uvicorn's `Multiprocess` answers SIGHUP by replacing every worker with one started
from the same pickled options: the old settings, and streams cut. `Supervisor`
forwards the signal instead, at once, and each worker reloads in place
(`gateway.server.reload`). It also reads the config again itself, in its loop, so
that a worker it starts later (one replaced after a crash, one added on SIGTTIN)
starts from the config last read successfully, not the one `serve` started with;
a worker started between the two is sent the signal then.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import signal
import threading
from socket import socket
from typing import Any

import structlog
import uvicorn
from uvicorn.supervisors import Multiprocess

from gateway.config import ConfigError
from gateway.server.app import ServeOptions, serve_app
from gateway.server.reload import HangupLatch, read_again

__all__ = ["Supervisor"]

log = structlog.get_logger("gateway.reload")


class Supervisor(Multiprocess):
    def __init__(
        self,
        config: uvicorn.Config,
        sockets: list[socket],
        options: ServeOptions,
        *,
        latch: HangupLatch | None = None,
        **extra: Any,
    ) -> None:
        """`latch`: the one `serve` installed while it started; a SIGHUP it caught is
        handled once the workers run. `extra`: what an older uvicorn also takes."""
        super().__init__(config, sockets=sockets, **extra)
        self.options = options
        self._forwarded: set[int] = set()
        # SIGHUP stays blocked here, and so in every worker spawned from here, until the
        # worker can take it (`HangupLatch.install`): one sent to a worker still starting
        # waits for it instead of ending it. This thread takes the supervisor's own.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
        threading.Thread(target=self._take_hangups, name="sighup", daemon=True).start()
        if latch is not None and latch.caught:
            self.signal_queue.append(signal.SIGHUP)

    def _workers(self) -> set[int]:
        return {process.pid for process in self.processes if process.pid is not None}

    def _signal(self, pids: set[int]) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):  # it ended just now
                os.kill(pid, signal.SIGHUP)

    def _take_hangups(self) -> None:
        """Pass each SIGHUP on to the workers at once (uvicorn's loop looks for signals
        twice a second), then queue it for `handle_hup` in that loop."""
        while True:
            signal.sigwait({signal.SIGHUP})
            self._forwarded = self._workers()
            self._signal(self._forwarded)
            self.signal_queue.append(signal.SIGHUP)

    def handle_hup(self) -> None:
        served = self.options.served
        if served is not None:
            try:
                settings, _ = read_again(served, self.options.settings)
            except ConfigError as exc:
                # Each worker refuses it too, and says so; this only keeps later workers right.
                log.error("SIGHUP: config refused; workers started later keep the running one",
                          error=str(exc))  # fmt: skip
            else:
                self.options = dataclasses.replace(self.options, settings=settings)
                self.config.app = functools.partial(serve_app, self.options)
        # A worker started since the signal was passed on may have the old settings.
        self._signal(self._workers() - self._forwarded)
        self._forwarded = set()
        log.info(
            "SIGHUP forwarded: each worker reloads its config in place",
            workers=sorted(self._workers()),
        )
