"""Values kept by name in `gateway_state` (`gateway.store.state`), on both engines: a
swap changes a value only if it still holds what was read, so of processes that see
the same change at once exactly one records it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gateway.config import StoreSettings
from gateway.store import open_store
from gateway.store.state import JUDGE, State
from tests.support.resources import ENGINES


@pytest.fixture(params=ENGINES)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSettings:
    if request.param == "postgresql":
        return StoreSettings(url=request.getfixturevalue("pg_url"))
    return StoreSettings(path=str(tmp_path / "state.db"))


async def test_of_processes_seeing_one_change_exactly_one_records_it(
    location: StoreSettings,
) -> None:
    stores = [open_store(location) for _ in range(3)]
    for store in stores:
        await store.open()
    try:
        states = [State(store) for store in stores]
        assert await states[0].get(JUDGE) is None
        first = await asyncio.gather(*(state.swap(JUDGE, None, {"model": "a"}) for state in states))
        assert sorted(first) == [False, False, True]
        changed = await asyncio.gather(
            *(state.swap(JUDGE, {"model": "a"}, {"model": "b"}) for state in states)
        )
        assert sorted(changed) == [False, False, True]
        assert await states[2].get(JUDGE) == {"model": "b"}
        # A swap from a value no longer held changes nothing; `put` changes it anyway.
        assert not await states[1].swap(JUDGE, {"model": "a"}, {"model": "c"})
        await states[1].put(JUDGE, {"model": "c"})
        assert await states[0].get(JUDGE) == {"model": "c"}
    finally:
        for store in stores:
            await store.close()
