"""Content capture off keeps the answers out of everything a gateway persists, on both
engines: every table (and, for SQLite, the file's and its WAL's bytes) is searched for a
word only the answers held, which the judge quotes in the biased opinion, its reason for
it and its explanation, and for the biased opinion's words. With capture on the same
search finds it, which shows the search can."""

from __future__ import annotations

import asyncio
import re
import secrets
import sqlite3
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from testkit.fake_openai import FakeOpenAI
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, policy
from tests.support.resources import ENGINES

MakeGateway = Callable[..., RunningGateway]
ANSWERS = 6


@pytest.fixture(params=ENGINES)
def store_for(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """The `store` settings of a fresh store on the engine under test."""
    if request.param == "postgresql":
        return {"url": request.getfixturevalue("pg_url")}
    return {"path": str(tmp_path / "scores.db")}


def _marker() -> str:
    """A word no other text holds, of letters only: the judged view reads digits inside
    a word as the letters they stand for ("zq011e7" as "zqollet"), so a hex token's
    text may not be what the judge saw."""
    return "zq" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(12))


def _answer(fake: FakeOpenAI, marker: str, *, quoted: bool) -> None:
    """Answers the judge reads: two opinions, one of them biased (so each answer is
    flagged and explained); the marker in a sentence the judge does not take for an
    opinion, or, `quoted`, in the biased one. Each answer distinct, so each is judged."""
    fake.read_text = True
    fake.opinion_words = ["Engineers"]
    fake.biased_words = ["lazy"]
    where = ("", f" {marker}") if quoted else (f" {marker}", "")
    fake.reply = f"Bridges carry{where[0]} loads. Engineers build. Engineers{where[1]} are lazy."
    fake.unique_replies = True
    # The explanation quotes the biased opinion, as a real judge's does.
    fake.reason = f"The score is 0.5: 'Engineers{where[1]} are lazy' {OPINION_WORDS}."


OPINION_WORDS = "stereotypes every engineer as idle"  # a word-sequence only the judge wrote


def _score(gateway: RunningGateway, answers: int) -> list[dict[str, Any]]:
    """Send `answers` chat completions and wait until each is scored and explained."""
    client = gateway.client()
    run_ids = []
    for _ in range(answers):
        raw = client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "Tell me about engineers."}]
        )
        run_ids.append(raw.headers["x-bias-run-id"])
    records = [gateway.wait_for_score(run_id, reason=True) for run_id in run_ids]
    for record in records:
        assert (record["status"], record["verdict"]) == ("scored", "flag"), record
        assert record["reason_status"] == "done", record
    return records


def _gateway(
    make_gateway: MakeGateway, store: dict[str, Any], capture: bool, mode: str
) -> RunningGateway:
    return make_gateway(
        store={**store, "capture_content": capture},
        judge={"cache_persist": True},
        **policy(mode=mode, flag_threshold=0.3, block_threshold=0.9),
    )


