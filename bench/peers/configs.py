"""The configurations under test and how to start each one on loopback with one worker."""

from __future__ import annotations

import secrets
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.procs import Processes, ServerProcess, StartError, free_port

__all__ = ["CONFIGS", "Context", "Deployed", "Unavailable", "deploy_gateway"]


# Monitor mode's queue: with `full_wait`, requests wait for room rather than go
# unscored, so this bounds the backlog at load stop (~0.5 s at ~550 scores/s here).
QUEUE_SIZE = 256


class Unavailable(RuntimeError):
    """A peer that cannot run here; the reason goes in its row."""


@dataclass(frozen=True)
class Context:
    procs: Processes
    work_dir: Path
    fake: ServerProcess
    gateway_log_level: str = "info"  # `bias-gateway serve`'s default
    # The gateways' judge: a second fake process, as a judge is another service than
    # the upstream; sharing one would queue upstream requests behind judge calls.
    judge: ServerProcess | None = None


@dataclass(frozen=True)
class Deployed:
    """A running configuration: where to send requests and which process to watch."""

    name: str
    server: ServerProcess
    api_key: str = "bench"
    store: Path | None = None
    mode: str | None = None  # the gateway's bias mode


def _direct(ctx: Context) -> Deployed:
    return Deployed("direct", ctx.fake)


def _floor(ctx: Context) -> Deployed:
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "bench.peers.aiohttp_passthrough:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    server = ctx.procs.start(
        "aiohttp-floor",
        argv,
        port=port,
        ready_path="/v1/chat/completions",
        log_dir=ctx.work_dir,
        env={"BENCH_UPSTREAM": ctx.fake.url},
    )
    return Deployed("aiohttp floor", server)


def deploy_gateway(ctx: Context, mode: str, *, label: str | None = None) -> Deployed:
    """`bias-gateway serve` in `mode` with a fresh store."""
    name = label or f"gateway-{mode}"
    store = ctx.work_dir / f"{name}.db"
    config = gateway_config(ctx.fake.url, (ctx.judge or ctx.fake).url, store=store, mode=mode)
    config["upstream"]["timeout"] = 60
    config["judge"]["timeout"] = 30
    config["policies"]["default"].update(sample_rate=1.0, stream_policy="buffer")
    config["queue"] = {"size": QUEUE_SIZE, "full_wait": 60, "drain_deadline": 5}
    server = start_gateway(
        ctx.procs, name, config, log_dir=ctx.work_dir, log_level=ctx.gateway_log_level
    )
    return Deployed(f"gateway {mode}", server, store=store, mode=mode)


_LITELLM_YAML = """\
model_list:
  - model_name: bench-model
    litellm_params:
      model: openai/bench-model
      api_base: {fake}/v1
      api_key: sk-bench
"""


def _litellm(ctx: Context) -> Deployed:
    executable = shutil.which("litellm", path=str(Path(sys.executable).parent))
    if executable is None:
        raise Unavailable("`litellm` not installed (pip install -e '.[bench]')")
    port = free_port()
    config = ctx.work_dir / "litellm.yaml"
    config.write_text(_LITELLM_YAML.format(fake=ctx.fake.url))
    key = f"sk-{secrets.token_hex(32)}"  # the proxy refuses to start without a master key
    argv = [executable, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--num_workers", "1"]
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MASTER_KEY": key}
    try:
        server = ctx.procs.start(
            "litellm",
            argv,
            port=port,
            ready_path="/health/liveliness",
            log_dir=ctx.work_dir,
            env=env,
            ready_timeout=90,
        )
    except StartError as exc:
        last = [line for line in str(exc).splitlines() if line.strip()]
        raise Unavailable(f"the proxy did not start: {last[-1] if last else exc}") from exc
    return Deployed("litellm proxy", server, api_key=key)


@dataclass(frozen=True)
class Config:
    name: str
    start: Callable[[Context], Deployed]


CONFIGS: tuple[Config, ...] = (
    Config("direct", _direct),
    Config("aiohttp floor", _floor),
    Config("litellm proxy", _litellm),
    Config("gateway off", lambda ctx: deploy_gateway(ctx, "off")),
    Config("gateway monitor", lambda ctx: deploy_gateway(ctx, "monitor")),
    Config("gateway enforce", lambda ctx: deploy_gateway(ctx, "enforce")),
)
