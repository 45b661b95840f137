"""What a soak run left behind: its store's records once they settle, and the gateway's log."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

__all__ = ["log_summary", "settle", "store_counts"]


def store_counts(store: Path) -> dict[str, Any]:
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        statuses = dict(
            conn.execute(
                "SELECT status || coalesce(':' || status_reason, ''), count(*) FROM scores"
                " GROUP BY 1"
            ).fetchall()
        )
        reasons_pending = conn.execute(
            "SELECT count(*) FROM scores WHERE reason_status = 'pending'"
        ).fetchone()[0]
        run_ids = {row[0] for row in conn.execute("SELECT run_id FROM scores")}
    finally:
        conn.close()
    return {"statuses": statuses, "reasons_pending": reasons_pending, "run_ids": run_ids}


def settle(store: Path, timeout: float) -> tuple[float | None, dict[str, Any]]:
    """Seconds until no record nor explanation is pending (None: not within `timeout`)."""
    started = time.monotonic()
    while True:
        counts = store_counts(store)
        pending = sum(n for label, n in counts["statuses"].items() if label.startswith("pending"))
        if not pending and not counts["reasons_pending"]:
            return round(time.monotonic() - started, 2), counts
        if time.monotonic() - started > timeout:
            return None, counts
        time.sleep(0.5)


def log_summary(path: Path) -> dict[str, Any]:
    """Warnings and errors in the gateway's log (JSON lines), counted by message; other
    lines (uvicorn's own, tracebacks) by their first words."""
    counts: dict[str, int] = {}
    tracebacks = 0
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("Traceback"):
            tracebacks += 1
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            entry = None
        if isinstance(entry, dict):
            level = str(entry.get("level", ""))
            if level not in ("warning", "error", "critical"):
                continue
            key = f"{level}: {entry.get('event')}"
        elif re.match(r"(WARNING|ERROR|CRITICAL):", line):
            key = " ".join(line.split()[:6])
        else:
            continue
        counts[key] = counts.get(key, 0) + 1
    ordered = dict(sorted(counts.items(), key=lambda item: -item[1]))
    return {"messages": ordered, "tracebacks": tracebacks}
