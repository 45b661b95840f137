"""Judge calls per second over httpx's own transport versus httpx-aiohttp, at c=1 and c=32.

    .venv/bin/python -m bench.judge_transport

Starts the fake server on loopback, sends the bias judge's three calls from
`guard.OpenAIJudge` through each transport, and prints calls/s. This is the
measurement behind the gateway's choice of transport for judge calls.
"""

from __future__ import annotations

import asyncio
import time

from httpx_aiohttp import AiohttpTransport

from guard import OpenAIJudge
from guard.bias.prompts import EXTRACT_SCHEMA, SYSTEM_PROMPT, extract_prompt
from tests.support.fake_openai import FakeOpenAI
from tests.support.servers import ServerThread

SECONDS = 3.0


async def drive(judge: OpenAIJudge, concurrency: int) -> float:
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
    return done / elapsed


def main() -> None:
    fake = FakeOpenAI()
    server = ServerThread(fake.app).start()
    try:
        for concurrency in (1, 32):
            for name in ("httpx", "httpx-aiohttp"):
                transport = AiohttpTransport() if name == "httpx-aiohttp" else None
                judge = OpenAIJudge(base_url=f"{server.url}/v1", model="judge", transport=transport)
                rate = asyncio.run(drive(judge, concurrency))
                print(f"{name:14} c={concurrency:<3} {rate:8.0f} judge calls/s")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
