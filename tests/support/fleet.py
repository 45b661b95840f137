"""Gateway and scorer subprocesses a test starts, their output read as it comes, and
all of them stopped at the end (`fleet`)."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["Fleet", "Output", "fleet"]


class Output:
    """Reads a process's output as it comes (a full pipe would stall the process)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def join(self) -> None:
        self._thread.join(timeout=10)

    def events(self, name: str) -> list[dict[str, Any]]:
        """The JSON log lines whose `event` is `name`."""
        found = []
        for line in list(self.lines):
            if not line.startswith("{"):
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if entry.get("event") == name:
                found.append(entry)
        return found

    def text(self) -> str:
        return "".join(self.lines)


class Fleet:
    """The processes a test started; `stop()` ends every one still running."""

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen[str]] = []
        self.outputs: list[Output] = []

    def add(self, started: tuple[subprocess.Popen[str], str]) -> tuple[Output, str]:
        process, url = started
        self.processes.append(process)
        output = Output(process)
        self.outputs.append(output)
        return output, url

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        for output in self.outputs:
            output.join()


@pytest.fixture
def fleet() -> Iterator[Fleet]:
    running = Fleet()
    try:
        yield running
    finally:
        running.stop()
