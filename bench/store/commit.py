"""CPU spent storing score records, with and without group commit.

    .venv/bin/python -m bench store_commit

Submits records at a steady 2,000/s (one at a time, as the gateway does) and
reports the process CPU time per record. This is the measurement behind the
score store's 5 ms linger.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from gateway.store import ScoreRecord, SQLiteStore

RECORDS = 6000
RATE = 2000.0


async def run(linger: float | None, folder: Path) -> float:
    """CPU microseconds per record; `linger=None` paces the loop without storing (baseline)."""
    store = SQLiteStore(folder / f"linger-{linger}.db", linger=linger or 0.0)
    await store.open()
    result = {"runId": "x", "analyzeStepResult": {"results": [{"result": "no", "reason": "r"}]}}
    cpu = time.process_time()
    started = time.perf_counter()
    for index in range(RECORDS):
        if linger is not None:
            record = ScoreRecord(
                run_id=f"run-{index}",
                status="scored",
                created_at=time.time(),
                score=0.0,
                result=result,
            )
            store.submit(record)
        # Pace the submissions like live traffic.
        delay = started + (index + 1) / RATE - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
    await store.flush()
    spent = time.process_time() - cpu
    await store.close()
    return spent / RECORDS * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench store_commit", description=__doc__)
    parser.parse_args(argv)  # no options: it answers --help and refuses unknown arguments
    with tempfile.TemporaryDirectory() as folder:
        baseline = asyncio.run(run(None, Path(folder)))
        print(f"pacing alone: {baseline:6.1f} us CPU per record (subtracted below)")
        for linger in (0.0, 0.005):
            microseconds = asyncio.run(run(linger, Path(folder))) - baseline
            print(f"linger {linger * 1000:3.0f} ms: {microseconds:6.1f} us CPU per record")


if __name__ == "__main__":
    main()
