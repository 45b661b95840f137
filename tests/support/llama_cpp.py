"""What llama.cpp's OpenAI-compatible servers send, byte for byte, captured from them.

`SHAPES[server]` holds the answers to `REQUESTS` from a server `scripts/real-model`
runs (serving SmolLM2-135M-Instruct), as `capture` took them, kept in llama_cpp.json
beside this file: streamed and whole chat completions, the usage chunk, legacy
Completions, keep-alive comments, and error answers. The normal gate replays them
through the fake upstream and judge (tests/gateway/proxy/test_llama_cpp.py), so the
gateway's handling of each way they differ from the fake's own answers is checked on
every run without the model; the real-model tier checks that the server still answers
in these shapes (tests/real_model/test_shapes.py).

`chat_stream_keepalive` was taken from llama.cpp's server started with its SSE ping
interval at 1 s (`sse_ping_interval`; 30 s by default), so that the comments it sends
while the prompt is read show up in a short answer. Recapture the rest, with a server
from `scripts/real-model serve`:

    python -m tests.support.llama_cpp http://127.0.0.1:PORT/v1 > calls.json
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

MODEL = "smollm2-135m"
SAY = [{"role": "user", "content": "Describe engineers in one sentence."}]
SCHEMA = {
    "type": "object",
    "properties": {"opinions": {"type": "array", "items": {"type": "string"}}},
    "required": ["opinions"],
}


@dataclass(frozen=True)
class Call:
    """One capture: the request sent and the status and body bytes the server answered."""

    path: str
    body: dict[str, Any] | str  # a str is sent as it is (a malformed body)
    status: int = 0
    answer: bytes = b""


# The requests captured: each names what it shows.
REQUESTS: dict[str, Call] = {
    "chat_stream_usage": Call(
        "/chat/completions",
        {
            "model": MODEL,
            "messages": SAY,
            "max_tokens": 6,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ),
    "chat_stream": Call(
        "/chat/completions", {"model": MODEL, "messages": SAY, "max_tokens": 6, "stream": True}
    ),
    "chat": Call("/chat/completions", {"model": MODEL, "messages": SAY, "max_tokens": 6}),
    "completions_stream": Call(
        "/completions",
        {"model": MODEL, "prompt": "Engineers are", "max_tokens": 6, "stream": True},
    ),
    "completions": Call(
        "/completions", {"model": MODEL, "prompt": "Engineers are", "max_tokens": 6}
    ),
    "json_schema": Call(
        "/chat/completions",
        {
            "model": MODEL,
            "messages": SAY,
            "max_tokens": 6,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "opinions", "schema": SCHEMA, "strict": True},
            },
        },
    ),
    "json_object_schema": Call(
        "/chat/completions",
        {
            "model": MODEL,
            "messages": SAY,
            "max_tokens": 24,
            "response_format": {"type": "json_object", "schema": SCHEMA},
        },
    ),
    "past_context": Call(
        "/chat/completions",
        {
            "model": MODEL,
            "max_tokens": 6,
            # Past a slot's context (scripts/real-model's CONTEXT_TOKENS) by half again.
            "messages": [{"role": "user", "content": "engineers " * 12000}],
        },
    ),
    "malformed_body": Call("/chat/completions", "{not json"),
}


def capture(base_url: str, names: list[str] | None = None) -> dict[str, Call]:
    """Send each request in `REQUESTS` (or those in `names`) to `base_url`; the answers.

    Each on a connection of its own: llama.cpp's server may close a kept-alive
    connection after an answer, and a request sent on it then gets none.
    """
    answers: dict[str, Call] = {}
    for name, call in REQUESTS.items():
        if names is not None and name not in names:
            continue
        content = call.body if isinstance(call.body, str) else json.dumps(call.body)
        headers = {"content-type": "application/json"}
        with httpx.Client(base_url=base_url, timeout=600) as client:
            response = client.post(call.path, content=content, headers=headers)
        answers[name] = Call(call.path, call.body, response.status_code, response.read())
    return answers


@dataclass(frozen=True)
class Captured:
    """One server's answers to `REQUESTS`, by request name, and the package it came from."""

    package: str
    calls: dict[str, Call]


def _load() -> dict[str, Captured]:
    recorded = json.loads((Path(__file__).parent / "llama_cpp.json").read_text())
    shapes = {}
    for server, taken in recorded.items():
        calls = {}
        for name, answer in taken["calls"].items():
            asked = REQUESTS.get(name, Call("/chat/completions", {}))
            calls[name] = Call(asked.path, asked.body, answer["status"], answer["answer"].encode())
        shapes[server] = Captured(taken["package"], calls)
    return shapes


SHAPES = _load()


def frames(answer: bytes) -> list[bytes]:
    """An event stream's frames, each with the blank line that ends it, as sent."""
    separator = b"\r\n\r\n" if b"\r\n\r\n" in answer else b"\n\n"
    pieces = answer.split(separator)
    return [piece + separator for piece in pieces if piece]


def main() -> None:
    answers = capture(sys.argv[1])
    json.dump(
        {
            name: {"status": call.status, "answer": call.answer.decode()}
            for name, call in answers.items()
        },
        sys.stdout,
        indent=1,
    )


if __name__ == "__main__":
    main()
