"""Awaitables a test hands to code that awaits something, when there is nothing to wait for."""

from __future__ import annotations

from typing import TypeVar

__all__ = ["ready"]

T = TypeVar("T")


async def ready(value: T) -> T:
    """`value`, at once: e.g. a run for a cache, `cache.get_or_run(key, lambda: ready(result))`."""
    return value
