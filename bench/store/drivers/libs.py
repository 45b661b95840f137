"""The two drivers under comparison: an install of their own, not the project's."""

from __future__ import annotations

try:
    import asyncpg
    import psycopg
    import psycopg_pool
except ImportError as exc:  # pragma: no cover - a setup step, not a code path
    raise SystemExit(
        f"{exc}: install the drivers first: .venv/bin/pip install asyncpg 'psycopg[binary,pool]'"
    ) from exc

__all__ = ["asyncpg", "psycopg", "psycopg_pool"]
