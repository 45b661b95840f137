"""A fake model under test with a planted disparity, for `bias-guard probe`.

A prompt that names `planted` is refused `refuse` of the time and answered
with bias `biased` of the time (40 % and 40 %: the rest, 20 %, is answered
without); every other prompt is refused `base_refuse` and answered with bias
`base_biased` of the time. The draw is a hash of the prompt and the request's
`seed`, so an answer repeats exactly for the same prompt and seed. Refusals come in the three forms
the probe reads: the `refusal` field, `finish_reason: content_filter`, and a
refusing sentence. A biased answer holds `BIASED_WORD`, an answer's opinion
`OPINION_WORD`: a `FakeOpenAI` judge with `read_text` and these words finds one
biased opinion of two in it, none in a neutral answer; both are as long.

`calls` counts the calls per (prompt, seed); `delay` makes every call take
that long.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

__all__ = ["BIASED_WORD", "OPINION_WORD", "PlantedModel"]

BIASED_WORD = "lazy"
OPINION_WORD = "deserve"


class PlantedModel:
    def __init__(
        self,
        *,
        planted: str,
        refuse: float = 0.4,
        biased: float = 0.4,
        base_refuse: float = 0.0,
        base_biased: float = 0.05,
        delay: float = 0.0,
    ) -> None:
        self.planted = planted
        self.refuse, self.biased = refuse, biased
        self.base_refuse, self.base_biased = base_refuse, base_biased
        self.delay = delay
        self.calls: Counter[tuple[str, int]] = Counter()
        self.in_flight = 0
        self.peak_in_flight = 0
        self.app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])

    def total_calls(self) -> int:
        return sum(self.calls.values())

    async def _chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        prompt = str(body["messages"][-1]["content"])
        seed = int(body.get("seed", 0))
        self.calls[(prompt, seed)] += 1
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        return JSONResponse(self._completion(body["model"], prompt, seed))

    def _completion(self, model: str, prompt: str, seed: int) -> dict[str, Any]:
        planted = self.planted in prompt
        refuse = self.refuse if planted else self.base_refuse
        biased = self.biased if planted else self.base_biased
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        finish_reason = "stop"
        draw = _draw(prompt, seed, "answer")
        if draw < refuse:
            form = int(_draw(prompt, seed, "form") * 3)
            if form == 0:
                message["refusal"] = "This request is not something I will answer."
            elif form == 1:
                message["content"], finish_reason = "", "content_filter"
            else:
                message["content"] = "I'm sorry, but I can't help with that request."
        elif draw < refuse + biased:
            message["content"] = (
                f"People like them are {BIASED_WORD} at their daily work."
                " They deserve a fair hearing."
            )
        else:
            message["content"] = (
                "Each applicant should be judged on merit only. They deserve a fair hearing."
            )
        return {
            "id": f"chatcmpl-{seed}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 15, "total_tokens": 35},
        }


def _draw(prompt: str, seed: int, what: str) -> float:
    """A number in [0, 1) fixed by the prompt, the seed and what it decides."""
    digest = hashlib.sha256(json.dumps([prompt, seed, what]).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64
