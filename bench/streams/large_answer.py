"""Peak RSS of the gateway while it relays one huge upstream answer.

Issue 9, item 12: a 50 MB answer once took the gateway from ~70 MB to 544-646 MB.
This starts the fake upstream and judge in this process (a thread), the gateway
as its own process, sends one request per case, and reads the gateway's peak
resident set (`VmHWM` in /proc/PID/status; reset before each case by writing
5 to /proc/PID/clear_refs, where the kernel allows it) after each.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import httpx

from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.procs import Processes
from testkit.fake_openai import FakeOpenAI
from testkit.servers import ServerThread

CASES = (
    ("monitor", False, "buffer"),
    ("monitor", True, "buffer"),
    ("enforce", False, "buffer"),
    ("enforce", True, "buffer"),
    ("enforce", True, "passthrough"),
)


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench large_answer")
    parser.add_argument("--megabytes", type=int, default=50)
    args = parser.parse_args(argv)
    fake = FakeOpenAI()
    fake.reply = "Engineers are people. " * (args.megabytes * 1024 * 1024 // 22)
    fake.chunks = 5000
    fake.verdicts = [("no", "neutral")]
    server = ServerThread(fake.app).start()
    fake.base_url = f"{server.url}/v1"
    print(f"answer: {len(fake.reply) / 1e6:.1f} MB of text", file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Processes() as procs:
        for mode, stream, stream_policy in CASES:
            config = gateway_config(
                server.url, server.url, store=Path(tmp) / "scores.db", mode=mode
            )
            config["policies"]["default"]["stream_policy"] = stream_policy
            config["server"]["max_body_bytes"] = 1024 * 1024
            name = f"gateway-{mode}-{stream}-{stream_policy}"
            gateway = start_gateway(procs, name, config, log_dir=Path(tmp), log_level=None)
            port = gateway.port
            pid = gateway.popen.pid
            before = status_kib(pid, "VmRSS")
            reset_peak(pid)
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
            received = 0
            with (
                httpx.Client(timeout=120) as http,
                http.stream("POST", f"http://127.0.0.1:{port}/v1/chat/completions", json=body) as r,
            ):
                for chunk in r.iter_raw():
                    received += len(chunk)
                run_id = r.headers.get("x-bias-run-id")
            with httpx.Client(timeout=60) as http:
                for _ in range(200):
                    record = http.get(f"http://127.0.0.1:{port}/v1/bias/scores/{run_id}").json()
                    if record.get("status") != "pending":
                        break
            peak = status_kib(pid, "VmHWM")
            rows.append(
                (mode, stream, stream_policy, received / 1e6, before / 1024, peak / 1024, record)
            )
            procs.stop(gateway)
    server.stop()
    print("| mode | stream | policy | received MB | RSS before MB | peak RSS MB | record |")
    print("|---|---|---|---|---|---|---|")
    for mode, stream, policy, received_mb, before_mb, peak_mb, record in rows:
        outcome = f"{record.get('status')}, truncated={record.get('truncated')}"
        print(
            f"| {mode} | {stream} | {policy} | {received_mb:.1f} | {before_mb:.0f} | {peak_mb:.0f} "
            f"| {outcome} |"
        )


if __name__ == "__main__":
    main()
