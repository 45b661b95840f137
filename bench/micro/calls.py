"""Python function calls per request, per mode: a count that machine noise does not move.

`python -m bench calls [--requests N]` serves the gateway in this process (httpx's
ASGI transport, no socket between client and gateway) in front of two fake
processes (upstream and judge, `bench.fakes.server`), sends N chat requests per
cell under cProfile, waits until every background scoring is done, and prints
the calls per request: in total, and in `gateway/` and `guard/` alone.

Closed-loop req/s swings by ±20% between runs on a shared 2-core machine;
these counts move by about 2% (the event loop's scheduling), so they show
whether a change added work to the request path. To compare two trees, run
this in each with `PYTHONPATH=<tree>` set.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import logging
import os
import pstats
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
import structlog

from bench.fakes.server import start_fake
from bench.harness.procs import Processes
from gateway.config import Settings, StoreSettings
from gateway.server.app import create_app

__all__ = ["main"]

_BODY = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}
_WARMUP = 50


async def _cell(fake: str, judge: str, mode: str, stream: bool, requests: int) -> tuple[int, int]:
    """(all calls, calls in gateway/ and guard/) per request, for one mode and workload."""
    with tempfile.TemporaryDirectory() as folder:
        store: dict[str, object] = {"path": str(Path(folder) / "scores.db")}
        if "retention_days" in StoreSettings.model_fields:  # absent from older trees
            store["retention_days"] = 0
        settings = Settings.model_validate(
            {
                "upstream": {"base_url": f"{fake}/v1", "api_key": "k"},
                "judge": {"model": "judge", "base_url": f"{judge}/v1", "max_retries": 0},
                "policies": {"default": {"mode": mode}},
                "store": store,
                "queue": {"size": requests + _WARMUP},
            }
        )
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            scoring = app.state.gateway.scoring
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
                body = {**_BODY, "stream": stream}

                async def settle() -> None:
                    # Scoring exposes counts, not an event to wait on: poll them.
                    while scoring.queue_depth or scoring.in_flight:  # noqa: ASYNC110
                        await asyncio.sleep(0.005)

                for _ in range(_WARMUP):
                    await client.post("/v1/chat/completions", json=body)
                await settle()
                profile = cProfile.Profile()
                profile.enable()
                for _ in range(requests):
                    answer = await client.post("/v1/chat/completions", json=body)
                    if answer.status_code != 200:
                        raise RuntimeError(f"{mode}: {answer.status_code} {answer.text}")
                await settle()
                profile.disable()
    stats = pstats.Stats(profile)
    total = stats.total_calls  # type: ignore[attr-defined]  # set by Stats, untyped
    own = sum(
        entry[1]
        for where, entry in stats.stats.items()  # type: ignore[attr-defined]
        if "/gateway/" in where[0] or "/guard/" in where[0]
    )
    return round(total / requests), round(own / requests)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench calls", description=__doc__)
    parser.add_argument("--requests", type=int, default=300, help="requests per cell (300)")
    args = parser.parse_args(argv)
    # The access lines would flood the output (and cost calls of their own, both sides).
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    results: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory() as work, Processes() as procs:
        fake = start_fake(procs, Path(work), chunks=50)
        judge = start_fake(procs, Path(work), chunks=50, name="judge")
        for mode in ("off", "monitor", "enforce"):
            for stream in (False, True):
                total, own = asyncio.run(_cell(fake.url, judge.url, mode, stream, args.requests))
                name = f"{mode} {'stream' if stream else 'non-stream'}"
                results[name] = {"calls": total, "own_calls": own}
    json.dump(results, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
