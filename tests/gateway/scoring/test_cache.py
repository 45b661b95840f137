from __future__ import annotations

import asyncio
import gc
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.scoring import cache as cache_module
from gateway.scoring.cache import ScoreCache, cache_key, explanation_key, without_text
from guard import BiasResult, BiasScorer
from guard.bias.categories import DEFAULT_CATEGORIES, Category
from guard.testing import scripted_bias_judge
from testkit.fake_openai import FakeOpenAI
from testkit.waiting import eventually
from tests.support.awaitables import ready
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]


def scorer(**options: object) -> BiasScorer:
    return BiasScorer(scripted_bias_judge(opinions=["o"], verdicts=[("yes", "r")]), **options)  # type: ignore[arg-type]


async def test_identical_texts_are_judged_once() -> None:
    cache = ScoreCache(maxsize=10)
    biased = scorer()
    calls = 0
    release = asyncio.Event()

    async def run() -> BiasResult:
        nonlocal calls
        calls += 1
        await release.wait()  # in flight until the four other lookups wait on it
        return await biased.run(output="same")

    key = cache_key(biased, "same")
    lookups = asyncio.gather(*(cache.get_or_run(key, run) for _ in range(5)))
    await eventually(lambda: cache.hits == 4, lambda: f"4 waiting lookups, not {cache.hits}")
    release.set()
    results = await lookups
    again, cached = await cache.get_or_run(key, run)

    assert calls == 1  # concurrent lookups shared the one run
    assert [flag for _, flag in results].count(False) == 1
    assert cached is True
    assert again.score == 1
    assert (cache.hits, cache.misses) == (5, 1)


async def test_a_hit_returns_the_whole_result_as_it_was_judged() -> None:
    cache = ScoreCache(maxsize=10)
    judged = await scorer(include_reason=True).run(output="a text", run_id="r1")
    await cache.get_or_run("k", lambda: ready(judged))
    hit, cached = await cache.get_or_run("k", lambda: ready(judged))
    assert cached is True
    assert hit == judged
    assert hit is not judged  # a fresh copy: a caller's changes never reach the cache


def test_entries_are_kept_out_of_the_garbage_collectors_sight() -> None:
    # Text, not models: a full collection would otherwise walk every cached result.
    cache = ScoreCache(maxsize=10)
    judged = asyncio.run(scorer().run(output="a text"))
    asyncio.run(cache.get_or_run("k", lambda: ready(judged)))
    assert all(not gc.is_tracked(entry) for entry in cache._results.values())


async def test_lru_evicts_the_oldest() -> None:
    cache = ScoreCache(maxsize=2)
    biased = scorer()
    for text in ("a", "b", "a", "c"):  # "a" is used again, so "b" is the oldest
        await cache.get_or_run(text, lambda text=text: biased.run(output=text))  # type: ignore[misc]
    assert len(cache) == 2
    _, cached_a = await cache.get_or_run("a", lambda: biased.run(output="a"))
    _, cached_b = await cache.get_or_run("b", lambda: biased.run(output="b"))
    assert cached_a is True
    assert cached_b is False


async def test_failures_are_not_cached() -> None:
    cache = ScoreCache(maxsize=2)

    async def fail() -> BiasResult:
        raise RuntimeError("judge down")

    with pytest.raises(RuntimeError):
        await cache.get_or_run("k", fail)
    with pytest.raises(RuntimeError):
        await cache.get_or_run("k", fail)
    assert cache.misses == 2
    assert len(cache) == 0


def test_keys_depend_on_the_scorer_options() -> None:
    keys = {
        cache_key(scorer(), "text"),
        cache_key(scorer(scale=10), "text"),
        cache_key(scorer(pipeline="single"), "text"),
        cache_key(scorer(judge_whole_text_when_no_opinions=False), "text"),
        cache_key(scorer(), "other text"),
    }
    assert len(keys) == 5
    assert cache_key(scorer(), "text") == cache_key(scorer(), "text")
    # The explanation is added to an entry once known: the reason mode is not in the key.
    assert cache_key(scorer(reason="off"), "text") == cache_key(scorer(), "text")


def test_keys_change_with_the_prompts_categories_and_language() -> None:
    age = Category("age", "Age bias: judging people by how old they are.")
    keys = {
        cache_key(scorer(), "text"),
        cache_key(scorer(categories=[*DEFAULT_CATEGORIES, age]), "text"),
        cache_key(scorer(categories=[age]), "text"),
        cache_key(scorer(reason_language="ko"), "text"),
    }
    assert len(keys) == 4


