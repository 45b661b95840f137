"""A real LiteLLM proxy (`litellm --config ...`) as a subprocess, refused the network.

`python -m tests.support.litellm_proxy ARGS` runs LiteLLM's own CLI after
installing the test suite's loopback-only socket guard (`tests.support.network`) in
that process too, so the proxy cannot reach the internet whatever it tries;
LiteLLM's price map comes from its package (`LITELLM_LOCAL_MODEL_COST_MAP`).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from testkit.servers import free_port
from testkit.waiting import answering, wait_for

__all__ = ["STARTUP_SECONDS", "LiteLLMProxy", "start_litellm"]

# The proxy imports most of its package at startup: tens of seconds on a busy machine.
STARTUP_SECONDS = 180


@dataclass
class LiteLLMProxy:
    process: subprocess.Popen[bytes]
    url: str
    master_key: str
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_litellm(config: Path, log: Path) -> LiteLLMProxy:
    """Start the proxy on `config` on a free port; wait until it answers."""
    port = free_port()
    master_key = f"sk-{secrets.token_hex(16)}"
    env = {
        # Not measured by coverage (which `patch = ["subprocess"]` would start in it):
        # traced, LiteLLM's startup, thousands of modules, takes minutes. BiasGuardrail's
        # code is measured where the tests call it in process.
        **{name: value for name, value in os.environ.items() if not name.startswith("COVERAGE_")},
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_MASTER_KEY": master_key,
        "LITELLM_LOG": "INFO",
        # The launcher imports tests.support.network, which wants the project's root on the path.
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    argv = [sys.executable, "-m", "tests.support.litellm_proxy", "--config", str(config)]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
    with log.open("wb") as sink:
        process = subprocess.Popen(argv, env=env, stdout=sink, stderr=subprocess.STDOUT)
    proxy = LiteLLMProxy(process, f"http://127.0.0.1:{port}", master_key, log)

    alive = answering(process, f"{proxy.url}/health/liveliness", "litellm", proxy.output)
    try:
        wait_for(alive, "the LiteLLM proxy to start", timeout=STARTUP_SECONDS, interval=0.5)
    except BaseException:
        proxy.stop()
        raise
    return proxy


def _run_cli() -> None:
    from tests.support.network import refuse_the_network

    refuse_the_network()  # the suite's guard, for good in this process: loopback only
    from litellm_cli.main import proxy_server  # type: ignore[import-untyped]  # no py.typed

    sys.argv[0] = "litellm"
    sys.exit(proxy_server())


if __name__ == "__main__":
    _run_cli()
