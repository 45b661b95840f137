"""Scale-out with real processes: gateways that only enqueue (`queue.scorer: external`)
and `bias-gateway scorer` processes that claim the work from one store, one of them
`kill -9`ed while it holds work."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import openai
import pytest
import yaml

from gateway.store.records import FINAL_STATUSES
from testkit.fake_openai import JUDGE_MODEL, FakeOpenAI
from testkit.waiting import wait_for
from tests.support.fleet import Fleet, Output
from tests.support.subprocess_gateway import start_gateway, start_scorer

pytestmark = pytest.mark.slow  # every test here starts gateway or scorer processes

MESSAGES: Any = [{"role": "user", "content": "hi"}]
JUDGE_DELAY = 0.33  # three judge calls a scoring: about a second each
LEASE_SECONDS = 3.0  # a dead scorer's work comes back this long after its last renewal


def scaleout_config(path: Path, fake: FakeOpenAI, store: dict[str, str], **queue: Any) -> Path:
    config: dict[str, Any] = {
        "upstream": {"base_url": fake.base_url, "api_key": "sk-upstream-secret"},
        "judge": {
            "model": JUDGE_MODEL,
            "max_retries": 0,
            "timeout": 10,
            "cache_size": 0,
            "max_concurrency": 4,
        },
        "store": store,
        "queue": {
            "scorer": "external",
            "lease_seconds": LEASE_SECONDS,
            "drain_deadline": 1,
            **queue,
        },
    }
    path.write_text(yaml.safe_dump(config))
    return path


def rows(url: str) -> dict[str, dict[str, Any]]:
    """Every score record in the database at `url`, by run id."""

    async def fetch() -> list[Any]:
        conn = await asyncpg.connect(url)
        try:
            return list(
                await conn.fetch(
                    "SELECT run_id, status, status_reason, score, attempts, leased_by,"
                    " work IS NOT NULL AS has_work FROM scores"
                )
            )
        finally:
            await conn.close()

    return {row["run_id"]: dict(row) for row in asyncio.run(fetch())}


def post(client: openai.OpenAI) -> str:
    """One monitored chat completion: answered at once, its score pending."""
    raw = client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    assert raw.parse().choices[0].message.content
    assert raw.headers["x-bias-status"] == "pending"
    run_id: str = raw.headers["x-bias-run-id"]
    return run_id


def client_of(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0, timeout=30)


def ready(url: str) -> dict[str, Any]:
    answer = httpx.get(f"{url}/readyz", timeout=5)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def kill_while_holding_work(scorer: Output, health: str, database: str) -> set[str]:
    """`kill -9` the scorer mid-run: once it has scored a run and while it runs scorings
    and holds leases on more. Returns the run ids it held as it died."""
    process = scorer.process
    worker = ready(health)["worker"]

    def holding() -> bool:
        if not scorer.events("bias score") or ready(health)["in_flight"] == 0:
            return False
        return any(row["leased_by"] == worker for row in rows(database).values())

    wait_for(holding, "the scorer to hold work", timeout=20, interval=0.05)
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=10) == -signal.SIGKILL
    # Its leases stay in the store until they lapse: what it held, as it died.
    return {
        run_id
        for run_id, row in rows(database).items()
        if row["leased_by"] == worker and row["status"] == "pending"
    }


def scored_run_ids(output: Output) -> Counter[str]:
    return Counter(line["run_id"] for line in output.events("bias score"))


def test_two_gateways_two_scorers_one_killed_every_run_ends_once(
    fake_openai: FakeOpenAI,
    tmp_path: Path,
    pg_url: str,
    fleet: Fleet,
    record_property: Callable[[str, object], None],
) -> None:
    """The issue's test: N monitored requests over two gateways, two scorers on one
    PostgreSQL, one scorer `kill -9`ed mid-run. Every run id ends in exactly one final
    status, answered alike by both gateways; judge runs beyond N are counted."""
    fake_openai.judge_delay = JUDGE_DELAY
    fake_openai.unique_replies = True
    count = 24
    config = scaleout_config(tmp_path / "gateway.yaml", fake_openai, {"url": pg_url})
    began = time.monotonic()
    gateways = [fleet.add(start_gateway(config))[1] for _ in range(2)]
    victim_output, victim_health = fleet.add(start_scorer(config))
    survivor_output, _ = fleet.add(start_scorer(config))
    started = time.monotonic()

    clients = [client_of(url) for url in gateways]
    run_ids = [post(clients[index % 2]) for index in range(count)]
    assert len(set(run_ids)) == count
    held = kill_while_holding_work(victim_output, victim_health, pg_url)
    killed_at = time.monotonic()
    victim_output.join()

    def all_final() -> bool:
        found = rows(pg_url)
        return all(found.get(run_id, {}).get("status") in FINAL_STATUSES for run_id in run_ids)

    wait_for(all_final, "every run to end", timeout=60, interval=0.05)
    finished = time.monotonic()
    final = rows(pg_url)

    # Exactly one row a run, each scored, with neither work nor lease left.
    assert set(final) == set(run_ids)
    assert {row["status"] for row in final.values()} == {"scored"}, final
    assert not [run_id for run_id, row in final.items() if row["has_work"] or row["leased_by"]]
    assert held, "the scorer was killed while it held no work"
    assert all(final[run_id]["attempts"] >= 2 for run_id in held), (held, final)
    attempts = Counter(row["attempts"] for row in final.values())

    # Each lookup answers on both gateways, alike.
    for run_id in run_ids:
        answers = [httpx.get(f"{url}/v1/bias/scores/{run_id}", timeout=10) for url in gateways]
        assert [answer.status_code for answer in answers] == [200, 200]
        bodies = [answer.json() for answer in answers]
        assert bodies[0] == bodies[1]
        assert (bodies[0]["status"], bodies[0]["score"]) == ("scored", final[run_id]["score"])

    # Judge runs: one preprocess call a scoring; beyond N, only work the dead scorer held.
    steps = Counter(fake_openai.steps())
    assert steps["chat"] == count  # one upstream call a request, no more
    extra = steps["preprocess"] - count
    assert 0 <= extra <= len(held), (extra, held)

    # One final word a run: the survivor scored all the dead one held, and each of them
    # at most once; a run both logged was one whose final write the kill cut off.
    by_victim, by_survivor = scored_run_ids(victim_output), scored_run_ids(survivor_output)
    assert max(by_victim.values(), default=1) == 1
    assert max(by_survivor.values(), default=1) == 1
    assert set(by_victim) | set(by_survivor) == set(run_ids)
    assert held <= set(by_survivor)
    twice = set(by_victim) & set(by_survivor)
    assert twice <= held
    assert len(twice) <= extra
    for line in survivor_output.events("bias score"):
        assert (line["status"], line["score"]) == ("scored", final[line["run_id"]]["score"])

    summary = {
        "requests": count,
        "extra_judge_runs": extra,
        "held_at_kill": len(held),
        "logged_twice": len(twice),
        "scored_by_killed": len(by_victim),
        "scored_by_survivor": len(by_survivor),
        "attempts": dict(sorted(attempts.items())),
        "startup_seconds": round(started - began, 1),
        "kill_to_all_final_seconds": round(finished - killed_at, 1),
        "requests_to_all_final_seconds": round(finished - started, 1),
    }
    for name, value in summary.items():
        record_property(name, value)
    print(f"\nscale-out: {json.dumps(summary)}")


def test_a_scorer_serves_health_readiness_and_metrics_without_the_password(
    fake_openai: FakeOpenAI, tmp_path: Path, pg_url: str, fleet: Fleet
) -> None:
    config = scaleout_config(tmp_path / "scorer.yaml", fake_openai, {"url": pg_url})
    _, health = fleet.add(start_scorer(config))

    assert httpx.get(f"{health}/healthz", timeout=5).json() == {"status": "ok"}
    answer = httpx.get(f"{health}/readyz", timeout=5)
    body = answer.json()
    assert answer.status_code == 200
    assert body["status"] == "ready"
    assert body["store"]["engine"] == "postgresql"
    password = pg_url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    assert password not in answer.text
    assert "****" in body["store"]["where"]
    assert (body["in_flight"], body["queue_depth"], body["claimed"]) == (0, 0, 0)
    metrics = httpx.get(f"{health}/metrics", timeout=5)
    assert metrics.status_code == 200
    assert "bias_work_claimed_total" in metrics.text
    assert password not in metrics.text


def test_a_scorer_scores_an_external_gateways_work_on_sqlite(
    fake_openai: FakeOpenAI, tmp_path: Path, fleet: Fleet
) -> None:
    fake_openai.unique_replies = True
    store = tmp_path / "scores.db"
    config = scaleout_config(tmp_path / "gateway.yaml", fake_openai, {"path": str(store)})
    _, gateway = fleet.add(start_gateway(config))
    output, health = fleet.add(start_scorer(config))
    assert ready(health)["store"] == {
        "engine": "sqlite",
        "where": str(store.resolve()),
        "buffered": 0,
        "buffer_records": 10_000,
    }

    run_ids = [post(client_of(gateway)) for _ in range(4)]

    def scored(run_id: str) -> bool:
        answer = httpx.get(f"{gateway}/v1/bias/scores/{run_id}", timeout=10)
        return answer.status_code == 200 and answer.json()["status"] == "scored"

    wait_for(lambda: all(scored(run_id) for run_id in run_ids), "the scorer to score", timeout=20)
    # The scorer did it: its log has each run's final word, its counter each claim.
    assert scored_run_ids(output) == Counter(run_ids)
    assert ready(health)["claimed"] == len(run_ids)
    assert "bias_work_claimed_total 4.0" in httpx.get(f"{health}/metrics", timeout=5).text
    for run_id in run_ids:
        record = httpx.get(f"{gateway}/v1/bias/scores/{run_id}", timeout=10).json()
        assert (record["attempts"], record["leased_by"], record["score"]) == (1, None, 1)


def test_work_a_killed_scorer_held_ends_attempts_exhausted_after_max_attempts(
    fake_openai: FakeOpenAI, tmp_path: Path, pg_url: str, fleet: Fleet
) -> None:
    """With `queue.max_attempts: 1` a lapsed claim is the last: the survivor ends the dead
    scorer's work `error` (`attempts_exhausted`) instead of judging it, and scores the rest."""
    fake_openai.judge_delay = JUDGE_DELAY
    fake_openai.unique_replies = True
    # Enough work that each scorer runs several rounds of its 4 slots: with 12, one
    # scorer could take only 4, finish them together, and never be seen holding work.
    count = 24
    config = scaleout_config(
        tmp_path / "gateway.yaml", fake_openai, {"url": pg_url}, max_attempts=1
    )
    _, gateway = fleet.add(start_gateway(config))
    victim_output, victim_health = fleet.add(start_scorer(config))
    survivor_output, _ = fleet.add(start_scorer(config))

    client = client_of(gateway)
    run_ids = [post(client) for _ in range(count)]
    held = kill_while_holding_work(victim_output, victim_health, pg_url)
    assert held, "the scorer was killed while it held no work"
    victim_output.join()
    judged_by_victim = set(scored_run_ids(victim_output))

    def all_final() -> bool:
        found = rows(pg_url)
        return all(found.get(run_id, {}).get("status") in FINAL_STATUSES for run_id in run_ids)

    wait_for(all_final, "every run to end", timeout=60, interval=0.05)
    final = rows(pg_url)
    assert set(final) == set(run_ids)
    ended = {run_id for run_id, row in final.items() if row["status"] == "error"}
    assert ended == held, final
    for run_id in held:
        row = final[run_id]
        assert (row["status_reason"], row["attempts"], row["score"]) == (
            "attempts_exhausted",
            1,
            None,
        )
    for run_id in set(run_ids) - held:
        assert final[run_id]["status"] == "scored"
    assert not [run_id for run_id, row in final.items() if row["has_work"] or row["leased_by"]]
    # The survivor judged none of it, and said why it ended it.
    by_survivor = set(scored_run_ids(survivor_output))
    assert not by_survivor & held
    assert by_survivor | (judged_by_victim - held) == set(run_ids) - held
    expired = survivor_output.events("scoring work ended unscored")
    assert {line["run_id"] for line in expired} == held
    assert {line["reason"] for line in expired} == {"attempts_exhausted"}
    lookup = httpx.get(f"{gateway}/v1/bias/scores/{next(iter(held))}", timeout=10).json()
    assert (lookup["status"], lookup["status_reason"]) == ("error", "attempts_exhausted")
    scored = len(set(run_ids) - held)
    print(f"\nmax_attempts 1: {count} requests, {len(held)} exhausted, {scored} scored")
