"""Serve an ASGI app with real uvicorn on 127.0.0.1, in a background thread; pick a
free loopback port for a server started some other way."""

from __future__ import annotations

import socket
import threading
from typing import Any, Literal

import uvicorn

from testkit.waiting import wait_for

HOST = "127.0.0.1"


def free_port() -> int:
    """A loopback port nothing listens on now (another process may take it before use)."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


KEEP_ALIVE_SECONDS = 30


class ServerThread:
    def __init__(self, app: Any, *, lifespan: Literal["auto", "on", "off"] = "off") -> None:
        # Idle connections are kept longer than any client here keeps them (the gateway
        # lets its own go after 4 s), as OpenAI's servers do: with uvicorn's 5 s, a
        # loop stalled by a busy machine could close one as a request arrived on it.
        config = uvicorn.Config(
            app,
            host=HOST,
            port=0,
            log_level="warning",
            lifespan=lifespan,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> ServerThread:
        self.thread.start()
        wait_for(
            lambda: self.server.started or not self.thread.is_alive(),
            "uvicorn to start",
            interval=0.005,
        )
        if not self.server.started:
            raise RuntimeError("uvicorn stopped before it started")
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