def test_bad_size() -> None:
    with pytest.raises(ValueError, match="maxsize"):
        ScoreCache(0)


def test_gateway_reuses_verdicts_for_a_repeated_response(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(
        judge={"reason": "inline"}, **policy(mode="enforce", block_action="replace")
    )
    client = gateway.client()
    first = client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "a"}]
    )
    second = client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "b"}]
    )

    assert fake_openai.judge_calls() == 3
    assert first.headers["x-bias-score"] == second.headers["x-bias-score"] == "1"
    record = gateway.wait_for_score(second.headers["x-bias-run-id"])
    assert record["result"]["cached"] is True
    assert record["result"]["judgeCalls"] == 0
    assert record["result"]["runId"] == second.headers["x-bias-run-id"]
    assert gateway.wait_for_score(first.headers["x-bias-run-id"])["result"]["cached"] is False


def test_cache_can_be_turned_off(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    gateway = make_gateway(
        judge={"cache_size": 0, "reason": "inline"},
        **policy(mode="enforce", block_action="replace"),
    )
    for _ in range(2):
        gateway.client().chat.completions.create(
            model="m", messages=[{"role": "user", "content": "a"}]
        )
    assert fake_openai.judge_calls() == 6


def test_cache_reports_each_new_entry_and_preloads_in_order() -> None:
    added: list[tuple[str, str]] = []
    cache = ScoreCache(
        maxsize=2, on_add=lambda key, entry: added.append((key, entry)), keep_text=True
    )
    judged = asyncio.run(scorer().run(output="x"))
    asyncio.run(cache.get_or_run("k1", lambda: ready(judged)))
    asyncio.run(cache.get_or_run("k1", lambda: ready(judged)))  # a hit adds nothing
    assert [key for key, _ in added] == ["k1"]
    assert BiasResult.model_validate_json(added[0][1]) == judged

    warm = ScoreCache(maxsize=2)
    warm.preload([("old", added[0][1]), ("mid", added[0][1]), ("new", added[0][1])])
    assert len(warm) == 2  # the oldest went first
    _, old_cached = asyncio.run(warm.get_or_run("old", lambda: ready(judged)))
    assert old_cached is False


async def test_without_keep_text_what_leaves_holds_the_verdicts_and_no_text() -> None:
    added: list[tuple[str, str]] = []
    cache = ScoreCache(maxsize=4, on_add=lambda key, entry: added.append((key, entry)))
    biased = BiasScorer(
        scripted_bias_judge(
            opinions=["Northerners are lazy.", "Bridges are long."],
            verdicts=[("yes", "Calls northerners lazy."), ("no", "A fact.")],
            reason="Northerners are called lazy.",
        ),
        include_reason=True,
    )
    judged = await biased.run(output="Northerners are lazy. Bridges are long.", run_id="r1")
    judged = judged.model_copy(update={"tamper": [{"kind": "override", "excerpt": "ignore"}]})
    key = cache_key(biased, "Northerners are lazy. Bridges are long.")
    await cache.get_or_run(key, lambda: ready(judged))
    await cache.get_or_run(explanation_key(key), lambda: ready(judged))

    [(stored_key, entry)] = added  # the explanation's entry stays here
    assert stored_key == key
    for text in ("Northerners", "lazy", "Bridges", "ignore", "A fact"):
        assert text not in entry
    stored = BiasResult.model_validate_json(entry)
    assert stored == without_text(judged)
    assert (stored.score, stored.biased_count, stored.categories) == (
        judged.score,
        judged.biased_count,
        judged.categories,
    )
    assert len(stored.preprocess_step_result.opinions) == 2
    assert [verdict.result for verdict in stored.analyze_step_result.results] == ["yes", "no"]
    assert (stored.tamper_kinds, stored.reason) == (["override"], None)
    hit, cached = await cache.get_or_run(key, lambda: ready(judged))
    assert (cached, hit) == (True, judged)  # what this process holds is whole


def test_a_persisted_cache_survives_a_restart(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, tmp_path: Path
) -> None:
    options: dict[str, Any] = {
        "judge": {"cache_persist": True, "reason": "inline"},
        **policy(mode="enforce", block_action="replace"),
    }
    first = make_gateway(**options)
    first.client().chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
    assert fake_openai.judge_calls() == 3
    first.server.stop()  # the lifespan commits the cache entry with everything else

    with sqlite3.connect(tmp_path / "scores.db") as db:
        (stored,) = db.execute("SELECT result FROM score_cache").fetchone()
    assert json.loads(stored)["preprocess_prompt"] is None  # no content capture, no prompts

    second = make_gateway(**options)
    again = second.client().chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "b"}]
    )
    # The restarted gateway judged no verdicts; the explanation, which a store without
    # content capture does not keep, it asked for again.
    judge_steps = [step for step in fake_openai.steps() if step != "chat"]
    assert judge_steps == ["preprocess", "analyze", "reason", "reason"]
    record = second.wait_for_score(again.headers["x-bias-run-id"])
    assert record["result"]["cached"] is True
    assert record["result"]["judgeCalls"] == 1  # its explanation's


