"""What the store's writer holds while the database is away, and what it could not
keep: the bounded buffer's counts (`Outage`) and a snapshot of them (`Backlog`)
for `/readyz` and the metrics. The writer calls it under its lock."""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field

from gateway.store.records import CacheEntry, ScoreRecord

__all__ = ["Backlog", "Outage"]

logger = logging.getLogger("gateway.store")

# Fill levels of the buffer that are logged once per outage, as shares of the bound.
_WARN_AT = (0.5, 0.9)


@dataclass(frozen=True, slots=True)
class Backlog:
    """The writer's state at one moment."""

    limit: int  # store.buffer_records
    held: int  # records and cache entries submitted and not yet stored
    down_for: float | None  # seconds the database has been away, if it is
    error: str | None  # the last failure of the outage
    dropped: dict[str, int] = field(default_factory=dict)  # records not stored, by reason
    entries_skipped: int = 0  # cache entries let go while the database was away

    def public(self) -> dict[str, object]:
        """For `/readyz`: counts and the outage, never a record's content."""
        shown: dict[str, object] = {"buffered": self.held, "buffer_records": self.limit}
        if self.down_for is not None:
            shown["down_for_seconds"] = round(self.down_for, 1)
        if self.dropped:
            shown["dropped"] = dict(self.dropped)
        return shown


class Outage:
    """The buffer's counts; `begin` and `end` bracket the time the database is away."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self.entries_skipped = 0
        self.dropped: Counter[str] = Counter()
        self._since: float | None = None  # time.monotonic() when it went away
        self._error: str | None = None
        self._warned = 0  # how many of _WARN_AT were logged in this outage
        self._refused = 0  # records refused in this outage (or this burst)

    @property
    def down(self) -> bool:
        return self._since is not None

    def full(self) -> bool:
        return self.held >= self.limit

    def hold(self) -> None:
        self.held += 1
        if self._warned < len(_WARN_AT) and self.held >= self.limit * _WARN_AT[self._warned]:
            self._warned += 1
            logger.warning(
                "score store buffer is %d%% full: %d of %d records wait%s",
                round(100 * self.held / self.limit),
                self.held,
                self.limit,
                " for the store to come back" if self.down else "",
            )

    def release(self, count: int) -> None:
        """`count` items left the buffer, stored or not."""
        self.held -= count
        if self.held == 0 and not self.down and (self._warned or self._refused):
            if self._refused:
                logger.warning(
                    "score store buffer drained; %d records were dropped while it was full",
                    self._refused,
                )
            self._warned = self._refused = 0

    def refuse(self, item: ScoreRecord | CacheEntry) -> str | None:
        """An item submitted with the buffer full: the reason a record is dropped, or
        None for a cache entry (not a record; the process's own cache keeps it)."""
        if isinstance(item, CacheEntry):
            self.entries_skipped += 1
            return None
        if self._refused == 0:
            logger.error(
                "score store buffer is full (store.buffer_records = %d): new records are "
                "dropped and counted until it drains (run_id %s is the first)",
                self.limit,
                item.run_id,
            )
        self._refused += 1
        return "buffer_full"

    def begin(self, exc: BaseException) -> bool:
        """The database failed a commit as an outage does; True if it just went away."""
        self._error = f"{type(exc).__name__}: {exc}"
        if self._since is not None:
            return False
        self._since = time.monotonic()
        logger.warning(
            "score store unavailable (%s): holding records until it is back, up to %d "
            "(store.buffer_records)",
            self._error,
            self.limit,
        )
        return True

    def end(self) -> None:
        """A commit went through again."""
        if self._since is None:
            return
        logger.warning(
            "score store is back after %.1f s: writing the %d records held; %d dropped "
            "with the buffer full",
            time.monotonic() - self._since,
            self.held,
            self._refused,
        )
        self._since, self._error = None, None
        self._warned = self._refused = 0

    def count(self, reason: str, count: int) -> None:
        self.dropped[reason] += count

    def backlog(self) -> Backlog:
        down_for = None if self._since is None else time.monotonic() - self._since
        return Backlog(
            self.limit, self.held, down_for, self._error, dict(self.dropped), self.entries_skipped
        )
