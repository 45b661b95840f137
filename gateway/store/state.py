"""What a gateway last saw of things that outlive its process, kept by name in the
store's `gateway_state` table (migration 9), on either engine.

A value is JSON. `swap` changes one only if it still holds what the caller read, so of
several processes (workers, replicas on one PostgreSQL) that see the same change at
once, exactly one wins it: the one that then acts on it (`gateway.scoring.canary`).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from gateway.store.dialect import POSTGRES, SQLITE, Dialect
from gateway.store.queries import Params
from gateway.store.records import json_text

if TYPE_CHECKING:
    from gateway.store.base import Store

__all__ = ["CANARY", "JUDGE", "State"]

# The names kept: the judge last seen, and the report of the canary that checked it.
JUDGE, CANARY = "judge", "canary"


class State:
    """The named values kept in `store`."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.dialect: Dialect = POSTGRES if store.engine == POSTGRES.name else SQLITE

    async def get(self, name: str) -> Any | None:
        """The value kept under `name`, or None when there is none."""
        param = Params(self.dialect)
        sql = f"SELECT value FROM gateway_state WHERE name = {param(name)}"
        (rows,) = await self.store.query((sql, param.values))
        return json.loads(rows[0][0]) if rows else None

    async def swap(self, name: str, seen: Any | None, value: Any) -> bool:
        """Keep `value` under `name` if it still holds `seen` (None: nothing yet);
        True when this call made the change."""
        param = Params(self.dialect)
        if seen is None:
            sql = (
                "INSERT INTO gateway_state (name, value, updated_at) VALUES"
                f" ({param(name)}, {param(json_text(value))}, {param(time.time())})"
                " ON CONFLICT (name) DO NOTHING RETURNING name"
            )
        else:
            sql = (
                f"UPDATE gateway_state SET value = {param(json_text(value))},"
                f" updated_at = {param(time.time())}"
                f" WHERE name = {param(name)} AND value = {param(json_text(seen))} RETURNING name"
            )
        return bool(await self.store.insert(sql, param.values))

    async def put(self, name: str, value: Any) -> None:
        """Keep `value` under `name`, whatever it held."""
        param = Params(self.dialect)
        sql = (
            "INSERT INTO gateway_state (name, value, updated_at) VALUES"
            f" ({param(name)}, {param(json_text(value))}, {param(time.time())})"
            " ON CONFLICT (name) DO UPDATE SET value = excluded.value,"
            " updated_at = excluded.updated_at RETURNING name"
        )
        await self.store.insert(sql, param.values)
