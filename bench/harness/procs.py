"""Server processes the harness starts: each in its own process group, always stopped.

with Processes() as procs:
    fake = procs.start("fake", [sys.executable, "-m", "bench.fakes.server", ...],
                       port=port, ready_path="/v1/models", log_dir=tmp)
    ...
# every process started above is stopped here, on errors and Ctrl-C too
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType

import psutil

__all__ = [
    "Processes",
    "ServerProcess",
    "StartError",
    "free_port",
    "machine_busy_seconds",
    "stop_on_signals",
]


class StartError(RuntimeError):
    """A server did not become ready; the message ends with the tail of its log."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def machine_busy_seconds() -> float:
    """CPU seconds all cores have spent busy since boot (from /proc/stat)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    ticks = [int(value) for value in fields]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


@dataclass
class ServerProcess:
    """One started server: its process, port and log file."""

    name: str
    popen: subprocess.Popen[bytes]
    port: int
    log_path: Path
    _cpu_mark: float = field(default=0.0, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _tree(self) -> list[psutil.Process]:
        try:
            root = psutil.Process(self.popen.pid)
            return [root, *root.children(recursive=True)]
        except psutil.Error:
            return []

    def rss_mb(self) -> float:
        """Resident memory of the process tree now, in MB."""
        total = 0
        for proc in self._tree():
            with contextlib.suppress(psutil.Error):
                total += proc.memory_info().rss
        return round(total / 1e6, 1)

    def peak_rss_mb(self) -> float:
        """Peak resident memory (VmHWM) summed over the process tree, in MB."""
        total = 0
        for proc in self._tree():
            with contextlib.suppress(OSError):
                status = Path(f"/proc/{proc.pid}/status").read_text()
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1]) * 1024
        return round(total / 1e6, 1)

    def cpu_seconds(self) -> float:
        total = 0.0
        for proc in self._tree():
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                total += times.user + times.system
        return total

    def mark_cpu(self) -> None:
        self._cpu_mark = self.cpu_seconds()

    def cpu_since_mark(self, wall: float) -> float:
        """CPU use since `mark_cpu()`, in % of one core over `wall` seconds."""
        return round(100 * (self.cpu_seconds() - self._cpu_mark) / max(wall, 1e-9), 1)

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def alive(self) -> bool:
        return self.popen.poll() is None


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:  # loopback only
            return bool(response.status < 500)
    except urllib.error.HTTPError as exc:
        return exc.code < 500
    except (OSError, ValueError):
        return False


class Processes:
    """Starts servers and guarantees they are stopped: SIGTERM to the group, then SIGKILL."""

    def __init__(self, *, stop_timeout: float = 10.0) -> None:
        self._started: list[ServerProcess] = []
        self._stop_timeout = stop_timeout

    def __enter__(self) -> Processes:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_all()

    def start(
        self,
        name: str,
        argv: list[str],
        *,
        port: int,
        ready_path: str,
        log_dir: Path,
        env: dict[str, str] | None = None,
        ready_timeout: float = 60.0,
    ) -> ServerProcess:
        """Start `argv` and wait (bounded) until GET `ready_path` answers below 500."""
        log_path = log_dir / f"{name}.log"
        with log_path.open("wb") as log_file:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                start_new_session=True,  # its own group: one killpg stops its children too
            )
        server = ServerProcess(name, popen, port, log_path)
        self._started.append(server)
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if not server.alive():
                raise StartError(
                    f"{name} exited with {popen.returncode}:\n{server.log_tail()}".rstrip()
                )
            if _answers(server.url + ready_path):
                return server
            time.sleep(0.1)
        self.stop(server)
        raise StartError(f"{name} not ready after {ready_timeout:g}s:\n{server.log_tail()}")

    def stop(self, server: ServerProcess) -> None:
        """SIGTERM the server's process group; SIGKILL it if it has not exited in time."""
        if server in self._started:
            self._started.remove(server)
        if server.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.popen.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.popen.wait(timeout=self._stop_timeout)
        # Children that outlived their parent are in the same group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.popen.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.popen.wait(timeout=5)

    def stop_all(self) -> None:
        for server in reversed(list(self._started)):
            self.stop(server)


def stop_on_signals() -> None:
    """Ctrl-C and SIGTERM stop a run with every `finally` run, so that each process it
    started is stopped; also when it was started with SIGINT ignored (`&`)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _as_sigint)


def _as_sigint(signum: int, frame: FrameType | None) -> None:
    """Raised here, inside an event loop's callback, KeyboardInterrupt would be taken for
    the callback's own error, so SIGTERM sends SIGINT, whose handler is then
    asyncio.Runner's (it cancels the main task, then raises KeyboardInterrupt) or,
    outside a loop, Python's own."""
    signal.raise_signal(signal.SIGINT)
