"""The server still answers in the shapes the normal gate replays (tests/support/llama_cpp.py).

The texts differ from run to run; the statuses, the framing of streams, the fields of
each event and the error bodies' fields must not.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.llama_cpp import REQUESTS, SHAPES, capture, frames
from tests.support.real_model import RealServer

pytestmark = pytest.mark.real_model  # left out of the gate: scripts/test --real-model

# The keep-alive capture needs the server started with a 1 s ping interval.
NAMES = [name for name in REQUESTS if name != "chat_stream_keepalive"]


def outline(value: Any) -> Any:
    """The shape of a JSON value: its object keys, nested, with lists by their items'."""
    if isinstance(value, dict):
        return {key: outline(item) for key, item in sorted(value.items()) if key != "timings"}
    if isinstance(value, list):
        return sorted({json.dumps(outline(item), sort_keys=True) for item in value})
    return type(value).__name__


def answer_outline(answer: bytes) -> Any:
    if answer.startswith((b"data:", b":")):
        events = []
        for frame in frames(answer):
            text = frame.decode().strip()
            events.append(
                text
                if not text.startswith("data: {")
                else outline(json.loads(text.removeprefix("data: ")))
            )
        return events
    return outline(json.loads(answer))


@pytest.fixture(scope="module")
def live(real_server: RealServer) -> dict[str, Any]:
    return capture(real_server.url, NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_server_answers_as_captured(
    real_server: RealServer, live: dict[str, Any], name: str
) -> None:
    recorded = SHAPES[real_server.server].calls[name]
    now = live[name]
    assert now.status == recorded.status
    if name.endswith("_stream") or name == "chat_stream_usage":
        # The number of text pieces varies with the text; the kinds of event do not.
        assert set(map(str, answer_outline(now.answer))) == set(
            map(str, answer_outline(recorded.answer))
        )
    else:
        assert answer_outline(now.answer) == answer_outline(recorded.answer)
