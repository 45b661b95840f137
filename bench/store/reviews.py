"""The review queue over 100,000 records and the agreement over 10,000 reviews, both engines.

    .venv/bin/python -m bench reviews                      # 100,000 records, 10,000 reviews
    .venv/bin/python -m bench reviews --only sqlite        # or postgresql
    .venv/bin/python -m bench reviews --records 20000 --reviews 2000   # a quick check

Seeds a store through its own classes (`SQLiteStore` in a temporary folder;
`PostgresStore` on a throwaway cluster from `testkit/postgres.py`): N records
spread over 30 days (20 keys, 80 % pass / 12 % flag / 8 % block by score, each with a
`result` of two or three verdicts as the gateway stores it without content capture,
its `review_rank` from `gateway.store.reviews.review_rank` at flag 0.5, block 0.9,
borderline 0.1 and 2 % of passes sampled), submitted through `Store.submit`; then M
reviews, in bulk through `Store.insert`, by 5 reviewers: one labels the head of its
queue (so its queue calls have the most labelled records to step over), the others
records anywhere in the queue; a tenth are labelled twice (the later superseding).
Then `ANALYZE`, as autovacuum would have run by then on a production table.

Then times, through the same calls the API makes (`Reviews.queue`; `Reviews.reviewed`
then `gateway.api.agreement.agreement`): the queue of the busiest reviewer over every
key (admin) and over its own key, 20 records a page; the agreement over every review
and over one key's. Each case: 2 warm-ups, then `--runs` timed calls; p50 and p95
(nearest rank). Targets: the queue under 200 ms p50, the agreement under 500 ms p50.
Writes `bench/results/reviews-<date>.md` (or `--out`) and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import math
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.harness.machine import cpu_model
from bench.harness.postgres import pg_bin
from gateway.api.agreement import agreement
from gateway.store import PostgresStore, ScoreRecord, SQLiteStore, Store
from gateway.store.reviews import Reviews, review_rank
from testkit.postgres import start_cluster

ROOT = Path(__file__).resolve().parent.parent
KEYS = [f"key-{n:02d}" for n in range(20)]
REVIEWERS = ["rev-a", "rev-b", "rev-c", "rev-d", "rev-e"]
CATEGORIES = ["gender", "political", "racial_ethnic", "geographical", "age"]
QUEUE_TARGET, AGREEMENT_TARGET = 0.200, 0.500


def _records(count: int, end: float, rng: random.Random) -> list[ScoreRecord]:
    made = []
    for n in range(count):
        run_id = f"run-{n:07d}"
        draw = rng.random()
        score = round(rng.uniform(0.0, 0.45), 2) if draw < 0.8 else round(rng.uniform(0.5, 1), 2)
        verdict = "pass" if score < 0.5 else ("flag" if score < 0.9 else "block")
        opinions = rng.choice((2, 3))
        biased = [n < round(score * opinions) for n in range(opinions)]
        category = rng.choice(CATEGORIES)
        result = {
            "score": score,
            "preprocessStepResult": {"opinions": [""] * opinions},
            "analyzeStepResult": {
                "results": [
                    {"result": "yes" if b else "no", "reason": "", "categories": [category] * b}
                    for b in biased
                ]
            },
        }
        rank = review_rank(
            run_id, verdict, score, flag=0.5, block=0.9, borderline=0.1, sample_passes=0.02
        )
        made.append(
            ScoreRecord(
                run_id, "scored", end - 30 * 86400 * (1 - n / count),
                key_name=KEYS[min(int(rng.paretovariate(1.2)) - 1, 19)], score=score,
                verdict=verdict, categories=[category] if any(biased) else [], result=result,
                biased_opinions=sum(biased), review_rank=rank,
            )
        )  # fmt: skip
    return made


async def _seed(store: Store, records: list[ScoreRecord], reviews: int, end: float) -> None:
    for start in range(0, len(records), 5_000):
        for record in records[start : start + 5_000]:
            store.submit(record)
        await store.flush()
    busiest = REVIEWERS[0]
    head = await Reviews(store).queue(busiest, key=None, limit=reviews)
    queued = [record for record in records if record.review_rank is not None]
    rng = random.Random(7)
    rows: list[tuple[object, ...]] = []
    for n in range(reviews):
        if n % 2 == 0:  # the busiest reviewer labels the head of its queue
            record, reviewer = head[(n // 2) % len(head)], busiest
        else:  # the others anywhere in theirs
            record, reviewer = rng.choice(queued), rng.choice(REVIEWERS[1:])
        label = "biased" if (record.score or 0) >= rng.uniform(0.3, 0.8) else "unbiased"
        opinions = '[{"index":0,"biased":true,"categories":["gender"]}]' if n % 4 == 0 else None
        rows.append((record.run_id, reviewer, record.key_name, label, opinions, None, end - n))
        if n % 10 == 0:  # labelled again later: the later one counts
            rows.append((record.run_id, reviewer, record.key_name, "biased", None, "again", end))
    dialect = Reviews(store).dialect
    for start in range(0, len(rows), 500):
        chunk = rows[start : start + 500]
        places = ", ".join(f"({dialect.params(7, first=7 * i + 1)})" for i in range(len(chunk)))
        await store.insert(
            "INSERT INTO reviews (run_id, reviewer, key_name, label, opinions, note, created_at)"
            f" VALUES {places} RETURNING id",
            [value for row in chunk for value in row],
        )
    # The planner's statistics, as autovacuum (PostgreSQL) or a long-running store keeps
    # them; without them the planner guesses the tables' sizes.
    await store.insert("ANALYZE", [])


async def _time(call: Callable[[], Awaitable[Any]], runs: int) -> tuple[float, float, Any]:
    for _ in range(2):
        answer = await call()
    taken = []
    for _ in range(runs):
        started = time.perf_counter()
        answer = await call()
        taken.append(time.perf_counter() - started)
    taken.sort()
    return taken[math.ceil(0.5 * runs) - 1], taken[math.ceil(0.95 * runs) - 1], answer


async def _cases(store: Store, runs: int, end: float) -> list[tuple[str, float, float, str, float]]:
    reviews = Reviews(store)
    own = KEYS[0]

    async def figures(key: str | None) -> dict[str, Any]:
        found = await reviews.reviewed(since=0, until=end + 1, key=key)
        return agreement(found, scale=1.0, precision=0.9, category=None)

    cases: list[tuple[str, Callable[[], Awaitable[Any]], float, Callable[[Any], str]]] = [
        ("queue, every key (admin), 20", lambda: reviews.queue(REVIEWERS[0], key=None, limit=20),
         QUEUE_TARGET, lambda found: f"{len(found)} records"),
        (f"queue, one key ({own}), 20", lambda: reviews.queue(REVIEWERS[0], key=own, limit=20),
         QUEUE_TARGET, lambda found: f"{len(found)} records"),
        ("agreement, every review", lambda: figures(None), AGREEMENT_TARGET,
         lambda found: f"{found['reviewed']} current reviews, kappa {found['judge']['kappa']}"),
        (f"agreement, one key ({own})", lambda: figures(own), AGREEMENT_TARGET,
         lambda found: f"{found['reviewed']} current reviews"),
    ]  # fmt: skip
    timed = []
    for name, call, target, said in cases:
        p50, p95, answer = await _time(call, runs)
        timed.append((name, p50, p95, said(answer), target))
    return timed


async def _engine(store: Store, records: list[ScoreRecord], args: Any, end: float) -> Any:
    await store.open()
    try:
        started = time.monotonic()
        await _seed(store, records, args.reviews, end)
        seeded = time.monotonic() - started
        return seeded, await _cases(store, args.runs, end)
    finally:
        await store.close()


def run(args: Any) -> str:
    end = time.time()
    records = _records(args.records, end, random.Random(1))
    queued = sum(1 for record in records if record.review_rank is not None)
    lines = [
        f"# Review queue and agreement, {datetime.date.today().isoformat()}",
        "",
        f"`python -m bench reviews --records {args.records} --reviews {args.reviews}"
        f" --runs {args.runs}`: {args.records:,} records ({queued:,} for review),"
        f" {args.reviews:,} reviews (and a tenth again); p50 and p95 of {args.runs} calls.",
        f"{os.cpu_count()} cores ({cpu_model()}), {platform.system()} {platform.release()},"
        f" Python {platform.python_version()}; a shared machine (other work beside it);"
        f" load average at the start {' '.join(f'{x:.2f}' for x in os.getloadavg())}.",
        "",
        "| engine | case | p50 ms | p95 ms | target | answer |",
        "|---|---|---:|---:|---|---|",
    ]
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-reviews-")))
        stores: list[tuple[str, Callable[[], Store]]] = []
        if args.only in (None, "sqlite"):
            stores.append(("sqlite", lambda: SQLiteStore(folder / "scores.db")))
        if args.only in (None, "postgresql"):

            def postgres() -> Store:
                cluster = start_cluster(pg_bin())
                stack.callback(cluster.stop)
                return PostgresStore(cluster.url(cluster.create_database("reviews")))

            stores.append(("postgresql", postgres))
        for engine, make in stores:
            print(f"{engine}: seeding and timing", file=sys.stderr)
            seeded, cases = asyncio.run(_engine(make(), records, args, end))
            for name, p50, p95, said, target in cases:
                met = "met" if p50 < target else "MISSED"
                lines.append(
                    f"| {engine} (seeded in {seeded:.0f} s) | {name} | {p50 * 1000:.1f}"
                    f" | {p95 * 1000:.1f} | < {target * 1000:.0f} ms: {met} | {said} |"
                )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench reviews",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--records", type=int, default=100_000, help="records (100,000)")
    parser.add_argument("--reviews", type=int, default=10_000, help="reviews (10,000)")
    parser.add_argument("--runs", type=int, default=20, help="timed calls a case (20)")
    parser.add_argument("--only", choices=("sqlite", "postgresql"), help="one engine only")
    parser.add_argument("--out", type=Path, help="where to write the results")
    args = parser.parse_args(argv)
    report = run(args)
    out = args.out or ROOT / "bench" / "results" / f"reviews-{datetime.date.today()}.md"
    out.write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
