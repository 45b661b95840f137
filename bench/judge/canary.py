"""The judge canary: enforced p50 alone, and while 200 labelled records are judged again.

A store is seeded with labelled records (their texts kept, one review each). The
gateway starts once on it, records its judge and runs no canary: enforce traffic at
`--rate` for `--duration` gives the baseline. The judge recorded is then changed in
the store to another model's, and the gateway started again: it judges the labelled
records again (the canary, in the explanation lane) while the same traffic runs.
The judge is `bench.slow_fake`'s (1 s ± 30 % a call) behind `judge.limits.max_concurrency`
slots, so the canary and enforce compete for the judge as they would for a real one.

    .venv/bin/python -m bench canary                    # writes bench/results/canary-*
    .venv/bin/python -m bench canary --duration 10 --records 50
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench.harness.openloop import Load
from bench.harness.procs import Processes, ServerProcess, free_port
from bench.judge.lanes import paced
from bench.peers.realistic import load_figures, start_realistic_fake

__all__ = ["main"]

ADMIN = "sk-bench-admin"
_LANE = re.compile(r'^bias_judge_lane_calls\{lane="(\w+)"\} (\S+)$', re.MULTILINE)


def _log(message: str) -> None:
    print(f"bench canary: {message}", file=sys.stderr, flush=True)


def _config(judge: str, store: Path, port: int, slots: int, records: int) -> str:
    settings = {
        "upstream": {"base_url": f"{judge}/v1", "api_key": "sk-bench"},
        "judge": {
            "model": "judge",
            "base_url": f"{judge}/v1",
            "api_key": "sk-bench",
            "explanations": {"mode": "off"},
            "limits": {"max_concurrency": slots},
        },
        "keys": [{"key": ADMIN, "name": "ops", "admin": True}],
        "policies": {"default": {"mode": "enforce"}},
        "store": {"path": str(store), "capture_content": True},
        "review": {"canary_size": records},
        "server": {"host": "127.0.0.1", "port": port},
    }
    return json.dumps(settings, indent=2)  # JSON is YAML


async def _seed(store: Path, records: int) -> None:
    """`records` scored records with their texts, each labelled once, half biased."""
    from gateway.config import StoreSettings
    from gateway.store import ScoreRecord, open_store
    from gateway.store.reviews import Review, Reviews

    opened = open_store(StoreSettings(path=str(store)))
    await opened.open()
    now = time.time()
    try:
        for number in range(records):
            biased = number % 2 == 0
            verdict, score = ("flag", 1.0) if number % 3 else ("pass", 0.0)
            run_id = f"labelled-{number}"
            text = f"Answer {number}: engineers from the north are " + (
                "lazy." if biased else "many."
            )
            opened.submit(
                ScoreRecord(
                    run_id,
                    "scored",
                    now - records + number,
                    key_name="ops",
                    score=score,
                    verdict=verdict,
                    completion=text,
                    review_rank=2,
                )
            )
            label = "biased" if biased else "unbiased"
            await Reviews(opened).add(Review(run_id, "ops", "ops", label, None, None, now))
        await opened.flush()
    finally:
        await opened.close()


async def _forget_judge(store: Path) -> None:
    """The judge recorded made another's, so that the next start sees a change."""
    from gateway.config import StoreSettings
    from gateway.store import open_store
    from gateway.store.state import JUDGE, State

    opened = open_store(StoreSettings(path=str(store)))
    await opened.open()
    try:
        state = State(opened)
        judge = await state.get(JUDGE)
        assert judge is not None, "the first start records its judge"
        await state.put(JUDGE, {**judge, "model": "judge-before"})
    finally:
        await opened.close()


async def _load(url: str, rate: float, duration: float) -> Load:
    """`bench.judge_lanes`' paced open loop, with the admin key."""
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        return await paced(session, url, ADMIN, rate, duration)


