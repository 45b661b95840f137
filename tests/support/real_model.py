"""The real-model tier's pieces (its fixtures are in tests/real_model/conftest.py): the
model's alias, how long a small model may take, the server it runs in, and the relay that
keeps what the server answered the judge."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import Response

MODEL = "smollm2-135m"  # the alias scripts/real-model serves the model under
# A small model on a shared 2-core machine: a judged response takes seconds to minutes.
SLOW = 600


@dataclass
class RealServer:
    url: str  # the base URL, .../v1
    server: str  # which packaged llama.cpp server: llama-cpp-python or xllamacpp


@dataclass
class JudgeCall:
    request: dict[str, Any]
    status: int
    body: Any  # the server's JSON answer (None: not JSON)


@dataclass
class JudgeRelay:
    """A relay in front of the real server for the judge's calls: it forwards each call
    unchanged and keeps what the server answered, the truth tests compare the gateway's
    records and traces with."""

    target: str
    calls: list[JudgeCall] = field(default_factory=list)
    url: str = ""

    async def relay(self, request: Request) -> Response:
        raw = await request.body()
        async with httpx.AsyncClient(timeout=SLOW) as client:
            answer = await client.post(
                f"{self.target}/chat/completions",
                content=raw,
                headers={"content-type": "application/json"},
            )
        try:
            body = answer.json()
        except ValueError:
            body = None
        self.calls.append(JudgeCall(json.loads(raw), answer.status_code, body))
        return Response(
            answer.content,
            status_code=answer.status_code,
            media_type=answer.headers.get("content-type"),
        )

    def answers(self) -> list[tuple[int, Any]]:
        """Each call's status and what the model wrote (or the error), for a failure's message."""
        found = []
        for call in self.calls:
            body = call.body or {}
            choice = (body.get("choices") or [{}])[0]
            written = (choice.get("finish_reason"), (choice.get("message") or {}).get("content"))
            found.append((call.status, written if call.status == 200 else body))
        return found

    def answered(self) -> list[JudgeCall]:
        return [call for call in self.calls if call.status == 200]
