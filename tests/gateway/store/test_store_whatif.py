"""What a pair of thresholds would have done, on both engines: counts computed by hand
from a dozen records of known scores, keys, models, categories and statuses."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from gateway.config import StoreSettings
from gateway.domain import VERDICTS
from gateway.scoring.policy import Rules, verdict_for
from gateway.store import ScoreRecord, Store, open_store
from gateway.store.queries import ScoreQuery
from gateway.store.whatif import WhatIf, WhatIfCounts, WhatIfQuery
from tests.support.resources import ENGINES
from tests.support.store_records import RECORDS, T0


def window(**filters: Any) -> ScoreQuery:
    return ScoreQuery(since=T0, until=T0 + 100, **filters)


@pytest.fixture(params=ENGINES)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSettings:
    if request.param == "postgresql":
        return StoreSettings(url=SecretStr(request.getfixturevalue("pg_url")))
    return StoreSettings(path=str(tmp_path / "scores.db"))


@pytest.fixture
async def store(location: StoreSettings) -> AsyncIterator[Store]:
    opened = open_store(location)
    await opened.open()
    for record in RECORDS:
        opened.submit(record)
    yield opened
    await opened.close()


def counts(records: int, statuses: dict[str, int], actual: tuple[int, int, int],
           would: tuple[int, int, int], key: str | None = None) -> WhatIfCounts:  # fmt: skip
    every = dict.fromkeys(("dropped", "error", "pending", "scored", "skipped"), 0)
    return WhatIfCounts(
        key=key,
        records=records,
        statuses={**every, **statuses},
        actual=dict(zip(("pass", "flag", "block"), actual, strict=True)),
        would=dict(zip(("pass", "flag", "block"), would, strict=True)),
    )


def run_ids(result: WhatIf) -> dict[str, list[str]]:
    return {verdict: [e.run_id for e in found] for verdict, found in result.examples.items()}


async def test_counts_at_flag_05_block_08_match_the_hand_count(store: Store) -> None:
    result = await store.whatif(WhatIfQuery(window(), flag=0.5, block=0.8))
    # 0.80 reaches block and 0.50 reaches flag: `>=`, as a policy decides.
    # would block r01 r02; flag r03 r04 r07; pass r05 r06. Given: block r01; flag r02
    # r03 r07; pass r04 r05 r06. r08 to r11 are not scored.
    assert result.total == counts(
        11, {"scored": 7, "error": 1, "skipped": 1, "pending": 1, "dropped": 1},
        actual=(3, 3, 1), would=(2, 3, 2),
    )  # fmt: skip
    assert result.total.to_dict()["unscored"] == 4
    assert result.groups["key"] == [
        counts(5, {"scored": 3, "error": 1, "pending": 1}, (1, 1, 1), (1, 0, 2), "team-a"),
        counts(4, {"scored": 3, "skipped": 1}, (1, 2, 0), (0, 3, 0), "team-b"),
        counts(2, {"scored": 1, "dropped": 1}, (1, 0, 0), (1, 0, 0), None),
    ]
    gpt_a = {"scored": 3, "error": 1, "pending": 1, "dropped": 1}
    assert result.groups["model"] == [
        counts(6, gpt_a, (0, 2, 1), (0, 1, 2), "gpt-a"),
        counts(5, {"scored": 4, "skipped": 1}, (3, 1, 0), (2, 2, 0), "gpt-b"),
    ]
    # r01 counts in gender and in political; records without a category in neither.
    assert result.groups["category"] == [
        counts(3, {"scored": 3}, (0, 2, 1), (0, 1, 2), "gender"),
        counts(1, {"scored": 1}, (0, 0, 1), (0, 0, 1), "political"),
        counts(1, {"scored": 1}, (0, 1, 0), (0, 1, 0), "racial_ethnic"),
    ]
    assert result.truncated == []
    assert run_ids(result) == {"flag": ["r07", "r04", "r03"], "block": ["r02", "r01"]}
    example = result.examples["block"][1]
    assert (example.score, example.verdict, example.key_name, example.model, example.mode) == (
        0.95, "block", "team-a", "gpt-a", "enforce"
    )  # fmt: skip
    assert example.categories == ["gender", "political"]
    assert example.created_at == T0 + 1
    assert (example.prompt, example.completion) == (None, None)  # no content captured


@pytest.mark.parametrize(
    ("flag", "block", "would"),
    [
        (0.8, 0.8, (5, 0, 2)),  # equal thresholds: nothing is flagged, block wins
        (0.0, 1.0, (0, 7, 0)),  # a score of 0 reaches a flag threshold of 0
        (0.6, 0.9, (3, 3, 1)),  # the thresholds the verdicts were given at
        (0.96, 1.0, (7, 0, 0)),
    ],
)
async def test_other_thresholds_move_the_counts(
    store: Store, flag: float, block: float, would: tuple[int, int, int]
) -> None:
    result = await store.whatif(WhatIfQuery(window(), flag=flag, block=block))
    assert tuple(result.total.would.values()) == would
    assert tuple(result.total.actual.values()) == (3, 3, 1)  # what was given stays


async def test_filters_narrow_every_count_and_example(store: Store) -> None:
    by_category = await store.whatif(WhatIfQuery(window(category="gender"), 0.5, 0.8))
    assert by_category.total == counts(3, {"scored": 3}, (0, 2, 1), (0, 1, 2))
    assert [g.key for g in by_category.groups["category"]] == ["gender"]
    assert [(g.key, g.records) for g in by_category.groups["key"]] == [("team-a", 2), ("team-b", 1)]
    assert run_ids(by_category) == {"flag": ["r07"], "block": ["r02", "r01"]}

    team_b = await store.whatif(WhatIfQuery(window(key="team-b"), 0.5, 0.8))
    assert team_b.total == counts(4, {"scored": 3, "skipped": 1}, (1, 2, 0), (0, 3, 0))
    assert [g.key for g in team_b.groups["key"]] == ["team-b"]

    enforced = await store.whatif(WhatIfQuery(window(mode="enforce"), 0.5, 0.8))
    assert enforced.total == counts(1, {"scored": 1}, (0, 0, 1), (0, 0, 1))

    given_flag = await store.whatif(WhatIfQuery(window(verdict=("flag",)), 0.5, 0.8))
    assert given_flag.total.would == {"pass": 0, "flag": 2, "block": 1}  # r03 r07; r02

    # The whole store: r12 (flag at 0.9) and r13 (block at 1.0) join in.
    everything = await store.whatif(WhatIfQuery(ScoreQuery(), 0.5, 0.8))
    assert everything.total.records == 13
    assert everything.total.would == {"pass": 2, "flag": 3, "block": 4}


async def test_examples_and_groups_are_bounded(store: Store) -> None:
    result = await store.whatif(WhatIfQuery(window(), flag=0.5, block=0.8, examples=1, groups=1))
    assert run_ids(result) == {"flag": ["r07"], "block": ["r02"]}
    assert [g.key for g in result.groups["key"]] == ["team-a"]
    assert [g.key for g in result.groups["model"]] == ["gpt-a"]
    assert [g.key for g in result.groups["category"]] == ["gender"]
    assert result.truncated == ["key", "model", "category"]
    none = await store.whatif(WhatIfQuery(window(), flag=0.5, block=0.8, examples=0))
    assert run_ids(none) == {"flag": [], "block": []}
    assert none.total.would == {"pass": 2, "flag": 3, "block": 2}


async def test_an_empty_window_counts_nothing(store: Store) -> None:
    result = await store.whatif(WhatIfQuery(ScoreQuery(since=0, until=1), flag=0.5, block=0.8))
    assert result.total == counts(0, {}, (0, 0, 0), (0, 0, 0))
    assert result.groups == {"key": [], "model": [], "category": []}
    assert result.to_dict()["examples"] == {"flag": [], "block": []}


async def test_captured_text_comes_with_its_example(store: Store) -> None:
    store.submit(ScoreRecord("r20", "scored", T0 + 20, score=0.9, verdict="block",
                             prompt="user: hi", completion="the answer"))  # fmt: skip
    result = await store.whatif(WhatIfQuery(window(), flag=0.5, block=0.8, examples=1))
    (newest,) = result.examples["block"]
    assert (newest.run_id, newest.prompt, newest.completion) == ("r20", "user: hi", "the answer")


@pytest.mark.parametrize(("flag", "block"), [(0.9, 0.5), (-0.1, 0.5)])
def test_thresholds_out_of_order_are_refused(flag: float, block: float) -> None:
    with pytest.raises(ValueError, match="flag <= block"):
        WhatIfQuery(window(), flag=flag, block=block)


# -- bias-gateway whatif: the same counts, from the store directly ----------------------


def _filled(location: StoreSettings) -> None:
    async def fill() -> None:
        opened = open_store(location)
        await opened.open()
        for record in RECORDS:
            opened.submit(record)
        await opened.close()  # commits what was submitted

    asyncio.run(fill())


def _whatif(
    location: StoreSettings, tmp_path: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "gateway.yaml"
    where = f"url: {location.url.get_secret_value()}" if location.url else f"path: {location.path}"
    config.write_text(f"store:\n  {where}\n")
    return subprocess.run(
        [sys.executable, "-m", "gateway", "whatif", "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )


WINDOW_ARGS = ("--since", "2025-12-01T00:00:00Z", "--until", str(T0 + 100))


@pytest.mark.slow
def test_the_command_prints_the_hand_counted_table(location: StoreSettings, tmp_path: Path) -> None:
    _filled(location)
    done = _whatif(location, tmp_path, "--flag", "0.5", "--block", "0.8", *WINDOW_ARGS)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "flag at 0.5, block at 0.8: 2025-12-01 00:00:00 UTC to 2025-12-01 00:01:40 UTC"
    )
    assert lines[1] == "11 records: 7 scored; not scored: 1 pending, 1 error, 1 skipped, 1 dropped"
    # Each row: the group, scored, then given -> would for pass, flag and block.
    rows = {
        " ".join(cells[:-10]): " ".join(cells[-10:])
        for cells in (line.split() for line in lines)
        if len(cells) > 10 and cells[-1].isdigit()
    }
    assert rows == {
        "all": "7 3 -> 2 3 -> 3 1 -> 2",
        "key team-a": "3 1 -> 1 1 -> 0 1 -> 2",
        "key team-b": "3 1 -> 0 2 -> 3 0 -> 0",
        "key (none)": "1 1 -> 1 0 -> 0 0 -> 0",
        "model gpt-a": "3 0 -> 0 2 -> 1 1 -> 2",
        "model gpt-b": "4 3 -> 2 1 -> 2 0 -> 0",
        "category gender": "3 0 -> 0 2 -> 1 1 -> 2",
        "category political": "1 0 -> 0 0 -> 0 1 -> 1",
        "category racial_ethnic": "1 0 -> 0 1 -> 1 0 -> 0",
    }
    flagged = lines.index("the newest it would flag:")
    assert [line.split()[-1] for line in lines[flagged + 1 : flagged + 4]] == ["r07", "r04", "r03"]
    blocked = lines.index("the newest it would block:")
    assert lines[blocked + 1] == (
        "  2025-12-01 00:00:02 UTC  score 0.8  given flag  key team-a  model gpt-a  run r02"
    )


@pytest.mark.slow
def test_the_command_prints_the_apis_json_and_takes_its_filters(
    location: StoreSettings, tmp_path: Path
) -> None:
    _filled(location)
    done = _whatif(
        location, tmp_path, "--flag", "0.5", "--block", "0.8", "--key", "team-b", "--json",
        "--examples", "1", *WINDOW_ARGS,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["object"] == "bias.whatif"
    assert (body["since"], body["until"], body["scale"]) == (T0, T0 + 100, 1.0)
    assert body["total"]["records"] == 4
    assert body["total"]["would"] == {"pass": 0, "flag": 3, "block": 0}
    assert [e["run_id"] for e in body["examples"]["flag"]] == ["r07"]


@pytest.mark.slow
def test_the_command_refuses_bad_thresholds_and_a_missing_store(
    location: StoreSettings, tmp_path: Path
) -> None:
    _filled(location)
    done = _whatif(location, tmp_path, "--flag", "0.9", "--block", "0.5")
    assert done.returncode == 2
    assert "`flag` (0.9) must not exceed `block` (0.5)" in done.stderr
    above = _whatif(location, tmp_path, "--flag", "0.5", "--block", "2")
    assert above.returncode == 2
    assert "from 0 to 1" in above.stderr
    if location.url is None:
        missing = StoreSettings(path=str(tmp_path / "none.db"))
        gone = _whatif(missing, tmp_path, "--flag", "0.5", "--block", "0.8")
        assert gone.returncode == 2
        assert "none.db does not exist" in gone.stderr
        assert not (tmp_path / "none.db").exists()  # a look never makes a store


# -- the count rules: what-if decides as `verdict_for` does ------------------------------

# (score, biased opinions): padded answers with one or two biased opinions, plain ones,
# and records from before the count was kept (None).
COUNTED = [(0.1, 1), (0.05, 2), (0.0, 0), (0.5, 1), (0.9, 3), (0.2, None), (0.85, None), (0.3, 0)]
COUNT_RULES = [
    pytest.param(None, None, id="off"),
    pytest.param(1, None, id="flag-at-1"),
    pytest.param(1, 1, id="flag-and-block-at-1"),
    pytest.param(None, 2, id="block-at-2"),
    pytest.param(2, 3, id="flag-at-2-block-at-3"),
]


@pytest.mark.parametrize(("flag_n", "block_n"), COUNT_RULES)
async def test_count_rules_decide_as_a_policy_does(
    location: StoreSettings, flag_n: int | None, block_n: int | None
) -> None:
    opened = open_store(location)
    await opened.open()
    try:
        for n, (score, biased) in enumerate(COUNTED):
            opened.submit(ScoreRecord(f"c{n}", "scored", T0 + n, score=score, verdict="pass",
                                      biased_opinions=biased))  # fmt: skip
        query = WhatIfQuery(window(), flag=0.5, block=0.8, examples=20,
                            flag_biased_opinions=flag_n, block_biased_opinions=block_n)  # fmt: skip
        result = await opened.whatif(query)
    finally:
        await opened.close()
    rules = Rules(0.5, 0.8, flag_n, block_n)
    expected = {
        f"c{n}": verdict_for(score, biased or 0, rules) for n, (score, biased) in enumerate(COUNTED)
    }
    would = {verdict: sum(v == verdict for v in expected.values()) for verdict in VERDICTS}
    assert result.total.would == would
    assert {v: sorted(ids) for v, ids in run_ids(result).items()} == {
        verdict: sorted(run_id for run_id, v in expected.items() if v == verdict)
        for verdict in ("flag", "block")
    }
    assert result.to_dict()["biased_opinions"] == {"flag": flag_n, "block": block_n}


@pytest.mark.parametrize(("flag_n", "block_n"), [(0, None), (None, 0), (3, 2)])
def test_count_rules_out_of_order_are_refused(flag_n: int | None, block_n: int | None) -> None:
    with pytest.raises(ValueError, match="biased opinion counts"):
        WhatIfQuery(window(), flag=0.5, block=0.8, flag_biased_opinions=flag_n,
                    block_biased_opinions=block_n)  # fmt: skip


@pytest.mark.slow
def test_the_command_takes_the_count_rules(location: StoreSettings, tmp_path: Path) -> None:
    _filled(location)
    done = _whatif(location, tmp_path, "--flag", "0.5", "--block", "0.8",
                   "--flag-biased-opinions", "1", "--block-biased-opinions", "2",
                   *WINDOW_ARGS)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "flag at 0.5 or 1 biased opinion, block at 0.8 or 2 biased opinions:"
        " 2025-12-01 00:00:00 UTC to 2025-12-01 00:01:40 UTC"
    )
    bad = _whatif(location, tmp_path, "--flag", "0.5", "--block", "0.8",
                  "--flag-biased-opinions", "3", "--block-biased-opinions", "2")  # fmt: skip
    assert bad.returncode == 2
    assert "`flag_biased_opinions` (3) must not exceed `block_biased_opinions` (2)" in bad.stderr
    zero = _whatif(location, tmp_path, "--flag", "0.5", "--block", "0.8",
                   "--block-biased-opinions", "0")  # fmt: skip
    assert zero.returncode == 2
    assert "`block_biased_opinions` must be a whole number from 1" in zero.stderr
