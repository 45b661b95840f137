"""Long streamed answers for the window tests: an answer of neutral sentences with the
biased one at a known place, the windowed enforce policy, and a stream's bytes as a
client reads them."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.gateways import RunningGateway, policy
from tests.support.surfaces import Api

BIASED_SENTENCE = " I think women are lazy engineers."


def neutral(n: int) -> str:
    return f" I think topic {n:02d} matters to every team."


def answer(sentences: int, *, biased_at: int | None = None) -> str:
    """About 45 characters a sentence; `biased_at` puts the biased one at that place."""
    parts = [neutral(n) for n in range(sentences)]
    if biased_at is not None:
        parts[biased_at] = BIASED_SENTENCE
    return "".join(parts).strip()


def windowed(**fields: Any) -> dict[str, Any]:
    return policy(
        **{"mode": "enforce", "stream_policy": "windowed", "window_chars": 100, "context_chars": 40}
        | fields
    )


def delivered(received: bytes) -> str:
    """The answer's text a client read from a stream's bytes, every API's deltas joined
    (a word split across two events is found whole here, unlike in the bytes)."""
    pieces = []
    for line in received.decode().splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[len("data: ") :])
        for choice in event.get("choices") or []:
            pieces.append((choice.get("delta") or {}).get("content") or choice.get("text") or "")
        if event.get("type") == "response.output_text.delta":
            pieces.append(event["delta"])
        if event.get("type") == "content_block_delta":
            pieces.append(event["delta"].get("text") or "")
    return "".join(pieces)


def raw_stream(gateway: RunningGateway, api: Api) -> tuple[bytes, httpx.Headers]:
    with (
        gateway.http() as http,
        http.stream("POST", api.path, json=api.http_body(stream=True)) as response,
    ):
        return b"".join(response.iter_raw()), response.headers
