"""The JSON schemas of judge calls, fitted to the call (the fixed ones are in prompts)."""

from __future__ import annotations

import copy

from guard.bias.prompts import ANALYZE_SCHEMA
from guard.wire import OutputSchema

__all__ = ["analyze_schema"]


def analyze_schema(count: int) -> OutputSchema:
    """`ANALYZE_SCHEMA` asking for exactly `count` verdicts, one per opinion judged.

    A server that constrains its output to the schema (llama.cpp's) then closes the list
    after the last opinion: a small model held to the open list can repeat verdicts until
    its answer is cut, and a cut answer is no JSON at all.
    """
    schema = copy.deepcopy(ANALYZE_SCHEMA.schema)
    schema["properties"]["results"].update(minItems=count, maxItems=count)
    return OutputSchema(ANALYZE_SCHEMA.name, schema)
