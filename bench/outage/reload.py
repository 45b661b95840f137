"""A config reload under load: failed requests, cut streams, when every worker has it.

`python -m bench reload [--workers 2] [--rate 100]`.

It starts a paced upstream and judge (`bench.fakes.paced`, separate processes) and
`bias-gateway serve` in monitor mode, drives `--rate` requests a second with a
kept key (every `--stream-every`-th a stream of 50 chunks that stays open about
2 s), and at `--reload-at` seconds rewrites the config (one key removed, one
added) and sends SIGHUP. Probes on new connections (so that every worker is
reached) ask `GET /v1/models` with the new and the removed key every 10 ms.

It reports failed requests (not 200, or an error), cut streams (fewer than 50
content chunks, or no `[DONE]`), streams open across the signal, and when the
last probe that still met the old config was sent after the signal: the new
config had reached every worker by the next probe.
The report goes to stdout and `bench/results/reload-<date>.md`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.fakes.paced import Pace, start_paced
from bench.harness.client import run
from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.openloop import ticks
from bench.harness.paths import RESULTS
from bench.harness.procs import Processes, free_port

KEPT, REMOVED, ADDED = "sk-bench-kept-0001", "sk-bench-removed-0002", "sk-bench-added-0003"
CHUNKS = 50


@dataclass
class Load:
    sent: int = 0
    failed: int = 0
    streams: int = 0
    cut: int = 0
    across_signal: int = 0  # streams open when the signal was sent, and later complete
    errors: dict[str, int] = field(default_factory=dict)
    failed_at: list[float] = field(default_factory=list)  # sent, in s after the signal
    signalled_at: float | None = None  # wall clock, to read the gateway's log against
    sample: str = ""  # the first failed answer's body

    def fail(self, error: str, started: float, signalled: list[float]) -> None:
        self.failed += 1
        self.errors[error] = self.errors.get(error, 0) + 1
        if signalled:
            self.failed_at.append(round(started - signalled[0], 2))


@dataclass
class Probes:
    sent: int = 0
    # Each probe sent after the signal: when (s after it), and whether it met the old config.
    seen: list[tuple[float, bool]] = field(default_factory=list)
    interval: float = 0.0  # the longest probe after the signal, in seconds
    errors: int = 0

    def converged(self) -> tuple[float, float | None]:
        """The send times of the last probe that met the old config (0: none did) and
        of the next one, which met the new: every worker had it between the two."""
        stale = [index for index, (_, old) in enumerate(self.seen) if old]
        if not stale:
            return 0.0, self.seen[0][0] if self.seen else None
        after = stale[-1] + 1
        return self.seen[stale[-1]][0], self.seen[after][0] if after < len(self.seen) else None


def settings_for(store: Path, upstream: str, judge: str, keys: list[str]) -> dict[str, Any]:
    names = {KEPT: "kept", REMOVED: "removed", ADDED: "added"}
    config = gateway_config(upstream, judge, store=store)
    config["judge"]["max_retries"] = 0
    config["keys"] = [{"key": key, "name": names[key]} for key in keys]
    return config


def write_config(path: Path, upstream: str, judge: str, keys: list[str]) -> None:
    """The gateway's config file rewritten, for the reload to read (JSON is YAML)."""
    path.write_text(json.dumps(settings_for(path.parent / "scores.db", upstream, judge, keys)))


async def one_request(session: aiohttp.ClientSession, url: str, stream: bool, load: Load,
                      signalled: list[float]) -> None:  # fmt: skip
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    headers = {"authorization": f"Bearer {KEPT}"}
    started = time.monotonic()
    try:
        async with session.post(f"{url}/v1/chat/completions", json=body, headers=headers) as answer:
            data = await answer.read()
            if answer.status != 200:
                load.fail(str(answer.status), started, signalled)
                load.sample = load.sample or data.decode(errors="replace")[:300]
                return
    except (aiohttp.ClientError, TimeoutError) as exc:
        load.fail(type(exc).__name__, started, signalled)
        return
    if stream:
        load.streams += 1
        chunks = data.count(b'"content"') - 1  # the first frame holds the role only
        if not data.rstrip().endswith(b"data: [DONE]") or chunks < CHUNKS:
            load.cut += 1
        elif signalled and started < signalled[0] < time.monotonic():
            load.across_signal += 1


