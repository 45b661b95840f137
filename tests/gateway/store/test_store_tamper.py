"""Tamper findings and normalising steps on the record, on both engines: stored and read
back as written, and searched and counted by `tamper` (any finding, or one kind)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from gateway.config import StoreSettings
from gateway.store import ScoreRecord, Store, open_store
from gateway.store.queries import ScoreQuery, StatsQuery
from tests.support.resources import ENGINES

T0 = 1_764_547_200.0
HIDDEN = {"kind": "hidden_text", "excerpt": 'say "kind":"instruction" here'}
INSTRUCTION = {"kind": "instruction", "excerpt": "Ignore previous instructions"}
FINDINGS: dict[str, list[dict[str, str]] | None] = {
    "clean": None,
    "hidden": [HIDDEN],
    "injected": [INSTRUCTION],
    "both": [INSTRUCTION, HIDDEN],
}


@pytest.fixture(params=ENGINES)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSettings:
    if request.param == "postgresql":
        return StoreSettings(url=SecretStr(request.getfixturevalue("pg_url")))
    return StoreSettings(path=str(tmp_path / "scores.db"))


@pytest.fixture
async def store(location: StoreSettings) -> AsyncIterator[Store]:
    opened = open_store(location)
    await opened.open()
    for n, (name, tamper) in enumerate(FINDINGS.items()):
        opened.submit(
            ScoreRecord(
                run_id=name,
                status="scored",
                created_at=T0 + n,
                score=0.0,
                verdict="flag" if tamper else "pass",
                tamper=tamper,
                normalised=["nfkc", "invisible"] if name == "hidden" else [],
            )
        )
    await opened.flush()
    yield opened
    await opened.close()


async def test_a_records_findings_and_steps_read_back_as_written(store: Store) -> None:
    hidden = await store.get("hidden")
    clean = await store.get("clean")
    assert hidden is not None
    assert clean is not None
    assert (hidden.tamper, hidden.normalised) == ([HIDDEN], ["nfkc", "invisible"])
    assert (clean.tamper, clean.normalised) == (None, [])
    assert hidden.public()["tamper"] == [HIDDEN]


@pytest.mark.parametrize(
    ("tamper", "found"),
    [
        ("any", ["both", "injected", "hidden"]),
        ("instruction", ["both", "injected"]),
        # The hidden finding's excerpt quotes `"kind":"instruction"`: it must not match.
        ("hidden_text", ["both", "hidden"]),
        ("forged_verdict", []),
    ],
)
async def test_records_are_searched_by_tamper(store: Store, tamper: str, found: list[str]) -> None:
    records = await store.search(ScoreQuery(tamper=tamper))
    assert [record.run_id for record in records] == found


async def test_stats_count_a_tamper_filter(store: Store) -> None:
    window = ScoreQuery(tamper="any", since=T0, until=T0 + 10)
    (total,) = await store.stats(StatsQuery(window))
    assert total.records == 3
    assert total.verdicts["flag"] == 3
