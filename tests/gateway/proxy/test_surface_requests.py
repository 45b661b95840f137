"""Each surface adapter parsing a request body: the model and `stream` read, and a bad
body refused naming its field. Pure code: no gateway, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from gateway.errors import BadRequest
from gateway.proxy.surfaces import SURFACES, Surface
from tests.support.surface_samples import (
    CHAT,
    CLAUDE_MODEL,
    COMPLETIONS,
    INSTRUCT_MODEL,
    MESSAGES,
    RESPONSES,
)

# -- parsing requests -------------------------------------------------------------------

MISSING = object()

VALID_BODIES: dict[str, tuple[Surface, dict[str, Any]]] = {
    "chat": (CHAT, {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}),
    "completions": (COMPLETIONS, {"model": INSTRUCT_MODEL, "prompt": "Say hi"}),
    "responses": (RESPONSES, {"model": "gpt-4o", "input": "Tell me a story."}),
    "messages": (
        MESSAGES,
        {
            "model": CLAUDE_MODEL,
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": "Hello, Claude"}],
        },
    ),
}


def changed(body: Mapping[str, Any], **changes: Any) -> bytes:
    """`body` with fields set (or, for MISSING, removed), as JSON bytes."""
    new = {key: value for key, value in body.items() if changes.get(key) is not MISSING}
    new.update({key: value for key, value in changes.items() if value is not MISSING})
    return json.dumps(new).encode()


@pytest.mark.parametrize(
    ("surface", "fields", "model", "stream"),
    [
        (CHAT, {}, "gpt-4o-mini", False),
        (CHAT, {"stream": True}, "gpt-4o-mini", True),
        (CHAT, {"stream": False}, "gpt-4o-mini", False),
        (CHAT, {"stream": None}, "gpt-4o-mini", False),
        (CHAT, {"n": 3, "stream": True}, "gpt-4o-mini", True),
        (CHAT, {"n": None}, "gpt-4o-mini", False),
        (CHAT, {"model": "my-org/llama-3.1:8b"}, "my-org/llama-3.1:8b", False),
        # A surrogate *pair*, escaped as JSON does, is one valid character.
        (CHAT, {"model": "gpt-\U0001f600"}, "gpt-\U0001f600", False),
        (CHAT, {"messages": [{"role": "system", "content": "x"}, {}]}, "gpt-4o-mini", False),
        (COMPLETIONS, {}, INSTRUCT_MODEL, False),
        (COMPLETIONS, {"stream": True}, INSTRUCT_MODEL, True),
        (COMPLETIONS, {"prompt": ["one", "two"], "n": 2}, INSTRUCT_MODEL, False),
        (COMPLETIONS, {"prompt": [[1, 2, 3]]}, INSTRUCT_MODEL, False),  # token ids
        (COMPLETIONS, {"prompt": ""}, INSTRUCT_MODEL, False),
        (RESPONSES, {}, "gpt-4o", False),
        (RESPONSES, {"stream": True}, "gpt-4o", True),
        (RESPONSES, {"input": [{"role": "user", "content": "Hi"}]}, "gpt-4o", False),
        (RESPONSES, {"input": MISSING, "previous_response_id": "resp_1"}, "gpt-4o", False),
        (RESPONSES, {"background": False, "stream": True}, "gpt-4o", True),
        (RESPONSES, {"n": "ignored"}, "gpt-4o", False),  # Responses has no `n`
        (MESSAGES, {}, CLAUDE_MODEL, False),
        (MESSAGES, {"stream": True}, CLAUDE_MODEL, True),
        (MESSAGES, {"system": "Be brief.", "stream": False}, CLAUDE_MODEL, False),
    ],
    ids=lambda value: value.name if isinstance(value, Surface) else None,
)
def test_parse_reads_model_and_stream(
    surface: Surface, fields: dict[str, Any], model: str, stream: bool
) -> None:
    base = next(body for s, body in VALID_BODIES.values() if s is surface)
    raw = changed(base, **fields)

    request = surface.parse(raw)

    assert (request.model, request.stream) == (model, stream)
    assert request.body == json.loads(raw)
    assert request.raw is raw


BAD_FOR_EVERY_SURFACE: list[tuple[dict[str, Any], str]] = [
    ({"model": MISSING}, "model"),
    ({"model": ""}, "model"),
    ({"model": None}, "model"),
    ({"model": 42}, "model"),
    ({"model": True}, "model"),
    ({"model": ["gpt-4o"]}, "model"),
    ({"model": {"name": "gpt-4o"}}, "model"),
    # json.dumps escapes these lone surrogates as `\ud800`, valid JSON but not valid text.
    ({"model": "\ud800"}, "model"),
    ({"model": "gpt-4o\udfff"}, "model"),
    ({"stream": "true"}, "stream"),
    ({"stream": 1}, "stream"),
    ({"stream": 0}, "stream"),
    ({"stream": []}, "stream"),
    ({"stream": {"include_usage": True}}, "stream"),
]
BAD_FOR_SURFACE: dict[str, list[tuple[dict[str, Any], str]]] = {
    "chat": [
        ({"n": 0}, "n"),
        ({"n": -1}, "n"),
        ({"n": 1.5}, "n"),
        ({"n": "2"}, "n"),
        ({"n": True}, "n"),
        ({"messages": MISSING}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": None}, "messages"),
        ({"messages": "Hi"}, "messages"),
        ({"messages": {"role": "user", "content": "Hi"}}, "messages"),
        ({"messages": ["Hi"]}, "messages"),
        ({"messages": [{"role": "user", "content": "Hi"}, None]}, "messages"),
        ({"messages": [[{"role": "user"}]]}, "messages"),
    ],
    "completions": [
        ({"n": 0}, "n"),
        ({"n": 2.0}, "n"),
        ({"n": False}, "n"),
        ({"prompt": MISSING}, "prompt"),
        ({"prompt": None}, "prompt"),
        ({"prompt": 42}, "prompt"),
        ({"prompt": {"text": "Hi"}}, "prompt"),
        ({"prompt": []}, "prompt"),
    ],
    "responses": [
        ({"input": 42}, "input"),
        ({"input": None}, "input"),
        ({"input": {"role": "user", "content": "Hi"}}, "input"),
        ({"input": True}, "input"),
        ({"background": True}, "background"),
        ({"background": True, "stream": True}, "background"),
    ],
    "messages": [
        ({"messages": MISSING}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": "Hello"}, "messages"),
        ({"messages": {"role": "user"}}, "messages"),
        ({"messages": [{"role": "user", "content": "Hi"}, "Hi"]}, "messages"),
        ({"messages": [1]}, "messages"),
    ],
}
BAD_FIELD_CASES = [
    pytest.param(name, fields, param, id=f"{name}-{param}-{index}")
    for name in VALID_BODIES
    for index, (fields, param) in enumerate(BAD_FOR_EVERY_SURFACE + BAD_FOR_SURFACE[name])
]


@pytest.mark.parametrize(("name", "fields", "param"), BAD_FIELD_CASES)
def test_parse_names_the_bad_field(name: str, fields: dict[str, Any], param: str) -> None:
    surface, base = VALID_BODIES[name]

    with pytest.raises(BadRequest) as caught:
        surface.parse(changed(base, **fields))

    assert caught.value.param == param
    assert f"`{param}" in caught.value.message


@pytest.mark.parametrize("name", list(VALID_BODIES))
@pytest.mark.parametrize(
    "model_json", [b'"\\ud800"', b'"\\udc00x"', b'"gpt-4o\\udbff"'], ids=["high", "low", "tail"]
)
def test_parse_refuses_a_lone_surrogate_escaped_in_the_raw_json(
    name: str, model_json: bytes
) -> None:
    surface, base = VALID_BODIES[name]
    rest = json.dumps({k: v for k, v in base.items() if k != "model"}).encode()
    raw = b'{"model": ' + model_json + b", " + rest[1:]
    with pytest.raises(UnicodeEncodeError):  # valid JSON, but no valid text
        json.loads(raw)["model"].encode()

    with pytest.raises(BadRequest) as caught:
        surface.parse(raw)

    assert caught.value.param == "model"


@pytest.mark.parametrize("surface", SURFACES, ids=lambda surface: surface.name)
@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"", "not valid JSON"),
        (b"not json", "not valid JSON"),
        (b'{"model": "gpt-4o",', "not valid JSON"),
        (b"\xff\xfe{}", "not valid JSON"),
        (b"{'model': 'gpt-4o'}", "not valid JSON"),
        (b"[]", "must be a JSON object"),
        (b'[{"model": "gpt-4o"}]', "must be a JSON object"),
        (b'"gpt-4o"', "must be a JSON object"),
        (b"42", "must be a JSON object"),
        (b"null", "must be a JSON object"),
        (b"true", "must be a JSON object"),
    ],
)
def test_parse_refuses_a_body_that_is_not_a_json_object(
    surface: Surface, raw: bytes, problem: str
) -> None:
    with pytest.raises(BadRequest) as caught:
        surface.parse(raw)

    assert caught.value.param is None
    assert problem in caught.value.message
