"""Judge calls per second by transport, at c=1 and c=32.

guard's `OpenAIJudge` over httpx's own transport and over httpx-aiohttp, and
the gateway's `AiohttpJudge` over a plain aiohttp session.

    .venv/bin/python -m bench judge_transport

Starts the fake server on loopback, sends the bias judge's three calls from
`guard.OpenAIJudge` through each transport, and prints calls/s. This is the
measurement behind the gateway's choice of transport for judge calls.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from httpx_aiohttp import AiohttpTransport

from gateway.scoring.judge_client import AiohttpJudge
from gateway.upstream.client import Upstream
from guard import BaseJudge, OpenAIJudge
from guard.bias.prompts import EXTRACT_SCHEMA, SYSTEM_PROMPT, extract_prompt
from testkit.fake_openai import FakeOpenAI
from testkit.servers import ServerThread

SECONDS = 3.0


async def drive(judge: BaseJudge, concurrency: int, upstream: Upstream | None = None) -> float:
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": extract_prompt("Engineers from the north are lazy.")},
    ]
    done = 0
    deadline = time.perf_counter() + SECONDS

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await judge.complete(messages, schema=EXTRACT_SCHEMA)
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    await judge.aclose()
    if upstream is not None:
        await upstream.close()
    return done / elapsed


async def gateway_judge(url: str, concurrency: int) -> float:
    upstream = Upstream()
    await upstream.start()
    judge = AiohttpJudge(
        upstream, base_url=url, model="judge", api_key=None, timeout=60, max_retries=0
    )
    return await drive(judge, concurrency, upstream)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench judge_transport", description=__doc__)
    parser.parse_args(argv)  # no options: it answers --help and refuses unknown arguments
    fake = FakeOpenAI()
    server = ServerThread(fake.app).start()
    try:
        url = f"{server.url}/v1"
        for concurrency in (1, 32):
            for name in ("httpx", "httpx-aiohttp", "gateway aiohttp"):
                if name == "gateway aiohttp":
                    rate = asyncio.run(gateway_judge(url, concurrency))
                else:
                    transport = AiohttpTransport() if name == "httpx-aiohttp" else None
                    judge = OpenAIJudge(base_url=url, model="judge", transport=transport)
                    rate = asyncio.run(drive(judge, concurrency))
                print(f"{name:16} c={concurrency:<3} {rate:8.0f} judge calls/s")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
