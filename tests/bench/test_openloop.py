"""The bench's open-loop schedule (`bench.harness.openloop.ticks`): when it ends.

Which ticks come is decided by their due times (index / rate), not by how fast the
machine is, so these hold on any machine."""

from __future__ import annotations

import asyncio

from bench.harness.openloop import ticks


async def _collect(**kwargs: object) -> list[int]:
    return [index async for index in ticks(**kwargs)]  # type: ignore[arg-type]


def test_a_count_of_ticks() -> None:
    assert asyncio.run(_collect(rate=1000.0, count=3)) == [0, 1, 2]


def test_ticks_due_before_the_duration_ends() -> None:
    # Due at 0, 1, 2, 3 and 4 ms; the sixth would be due at the duration itself.
    assert asyncio.run(_collect(rate=1000.0, duration=0.005)) == [0, 1, 2, 3, 4]


def test_a_stop_ends_the_ticks_at_once() -> None:
    async def run() -> tuple[list[int], list[int]]:
        stopped = asyncio.Event()
        stopped.set()
        before = [index async for index in ticks(1000.0, stop=stopped)]
        stop = asyncio.Event()
        seen = []
        async for index in ticks(1000.0, stop=stop):
            seen.append(index)
            if index == 2:
                stop.set()
        return before, seen

    assert asyncio.run(run()) == ([], [0, 1, 2])
