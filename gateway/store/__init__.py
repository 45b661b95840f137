"""The score store: one interface (`Store`), two engines.

- `SQLiteStore`: an embedded file in WAL mode, the default (`store.path`).
- `PostgresStore`: a shared PostgreSQL database (`store.url`), for several
  gateways and scorers on any host.

`open_store(settings.store)` picks the engine; what sets the engines apart is
said by `Store.shared` and `Store.notifies`, not by their names. Both speak
the SQL of one place (`gateway.store.dialect`) and commit through one writer
(`gateway.store.writer`); schemas are versioned migrations
(`gateway.store.migrations`) run when a store opens, or by `bias-gateway migrate`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gateway.config import StoreSettings
from gateway.store.base import Store
from gateway.store.outage import Backlog
from gateway.store.postgres import PostgresStore, redacted_url
from gateway.store.records import FINAL_STATUSES, CacheEntry, ScoreRecord, Status, StoreError
from gateway.store.sqlite import SQLiteStore
from gateway.store.writer import DroppedHook

__all__ = [
    "FINAL_STATUSES",
    "Backlog",
    "CacheEntry",
    "PostgresStore",
    "SQLiteStore",
    "ScoreRecord",
    "Status",
    "Store",
    "StoreError",
    "open_store",
    "redacted_url",
]


def open_store(
    settings: StoreSettings,
    *,
    clock: Callable[[], float] = time.time,
    on_dropped: DroppedHook | None = None,
) -> Store:
    """The store `settings` ask for (not yet opened): PostgreSQL when `url` is set.
    Leases are taken and lapse on `clock` (wall-clock seconds); `on_dropped(reason,
    count)` hears of every record the writer could not store."""
    buffer = settings.buffer_records
    if settings.url is not None:
        url = settings.url.get_secret_value()
        return PostgresStore(url, clock=clock, buffer_records=buffer, on_dropped=on_dropped)
    return SQLiteStore(settings.path, clock=clock, buffer_records=buffer, on_dropped=on_dropped)
