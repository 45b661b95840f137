"""JSON decoding on the hot path: orjson's speed with the standard library's answers.

orjson parses a chat body several times faster than `json.loads`, but it
refuses `NaN`/`Infinity`, which `json.loads` accepts.
Falling back to `json.loads` whenever orjson refuses keeps the standard
library's accepted inputs and error messages; the fallback only runs on input
that orjson rejects.

Nesting deeper than either parser takes (orjson stops at 1,024 levels; the
standard library's C scanner at the interpreter's recursion limit) is a
`ValueError` like any other bad JSON, never a `RecursionError`.

One difference stays: orjson reads an integer wider than 64 bits as a float.
The values read here are only inspected; a body that is sent on re-encoded is
parsed with `json` (see `SurfaceRequest.upstream_body`).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["loads", "with_field"]


def loads(data: bytes | str) -> Any:
    """`json.loads(data)` through orjson when it can (wide integers become floats).

    Raises `ValueError`, with the standard library's message, on bad JSON.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            return json.loads(data)
        except RecursionError:
            raise ValueError("JSON is nested too deeply") from None


def with_field(data: bytes, name: str, value: Any) -> bytes:
    """The JSON object `data` with its top-level `name` set to `value`, re-encoded.

    The standard library both ways, so integers wider than 64 bits stay exact.
    Raises `ValueError` for bad JSON or nesting too deep to re-encode.
    """
    try:
        return json.dumps({**json.loads(data), name: value}).encode()
    except RecursionError:
        raise ValueError("JSON is nested too deeply") from None
