"""Serve an ASGI app with real uvicorn on 127.0.0.1, in a background thread."""

from __future__ import annotations

import threading
import time
from typing import Any, Literal

import uvicorn


class ServerThread:
    def __init__(self, app: Any, *, lifespan: Literal["auto", "on", "off"] = "off") -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", lifespan=lifespan
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.005)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