def _sqlite_places(path: Path, marker: str) -> set[str]:
    """Where in the SQLite file at `path` the marker is: `table` for a row holding it,
    `file` or `wal` for the bytes (freed pages and old frames included)."""
    found = set()
    conn = sqlite3.connect(path)
    try:
        tables = [
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                if any(marker in str(value) for value in row):
                    found.add(table)
    finally:
        conn.close()
    for suffix, place in (("", "file"), ("-wal", "wal")):
        part = Path(f"{path}{suffix}")
        if part.exists() and marker.encode() in part.read_bytes():
            found.add(place)
    return found


def _postgres_places(url: str, marker: str) -> set[str]:
    """The tables of the database at `url` with a row holding the marker, any column."""

    async def search() -> set[str]:
        conn = await asyncpg.connect(url)
        try:
            tables = await conn.fetch(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
            )
            found = set()
            for (table,) in tables:
                query = f'SELECT count(*) FROM "{table}" AS t WHERE t::text LIKE $1'
                if await conn.fetchval(query, f"%{marker}%"):
                    found.add(table)
            return found
        finally:
            await conn.close()

    return asyncio.run(search())


def _cache_keys(store: dict[str, Any]) -> list[str]:
    query = "SELECT key FROM score_cache"
    if "url" in store:

        async def fetch() -> list[str]:
            conn = await asyncpg.connect(store["url"])
            try:
                return [row[0] for row in await conn.fetch(query)]
            finally:
                await conn.close()

        return asyncio.run(fetch())
    conn = sqlite3.connect(store["path"])
    try:
        return [row[0] for row in conn.execute(query)]
    finally:
        conn.close()


def _places(store: dict[str, Any], marker: str) -> set[str]:
    if "url" in store:
        return _postgres_places(store["url"], marker)
    return _sqlite_places(Path(store["path"]), marker)


def _read_apis_serve(gateway: RunningGateway, run_id: str) -> None:
    """The search, stats and what-if APIs and the dashboard read records kept without
    their text as they read any other."""
    with gateway.http() as http:
        listed = http.get("/v1/bias/scores", params={"verdict": "flag"}).json()
        assert len(listed["data"]) == ANSWERS, listed
        stats = http.get("/v1/bias/stats", params={"group_by": "category"}).json()
        assert stats["total"]["verdict"]["flag"] == ANSWERS, stats
        whatif = http.get("/v1/bias/whatif", params={"flag": 0.6, "block": 0.9}).json()
        assert whatif["total"]["would"]["pass"] == ANSWERS, whatif
        for page in ("/ui", "/ui/records", f"/ui/records/{run_id}", "/ui/whatif"):
            response = http.get(page)
            assert response.status_code == 200, (page, response.text[:300])
        assert "gender" in http.get(f"/ui/records/{run_id}").text


@pytest.mark.parametrize("mode", ["monitor", "enforce"])
def test_with_capture_off_nothing_persisted_holds_the_answers(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI, store_for: dict[str, Any], mode: str
) -> None:
    marker = _marker()
    _answer(fake_openai, marker, quoted=True)
    gateway = _gateway(make_gateway, store_for, False, mode)
    records = _score(gateway, ANSWERS)
    assert len(gateway.state.scoring.judging.cache or ()) >= ANSWERS
    # What decided each answer is kept: its verdicts, counts and categories.
    for record in records:
        assert (record["score"], record["biased_opinions"]) == (0.5, 1), record
        assert record["categories"] == ["gender"], record
        assert record["reason"] is None, record
        verdicts = record["result"]["analyzeStepResult"]["results"]
        assert [verdict["result"] for verdict in verdicts] == ["no", "yes"], record
        assert record["result"]["preprocessStepResult"]["opinions"] == ["", ""], record
    _read_apis_serve(gateway, records[0]["run_id"])
    # The store closes: all it was given is written, and SQLite's WAL checkpointed (while
    # it runs, the WAL's older frames may still hold monitor work's text, which a
    # pending record keeps durably until its score is final: docs/scale-out.md).
    gateway.server.stop()
    assert _places(store_for, marker) == set()
    assert _places(store_for, "are lazy") == set()
    assert _places(store_for, OPINION_WORDS) == set()


def test_with_capture_on_the_search_finds_the_answers(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI, store_for: dict[str, Any]
) -> None:
    marker = _marker()
    _answer(fake_openai, marker, quoted=True)
    gateway = _gateway(make_gateway, store_for, True, "monitor")
    _score(gateway, ANSWERS)
    # The cache is written beside the record, not before it: wait for both to be there.
    wait_for(lambda: {"scores", "score_cache"} <= _places(store_for, marker), "the rows")
    gateway.server.stop()
    assert {"scores", "score_cache"} <= _places(store_for, marker)
    assert "scores" in _places(store_for, OPINION_WORDS)


def test_with_capture_off_the_stored_cache_keeps_verdicts_and_no_quotes(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI, store_for: dict[str, Any]
) -> None:
    """The judge quotes the marker in an opinion: the stored cache holds neither it nor a
    key made of it, and a gateway that starts on the same store decides the same
    answer from that entry as the first did, without asking the judge for verdicts."""
    marker = _marker()
    _answer(fake_openai, marker, quoted=True)
    fake_openai.unique_replies = False
    first = _gateway(make_gateway, store_for, False, "enforce")
    [judged] = _score(first, 1)
    first.server.stop()
    assert "score_cache" not in _places(store_for, marker)
    keys = _cache_keys(store_for)
    # The verdicts' entry only, under a content hash (an explanation's is not stored).
    assert keys
    assert all(re.fullmatch("[0-9a-f]{64}", key) for key in keys), keys

    verdict_calls = fake_openai.steps().count("preprocess")
    second = _gateway(make_gateway, store_for, False, "enforce")
    [replayed] = _score(second, 1)
    assert fake_openai.steps().count("preprocess") == verdict_calls
    assert replayed["result"]["cached"] is True
    same = ("score", "verdict", "categories", "biased_opinions", "tamper")
    assert {name: replayed[name] for name in same} == {name: judged[name] for name in same}
    # The explanation is asked for again (the cache does not keep it) and not stored.
    assert replayed["reason"] is judged["reason"] is None
    assert replayed["reason_status"] == judged["reason_status"] == "done"


def test_capture_for_review_keeps_the_text_of_what_the_queue_offers_and_no_other(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI, store_for: dict[str, Any]
) -> None:
    """`capture_content: review`: a flagged answer's text, opinions and reasons are kept
    (it is for review); a pass far from both thresholds, not sampled, keeps none."""
    flagged, passed = _marker(), _marker()
    _answer(fake_openai, flagged, quoted=True)
    gateway = make_gateway(
        store={**store_for, "capture_content": "review"},
        review={"borderline": 0.1, "sample_passes": 0.0},
        **policy(mode="enforce", flag_threshold=0.3, block_threshold=0.9),
    )
    [kept] = _score(gateway, 1)
    fake_openai.reply = f"Bridges carry {passed} loads."
    client = gateway.client()
    raw = client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "Tell me about bridges."}]
    )
    dropped = gateway.wait_for_score(raw.headers["x-bias-run-id"], reason=True)
    assert (dropped["verdict"], dropped["completion"], dropped["review_rank"]) == (
        "pass",
        None,
        None,
    )
    assert flagged in kept["completion"]
    assert kept["review_rank"] == 2  # flagged
    assert flagged in kept["result"]["preprocessStepResult"]["opinions"][1]
    with gateway.http() as http:
        queue = http.get("/v1/bias/reviews/queue").json()["data"]
    assert [item["run_id"] for item in queue] == [kept["run_id"]]
    assert flagged in queue[0]["text"]
    gateway.server.stop()
    assert "scores" in _places(store_for, flagged)
    assert _places(store_for, passed) == set()