async def drive(url: str, rate: float, duration: float, stream_every: int, load: Load,
                signalled: list[float]) -> None:  # fmt: skip
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        tasks: list[asyncio.Task[None]] = []
        async for _ in ticks(rate, duration=duration):
            stream = load.sent % stream_every == 0
            load.sent += 1
            tasks.append(asyncio.create_task(one_request(session, url, stream, load, signalled)))
        await asyncio.gather(*tasks)


async def probe(url: str, until: float, probes: Probes, signalled: list[float]) -> None:
    """Ask with the new and the removed key, each time on a new connection (any worker).

    The body is empty, so a key that is let in gets 400 from the scored endpoint
    (after its key check, before any upstream call) and a refused one 401: the
    answer says which config the worker had, whatever the upstream's pace.
    """
    timeout = aiohttp.ClientTimeout(total=10)
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        while time.monotonic() < until:
            for key in (ADDED, REMOVED):
                sent = time.monotonic()
                headers = {"authorization": f"Bearer {key}"}
                try:
                    async with session.post(f"{url}/v1/chat/completions", data=b"{}",
                                            headers=headers) as answer:  # fmt: skip
                        await answer.read()
                except (aiohttp.ClientError, TimeoutError):
                    probes.errors += 1
                    continue
                probes.sent += 1
                if not signalled or sent < signalled[0]:
                    continue
                stale = (answer.status == 401) == (key == ADDED)
                probes.seen.append((round(sent - signalled[0], 3), stale))
                probes.interval = max(probes.interval, round(time.monotonic() - sent, 3))
            await asyncio.sleep(0.01)


