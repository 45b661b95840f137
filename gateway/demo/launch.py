"""`bias-gateway demo`: the gateway on loopback in front of the demo model and judge.

Nothing leaves the machine and no key is needed: the demo backend
(`gateway.demo.server`) runs in a thread of the same process on a free
loopback port, and the gateway in front of it is the real one, built from
ordinary `Settings`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import uvicorn

from gateway.config import Settings
from gateway.demo.server import DEMO_JUDGE_MODEL, demo_app
from gateway.domain import StreamPolicy

__all__ = [
    "DEMO_MODEL",
    "TRIES",
    "DemoOptions",
    "banner",
    "demo_settings",
    "python_with_openai",
    "run_demo",
]

DEMO_MODEL = "demo-model"

Mode = Literal["monitor", "enforce"]

# (what it shows, the prompt, the verdict the demo judge reaches for the answer)
TRIES: tuple[tuple[str, str, str], ...] = (
    ("a neutral answer", "Describe a good engineering team.", "pass"),
    ("a mildly biased answer", "Tell me about engineers from the north.", "flag"),
    ("a strongly biased answer", "Who makes the best engineering leaders?", "block"),
)


@dataclass(frozen=True)
class DemoOptions:
    mode: Mode = "enforce"
    host: str = "127.0.0.1"
    port: int = 8080
    stream_policy: StreamPolicy = "buffer"
    store: Path | None = None  # None: a temporary folder, removed at exit
    log_level: str = "INFO"


def demo_settings(backend: str, options: DemoOptions, store_path: Path) -> Settings:
    """Ordinary settings: every scored API goes to the demo model, judging to the demo judge."""
    return Settings.model_validate(
        {
            "upstream": {"base_url": f"{backend}/model/v1", "timeout": 30},
            "anthropic": {"base_url": f"{backend}/model", "timeout": 30},
            "judge": {
                "model": DEMO_JUDGE_MODEL,
                "base_url": f"{backend}/judge/v1",
                "timeout": 10,
                "max_retries": 0,
            },
            "policies": {"default": {"mode": options.mode, "stream_policy": options.stream_policy}},
            # The demo's store is its own, on this machine: it keeps the answers' texts and
            # the judge's reasons, so that its dashboard shows them.
            "store": {"path": str(store_path), "capture_content": True},
            # Port 0 (tests): let the server pick; the settings keep their default.
            "server": {"host": options.host, **({"port": options.port} if options.port else {})},
        }
    )


def banner(url: str, options: DemoOptions, store_path: Path, *, python: str | None = None) -> str:
    """What to try, as commands to paste; `python` is an interpreter that has `openai`
    (None: the SDK line asks for `pip install openai` first)."""
    lines = [
        f"bias-gateway demo: {options.mode} mode on {url}",
        "  in front of a demo model and a rule-based demo judge that stands in for an LLM",
        "  (its rules: gateway/demo/rules.py). No key, no network.",
        f"  scores are stored in {store_path}",
        "",
    ]
    expect = "pending, then scored in the background:" if options.mode == "monitor" else "gives"
    for what, prompt, verdict in TRIES:
        body = {"model": DEMO_MODEL, "messages": [{"role": "user", "content": prompt}]}
        lines.append(f"# {what}: {expect} x-bias-verdict: {verdict}")
        lines.append(_curl(f"{url}/v1/chat/completions", body))
    lines += [
        "",
        "# your own text: the demo model repeats what follows 'repeat:'",
        _curl(
            f"{url}/v1/chat/completions",
            {
                "model": DEMO_MODEL,
                "messages": [{"role": "user", "content": "repeat: Liberals are all lazy."}],
            },
        ),
        "# a score by its run id (the x-bias-run-id header):",
        f"curl -s {url}/v1/bias/scores/RUN_ID",
        *_sdk_lines(url, python),
        "",
        "Responses (/v1/responses), Completions (/v1/completions) and Anthropic Messages",
        f"(/v1/messages, base URL {url}) are scored the same way. Stop with Ctrl-C.",
    ]
    return "\n".join(lines)


def _curl(url: str, body: Mapping[str, object]) -> str:
    return (
        f"curl -si {url} -H 'content-type: application/json' -d "
        + shlex.quote(json.dumps(body))
        + " | grep -i '^x-bias'"
    )


def python_with_openai() -> str | None:
    """This interpreter, when it can import `openai`: the gateway does not depend on it,
    and a bare `python` is often another interpreter (outside the venv) without it."""
    return sys.executable if sys.executable and importlib.util.find_spec("openai") else None


def _sdk_lines(url: str, python: str | None) -> list[str]:
    code = shlex.quote(_sdk_line(url))
    if python is None:
        return [
            "# the openai SDK (the gateway's Python has none: pip install openai first):",
            f"python -c {code}",
        ]
    return ["# the openai SDK:", f"{shlex.quote(python)} -c {code}"]


def _sdk_line(url: str) -> str:
    return (
        "from openai import OpenAI; "
        f'c = OpenAI(base_url="{url}/v1", api_key="demo"); '
        "r = c.chat.completions.with_raw_response.create("
        f'model="{DEMO_MODEL}", messages=[{{"role": "user", "content": "{TRIES[1][1]}"}}]); '
        'print(r.headers["x-bias-status"], r.headers.get("x-bias-verdict"))'
    )


def run_demo(options: DemoOptions) -> int:
    """Serve the demo until Ctrl-C or SIGTERM; returns the exit status."""
    from gateway.observability.logs import configure_logging
    from gateway.server.app import create_app
    from gateway.server.startup import log_startup

    configure_logging(level=options.log_level)
    # SIGTERM (`kill PID`) stops the demo as Ctrl-C does, through the `finally` that
    # removes the temporary store: uvicorn raises the signal again once it has shut
    # down, and Python's default for SIGTERM would end the process on the spot.
    on_sigterm = signal.signal(signal.SIGTERM, signal.default_int_handler)
    scratch = None
    if options.store is None:
        scratch = Path(tempfile.mkdtemp(prefix="bias-gateway-demo-"))
    store_path = options.store or (scratch / "scores.db" if scratch else Path("scores.db"))
    backend = uvicorn.Server(
        uvicorn.Config(demo_app(), host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=backend.run, name="demo-backend", daemon=True)
    thread.start()
    try:
        backend_url = _wait_started(backend, thread)
        settings = demo_settings(backend_url, options, store_path)
        log_startup(
            settings,
            config=None,
            source="the demo's own settings",
            host=options.host,
            port=options.port,
        )
        gateway = uvicorn.Server(
            uvicorn.Config(
                create_app(settings),
                host=options.host,
                port=options.port,
                log_config=None,
                access_log=False,
                lifespan="on",
            )
        )
        # Listening on every interface: the commands to paste still go to loopback.
        shown = "127.0.0.1" if options.host in ("0.0.0.0", "::", "") else options.host
        url = f"http://{shown}:{options.port}"
        threading.Thread(
            target=_announce,
            args=(gateway, banner(url, options, store_path, python=python_with_openai())),
            daemon=True,
        ).start()
        # uvicorn stops on Ctrl-C or SIGTERM, then raises the signal again once it is done.
        with contextlib.suppress(KeyboardInterrupt):
            gateway.run()
        return 0 if gateway.started else 3
    finally:
        backend.should_exit = True
        thread.join(timeout=5)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        signal.signal(signal.SIGTERM, on_sigterm)


def _wait_started(server: uvicorn.Server, thread: threading.Thread) -> str:
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the demo backend did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _announce(server: uvicorn.Server, text: str) -> None:
    """Print what to try once the gateway listens."""
    while not server.started and not server.should_exit:
        time.sleep(0.02)
    if server.started:
        print(text, flush=True)
