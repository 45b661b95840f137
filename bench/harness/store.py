"""What a gateway's SQLite score store holds, read-only, while a scenario waits on it."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["get_json", "store_rows", "wait_settled"]


def store_rows(store: Path) -> list[dict[str, Any]]:
    if not store.exists():
        return []
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            "SELECT run_id, status, status_reason, reason_status, judge_calls, judge_tokens,"
            " created_at, updated_at FROM scores"
        ).fetchall()
    finally:
        conn.close()
    return [dict(row) for row in rows]


def wait_settled(store: Path, timeout: float) -> float | None:
    """Seconds until no record is pending and no explanation is pending; None on timeout."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        with contextlib.suppress(sqlite3.OperationalError):
            rows = store_rows(store)
            if not any(
                row["status"] == "pending" or row["reason_status"] == "pending" for row in rows
            ):
                return round(time.monotonic() - started, 2)
        time.sleep(0.25)
    return None


def get_json(url: str) -> dict[str, Any]:
    """GET `url`'s JSON (a fake's `/bench/stats`, a gateway's read API)."""
    with urllib.request.urlopen(url, timeout=10) as response:
        data: dict[str, Any] = json.loads(response.read())
    return data