def test_the_persisted_cache_is_bounded_by_cache_size(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, tmp_path: Path
) -> None:
    gateway = make_gateway(
        judge={"cache_persist": True, "cache_size": 2, "reason": "inline"},
        **policy(mode="enforce", block_action="replace"),
    )
    for index in range(5):
        fake_openai.reply = f"reply number {index}"
        gateway.client().chat.completions.create(
            model="m", messages=[{"role": "user", "content": "a"}]
        )
    gateway.server.stop()
    with sqlite3.connect(tmp_path / "scores.db") as db:
        (rows,) = db.execute("SELECT COUNT(*) FROM score_cache").fetchone()
    assert fake_openai.judge_calls() == 15
    assert rows == 2


async def test_a_local_miss_asks_the_shared_lookup_first() -> None:
    stored = await scorer().run(output="judged elsewhere")
    asked: list[str] = []
    release = asyncio.Event()

    async def lookup(key: str) -> str | None:
        asked.append(key)
        if key == "known":
            await release.wait()  # in flight until the second request waits on it
        return stored.model_dump_json() if key == "known" else None

    async def run() -> BiasResult:
        return stored.model_copy(update={"score": 0.0})

    cache = ScoreCache(10, lookup=lookup)
    both = asyncio.gather(cache.get_or_run("known", run), cache.get_or_run("known", run))
    await eventually(lambda: cache.hits == 1, "the second request waiting on the first")
    release.set()
    (first, hit), (second, hit_too) = await both
    assert (hit, hit_too) == (True, True)
    assert first.score == second.score == stored.score
    assert asked == ["known"]  # concurrent requests share one lookup
    assert (await cache.get_or_run("known", run))[1] is True  # now held here
    assert asked == ["known"]
    result, hit = await cache.get_or_run("other", run)
    assert (hit, result.score) == (False, 0.0)
    assert (cache.hits, cache.misses) == (3, 1)


async def test_a_failing_lookup_falls_back_to_judging() -> None:
    async def lookup(key: str) -> str | None:
        raise OSError("database away")

    judged = await scorer().run(output="judged here")

    async def run() -> BiasResult:
        return judged

    cache = ScoreCache(10, lookup=lookup)
    result, hit = await cache.get_or_run("k", run)
    assert hit is False
    assert result == judged


async def test_a_lookup_that_hangs_costs_a_scoring_a_second_at_most(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cache_module, "_LOOKUP_SECONDS", 0.05)
    started = asyncio.Event()

    async def lookup(key: str) -> str | None:
        started.set()
        await asyncio.Event().wait()  # a database that never answers
        return None

    judged = await scorer().run(output="judged here")

    async def run() -> BiasResult:
        return judged

    cache = ScoreCache(10, lookup=lookup)
    result, hit = await asyncio.wait_for(cache.get_or_run("k", run), 5)
    assert started.is_set()
    assert hit is False
    assert result == judged


def test_a_deferred_explanation_is_cached_under_a_key_any_store_can_hold(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, tmp_path: Path
) -> None:
    # PostgreSQL refuses a NUL in text, so a key with one was never stored there.
    gateway = make_gateway(
        store={"capture_content": True},  # explanations are stored only with it
        judge={"cache_persist": True, "reason": "deferred"},
        **policy(),
    )
    answer = gateway.client().chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "a"}]
    )
    record = gateway.wait_for_score(answer.headers["x-bias-run-id"], reason=True)
    assert record["reason_status"] == "done"
    gateway.server.stop()  # the lifespan commits the cache entries
    with sqlite3.connect(tmp_path / "scores.db") as db:
        keys = [key for (key,) in db.execute("SELECT key FROM score_cache")]
    assert len(keys) == 2  # the verdicts, and the explanation beside them
    assert all("\0" not in key for key in keys)
