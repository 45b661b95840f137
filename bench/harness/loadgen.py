"""Load from `wrk` (Debian's package): closed-loop, one thread, for a fixed duration.

wrk is C on epoll; one thread of it drives well over 10k req/s here, several
times what any Python server under test answers. A Lua script sets the POST
body and prints the summary as one JSON line, so nothing is scraped from text.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["LoadResult", "WrkMissing", "require_wrk", "run_wrk"]

INSTALL_HINT = (
    "install it with: sudo apt-get install -y wrk   (Debian/Ubuntu; or run `make bench` as root)"
)

_MARK = "BENCH-JSON "

_SCRIPT = """
wrk.method = "POST"
wrk.body = [==[{body}]==]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer {key}"

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{mark}{{"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,' ..
    '"write":%d,"status":%d,"timeout":%d,"p50":%d,"p90":%d,"p99":%d,"mean":%.1f,"max":%d}}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean, latency.max))
end
"""


class WrkMissing(RuntimeError):
    """wrk is not on PATH."""


def require_wrk() -> str:
    path = shutil.which("wrk")
    if path is None:
        raise WrkMissing(f"the load generator `wrk` was not found; {INSTALL_HINT}")
    return path


@dataclass
class LoadResult:
    """One wrk run: throughput, latency percentiles (ms) and errors."""

    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    errors: int
    non_2xx: int
    cpu_percent: float  # wrk's own CPU use, in % of one core

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_wrk(
    url: str,
    body: dict[str, Any],
    *,
    connections: int,
    duration: float,
    work_dir: Path,
    api_key: str = "bench",
) -> LoadResult:
    """Drive POST `url` with `body` from `connections` connections for `duration` seconds."""
    script = work_dir / f"wrk-{os.getpid()}-{time.monotonic_ns()}.lua"
    script.write_text(
        _SCRIPT.format(
            body=json.dumps(body),
            key=api_key,
            mark=_MARK,
        )
    )
    argv = [
        require_wrk(),
        "-t1",
        f"-c{connections}",
        f"-d{max(1, round(duration))}s",
        "--timeout",
        "10s",
        "-s",
        str(script),
        url,
    ]
    out_path = work_dir / "wrk.out"
    with out_path.open("wb") as out:
        popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        rusage = _wait_bounded(popen, deadline=time.monotonic() + duration + 30)
    finally:
        if popen.returncode is None:  # interrupted: never leave wrk behind
            popen.kill()
            popen.wait()
    text = out_path.read_text(errors="replace")
    script.unlink(missing_ok=True)
    line = next((row for row in text.splitlines() if row.startswith(_MARK)), None)
    if line is None:
        raise RuntimeError(f"wrk printed no summary (exit {popen.returncode}):\n{text[-2000:]}")
    data = json.loads(line[len(_MARK) :])
    seconds = data["duration_us"] / 1e6
    cpu = rusage.ru_utime + rusage.ru_stime
    return LoadResult(
        requests=data["requests"],
        seconds=round(seconds, 3),
        rps=round(data["requests"] / seconds, 1) if seconds else 0.0,
        p50_ms=data["p50"] / 1000,
        p90_ms=data["p90"] / 1000,
        p99_ms=data["p99"] / 1000,
        mean_ms=round(data["mean"] / 1000, 3),
        errors=data["connect"] + data["read"] + data["write"] + data["timeout"],
        non_2xx=data["status"],
        cpu_percent=round(100 * cpu / seconds, 1) if seconds else 0.0,
    )


def _wait_bounded(popen: subprocess.Popen[bytes], *, deadline: float) -> Any:
    """Reap `popen` with wait4 (for its CPU use); kill it if it outlives `deadline`."""
    while True:
        pid, status, rusage = os.wait4(popen.pid, os.WNOHANG)
        if pid:
            popen.returncode = os.waitstatus_to_exitcode(status)
            return rusage
        if time.monotonic() > deadline:
            popen.send_signal(signal.SIGKILL)
            pid, status, rusage = os.wait4(popen.pid, 0)
            popen.returncode = os.waitstatus_to_exitcode(status)
            return rusage
        time.sleep(0.02)