async def scenario(args: argparse.Namespace, gateway: Any, config: Path, upstream: str,
                   judge: str) -> tuple[Load, Probes]:  # fmt: skip
    load, probes = Load(), Probes()
    signalled: list[float] = []

    async def reload_later() -> None:
        await asyncio.sleep(args.reload_at)
        if args.no_reload:  # the control: the same load, no signal
            return
        write_config(config, upstream, judge, [KEPT, ADDED])
        signalled.append(time.monotonic())
        load.signalled_at = time.time()
        os.kill(gateway.popen.pid, signal.SIGHUP)

    until = time.monotonic() + args.duration
    await asyncio.gather(
        drive(gateway.url, args.rate, args.duration, args.stream_every, load, signalled),
        probe(gateway.url, until, probes, signalled),
        reload_later(),
    )
    return load, probes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench reload")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--reload-at", type=float, default=4.0)
    parser.add_argument("--stream-every", type=int, default=3)
    parser.add_argument("--no-reload", action="store_true", help="the control: no SIGHUP")
    parser.add_argument(
        "--fake-keep-alive",
        type=float,
        default=75.0,
        help="the fakes' idle keep-alive (s); uvicorn's default 5 lets pooled connections go stale",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder, Processes() as procs:
        tmp = Path(folder)
        port = free_port()
        # Longer than the gateway's pooled connections live, unless --fake-keep-alive says.
        alive = args.fake_keep_alive
        upstream = start_paced(
            procs, "upstream", Pace(chunks=CHUNKS, ttft=0.2, chunk_interval=0.04),
            log_dir=tmp, keep_alive=alive,
        )  # fmt: skip
        judge = start_paced(
            procs, "judge", Pace(chunks=CHUNKS, judge_latency=0.05, jitter=0.0),
            log_dir=tmp, keep_alive=alive,
        )  # fmt: skip
        settings = settings_for(tmp / "scores.db", upstream.url, judge.url, [KEPT, REMOVED])
        gateway = start_gateway(
            procs, "gateway", settings, log_dir=tmp, port=port, log_level=None,
            args=["--workers", str(args.workers)], env={"LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        )  # fmt: skip
        config = tmp / "gateway.json"  # start_gateway's file, which the reload rewrites
        load, probes = run(lambda: scenario(args, gateway, config, upstream.url, judge.url))
        alive = gateway.alive()
        logged = gateway.log_path.read_text(errors="replace").splitlines()
    reloaded = reload_delays(logged, load.signalled_at)
    report = markdown(args, load, probes, alive, reloaded)
    print(report)
    if load.sample:
        print(f"the first failed answer: {load.sample}")
    died = [line for line in logged if '"Child process' in line and "died" in line]
    if died:
        print(f"workers replaced by the supervisor: {len(died)}")
    if not args.no_reload and len(reloaded) != args.workers:
        print("not every worker logged its reload; the gateway's lines about it:")
        print("\n".join(line for line in logged if "reload" in line or "SIGHUP" in line
                        or "Child process" in line))  # fmt: skip
    errors = [line for line in logged if '"level":"error"' in line]
    if errors or not alive:
        print(f"gateway log: {len(errors)} error lines; the first and the tail:")
        print("\n".join(errors[:3] + logged[-5:]))
    date = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    out = args.out or RESULTS / f"reload-{date}.md"
    out.write_text(report)
    print(f"written: {out}")


def reload_delays(logged: list[str], signalled_at: float | None) -> list[float]:
    """Seconds from the signal to each worker's `config reloaded` line, by its timestamp."""
    delays: list[float] = []
    for line in logged:
        if signalled_at is None or '"bias-gateway config reloaded"' not in line:
            continue
        stamp = json.loads(line)["timestamp"].replace("Z", "+00:00")
        delays.append(round(datetime.datetime.fromisoformat(stamp).timestamp() - signalled_at, 3))
    return sorted(delays)


def markdown(args: argparse.Namespace, load: Load, probes: Probes, alive: bool,
             reloaded: list[float]) -> str:  # fmt: skip
    last, first = probes.converged()
    rows = [
        ("requests sent (kept key)", load.sent),
        ("failed requests", f"{load.failed} {load.errors or ''}".strip()),
        ("failed requests sent at (s after the signal)", load.failed_at or "none"),
        ("streams / cut streams", f"{load.streams} / {load.cut}"),
        ("streams open across the signal, ended whole", load.across_signal),
        ("probes (new and removed key) / probe errors", f"{probes.sent} / {probes.errors}"),
        ("each worker's reload logged at (s after the signal)", reloaded or "none"),
        ("probes after the signal / met the old config",
         f"{len(probes.seen)} / {sum(old for _, old in probes.seen)}"),
        ("new config on every worker, between (s after the signal)",
         f"{last:g} and {_none(first)}"),
        ("longest probe after the signal (s)", probes.interval),
        ("gateway alive after the run", alive),
    ]  # fmt: skip
    head = (
        f"# Config reload under load ({datetime.date.today()})\n\n"
        f"`python -m bench reload --workers {args.workers} --rate {args.rate:g} --duration "
        f"{args.duration:g} --reload-at {args.reload_at:g} --stream-every {args.stream_every}"
        f" --fake-keep-alive {args.fake_keep_alive:g}{' --no-reload' if args.no_reload else ''}`:"
        f" monitor mode, a paced upstream (first byte 0.2 s, {CHUNKS} chunks 40 ms apart) and"
        " judge (50 ms a call), one of every"
        f" {args.stream_every} requests a stream; "
        + (
            "no SIGHUP (the control).\n\n"
            if args.no_reload
            else f"SIGHUP at {args.reload_at:g} s.\n\n"
        )
    )
    table = "| | |\n|---|---|\n" + "".join(f"| {name} | {value} |\n" for name, value in rows)
    return head + table


def _none(value: float | None) -> str:
    return "none" if value is None else f"{value:g}"


if __name__ == "__main__":
    main()