def _get(url: str) -> Any:
    import urllib.request

    request = urllib.request.Request(url, headers={"authorization": f"Bearer {ADMIN}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = answer.read().decode()
    return json.loads(text) if url.endswith("canary") else text


def _canary(gateway: ServerProcess, timeout: float) -> dict[str, Any]:
    """The canary's report once it is no longer running (bounded by `timeout`)."""
    deadline = time.monotonic() + timeout
    report: dict[str, Any] = _get(f"{gateway.url}/v1/bias/reviews/canary")
    while report.get("status") in ("running", "none") and time.monotonic() < deadline:
        time.sleep(0.5)  # a bench polls a running process; nothing to wait on instead
        report = _get(f"{gateway.url}/v1/bias/reviews/canary")
    return report


def _lanes(gateway: ServerProcess) -> dict[str, float]:
    return {lane: float(n) for lane, n in _LANE.findall(_get(f"{gateway.url}/metrics"))}


def _cell(
    procs: Processes, work: Path, name: str, args: argparse.Namespace, judge: str, store: Path
) -> tuple[dict[str, Any], ServerProcess]:
    port = free_port()
    config = work / f"{name}.yaml"
    config.write_text(_config(judge, store, port, args.max_concurrency, args.records))
    argv = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)]
    gateway = procs.start(
        name, [*argv, "--log-level", "warning"], port=port, ready_path="/healthz", log_dir=work
    )
    _log(f"{name}: enforce at {args.rate} req/s for {args.duration} s")
    load = asyncio.run(_load(gateway.url, args.rate, args.duration))
    figures = load_figures(load, None, None)
    figures["lane_calls_during_load"] = _lanes(gateway)
    return figures, gateway


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    store = work / "canary.db"
    asyncio.run(_seed(store, args.records))
    with Processes() as procs:
        fake = start_realistic_fake(procs, work, "fake", judge_rps=None)
        alone, gateway = _cell(procs, work, "alone", args, fake.url, store)
        quiet = _canary(gateway, 5)
        procs.stop(gateway)
        asyncio.run(_forget_judge(store))
        beside, gateway = _cell(procs, work, "beside", args, fake.url, store)
        report = _canary(gateway, args.canary_timeout)
        procs.stop(gateway)
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "plan": vars(args),
        "alone": alone,
        "alone_canary_status": quiet.get("status"),
        "beside": beside,
        "canary": {
            key: report.get(key)
            for key in ("status", "labelled", "rejudged", "errors", "drop", "exceeded")
        }
        | {
            "seconds": (
                round(report["finished_at"] - report["started_at"], 1)
                if report.get("finished_at")
                else None
            )
        },
    }


def markdown(results: dict[str, Any]) -> str:
    alone, beside, canary = results["alone"], results["beside"], results["canary"]
    plan = results["plan"]
    return "\n".join(
        [
            f"# The judge canary beside enforce traffic ({results['date']})",
            "",
            f"Enforce at {plan['rate']} req/s for {plan['duration']} s, a judge of 1 s ± 30 %"
            f" a call behind {plan['max_concurrency']} slots; {plan['records']} labelled records.",
            "",
            "| | requests | p50 ms | p99 ms | statuses |",
            "|---|---|---|---|---|",
            f"| enforce alone | {alone['sent']} | {alone['p50_ms']} | {alone['p99_ms']}"
            f" | {alone['statuses']} |",
            f"| enforce beside the canary | {beside['sent']} | {beside['p50_ms']}"
            f" | {beside['p99_ms']} | {beside['statuses']} |",
            "",
            f"Canary: {canary['status']}, {canary['rejudged']} of {canary['labelled']} records"
            f" judged again ({canary['errors']} errors) in {canary['seconds']} s."
            f" Judge calls by lane by the end of the load: {beside['lane_calls_during_load']}.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench canary")
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--records", type=int, default=200)
    parser.add_argument("--max-concurrency", type=int, default=32)
    parser.add_argument("--canary-timeout", type=float, default=300.0)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-canary-") as tmp:
        results = run(args, Path(tmp))
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"canary-{results['date'][:10]}"
    (args.out / f"{stem}.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    (args.out / f"{stem}.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
