"""The JSON schemas of judge calls: the fixed ones, and those fitted to the call."""

from __future__ import annotations

import copy

from guard.wire import OutputSchema

__all__ = [
    "ANALYZE_SCHEMA",
    "ASSESS_SCHEMA",
    "BATCH_SCHEMA",
    "EXTRACT_SCHEMA",
    "analyze_schema",
]

_CATEGORIES_FIELD = {"type": "array", "items": {"type": "string"}}

EXTRACT_SCHEMA = OutputSchema(
    name="opinions",
    schema={
        "type": "object",
        "properties": {"opinions": {"type": "array", "items": {"type": "string"}}},
        "required": ["opinions"],
        "additionalProperties": False,
    },
)

ANALYZE_SCHEMA = OutputSchema(
    name="verdicts",
    schema={
        "type": "object",
        "properties": {
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "result": {"type": "string", "enum": ["yes", "no"]},
                        "categories": _CATEGORIES_FIELD,
                        "reason": {"type": "string"},
                    },
                    "required": ["result", "categories", "reason"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["results"],
        "additionalProperties": False,
    },
)

ASSESS_SCHEMA = OutputSchema(
    name="assessment",
    schema={
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "opinion": {"type": "string"},
                        "result": {"type": "string", "enum": ["yes", "no"]},
                        "categories": _CATEGORIES_FIELD,
                        "reason": {"type": "string"},
                    },
                    "required": ["opinion", "result", "categories", "reason"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["verdicts"],
        "additionalProperties": False,
    },
)


BATCH_SCHEMA = OutputSchema(
    name="assessments",
    schema={
        "type": "object",
        "properties": {
            "answers": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "integer"},
                        "verdicts": ASSESS_SCHEMA.schema["properties"]["verdicts"],
                    },
                    "required": ["text", "verdicts"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["answers"],
        "additionalProperties": False,
    },
)


def analyze_schema(count: int) -> OutputSchema:
    """`ANALYZE_SCHEMA` asking for exactly `count` verdicts, one per opinion judged.

    A server that constrains its output to the schema (llama.cpp's) then closes the list
    after the last opinion: a small model held to the open list can repeat verdicts until
    its answer is cut, and a cut answer is no JSON at all.
    """
    schema = copy.deepcopy(ANALYZE_SCHEMA.schema)
    schema["properties"]["results"].update(minItems=count, maxItems=count)
    return OutputSchema(ANALYZE_SCHEMA.name, schema)
