"""When PostgreSQL is away rather than refusing a statement: the store's writer holds
its batch and tries again (`gateway.store.writer`), and a read answers 503."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from gateway.store.records import StoreError

__all__ = ["is_outage", "reading"]


def is_outage(exc: BaseException) -> bool:
    """The database is away, not the batch at fault: the connection broke or was never
    made (08xxx, OSError, asyncpg's interface errors), the server stops or restarts
    (57xxx), it is out of room or connections (53xxx), refuses connections to the
    database (55000) or the login (28xxx), is read-only after a failover (25006),
    rolled back a conflict (40xxx), or did not answer in time."""
    import asyncpg

    return isinstance(
        exc,
        OSError
        | TimeoutError
        | asyncpg.InterfaceError
        | asyncpg.InternalClientError
        | asyncpg.PostgresConnectionError
        | asyncpg.OperatorInterventionError
        | asyncpg.InsufficientResourcesError
        | asyncpg.ObjectNotInPrerequisiteStateError
        | asyncpg.InvalidAuthorizationSpecificationError
        | asyncpg.ReadOnlySQLTransactionError
        | asyncpg.TransactionRollbackError,
    )


@contextlib.asynccontextmanager
async def reading(where: str) -> AsyncIterator[None]:
    """A read on a database that is away raises `StoreError` (answered 503), not the
    driver's own error."""
    try:
        yield
    except Exception as exc:
        if is_outage(exc):
            raise StoreError(f"score store {where} does not answer: {exc}") from exc
        raise
