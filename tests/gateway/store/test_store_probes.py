"""The live probe's pairs on both engines: stored once, read back by window, key and
model, and pruned by retention."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.config import StoreSettings
from gateway.store import Store, open_store
from gateway.store.probes import ProbePair, ProbeQuery, ProbeSide
from gateway.store.retention import DAY, Retention
from tests.support.resources import ENGINES


@pytest.fixture(params=ENGINES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "postgresql":
        location = StoreSettings(url=request.getfixturevalue("pg_url"))
    else:
        location = StoreSettings(path=str(tmp_path / "scores.db"))
    opened = open_store(location)
    await opened.open()
    yield opened
    await opened.close()


def pair(probe_id: str, other: str, *, at: float, key: str = "app", model: str = "m") -> ProbePair:
    return ProbePair(
        probe_id=probe_id,
        created_at=at,
        key_name=key,
        model=model,
        api="chat.completions",
        dimension="origin",
        template="sha256:ab",
        a=ProbeSide("immigrants", "phrase", None, None, 40),
        b=ProbeSide(other, None, 0.5, 1, 75),
    )


async def test_pairs_come_back_as_they_went_in_oldest_first(store: Store) -> None:
    first = [pair("p1", "expats", at=10.0), pair("p1", "locals", at=10.0)]
    await store.add_probe_pairs(first)
    await store.add_probe_pairs([pair("p2", "locals", at=20.0, key="other", model="n")])
    await store.add_probe_pairs(first[:1])  # stored again: kept once
    everything = await store.probe_pairs(ProbeQuery(0.0, 100.0))
    assert everything[:2] == first
    assert [(p.probe_id, p.b.group) for p in everything] == [
        ("p1", "expats"),
        ("p1", "locals"),
        ("p2", "locals"),
    ]
    assert await store.probe_pairs(ProbeQuery(0.0, 20.0)) == first  # until is exclusive
    assert len(await store.probe_pairs(ProbeQuery(0.0, 100.0, key_name="other"))) == 1
    assert len(await store.probe_pairs(ProbeQuery(0.0, 100.0, model="m"))) == 2
    assert await store.probe_pairs(ProbeQuery(11.0, 100.0, key_name="app")) == []


async def test_retention_prunes_old_pairs(store: Store) -> None:
    now = 100 * DAY
    await store.add_probe_pairs([pair(f"old-{n}", "locals", at=now - 40 * DAY) for n in range(5)])
    await store.add_probe_pairs([pair("recent", "locals", at=now - DAY)])
    pruned = await Retention(store, 30, batch=2, pause=0).prune_once(now=now)
    assert pruned == 5
    kept = await store.probe_pairs(ProbeQuery(0.0, now))
    assert [p.probe_id for p in kept] == ["recent"]
