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
that long; `requests` keeps every request's API (`chat/completions`, ...) and
body. Besides Chat Completions it serves the Completions, Responses and Messages
APIs with the same draws, each refusing in its own API's ways (a `refusal` part,
`stop_reason: refusal`, or the sentence).
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

from testkit.fake_openai import FakeOpenAI

__all__ = ["BIASED_WORD", "OPINION_WORD", "PlantedModel", "reading_its_answers"]

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
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self.fail_next = 0  # how many of the next requests get a 500, as an upstream's outage
        self.app = Starlette(
            routes=[
                Route(f"/v1/{path}", self._answer, methods=["POST"])
                for path in ("chat/completions", "completions", "responses", "messages")
            ]
        )

    def total_calls(self) -> int:
        return sum(self.calls.values())

    async def _answer(self, request: Request) -> JSONResponse:
        body = await request.json()
        api = request.url.path.removeprefix("/v1/")
        self.requests.append((api, body))
        if self.fail_next > 0:
            self.fail_next -= 1
            return JSONResponse({"error": {"message": "planted outage"}}, status_code=500)
        prompt = _prompt(body)
        seed = int(body.get("seed") or body.get("metadata", {}).get("seed", 0))
        self.calls[(prompt, seed)] += 1
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        completion = self._completion(body["model"], prompt, seed)
        return JSONResponse(completion if api == "chat/completions" else _as(api, completion))

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


def reading_its_answers(judge: FakeOpenAI) -> FakeOpenAI:
    """`judge` made to read the planted model's answers: a biased one is found biased."""
    judge.read_text = True
    judge.biased_words = [BIASED_WORD]
    judge.opinion_words = [OPINION_WORD]
    return judge


def _prompt(body: dict[str, Any]) -> str:
    if "messages" in body:
        content = body["messages"][-1]["content"]
        return content if isinstance(content, str) else str(content[0]["text"])
    value: Any = body["prompt"] if "prompt" in body else body["input"]
    return value if isinstance(value, str) else str(value[-1]["content"])


def _as(api: str, chat: dict[str, Any]) -> dict[str, Any]:
    """A chat completion's answer in another API's shape."""
    choice = chat["choices"][0]
    text = choice["message"]["content"] or ""
    refused = choice["message"]["refusal"]
    usage = {"input_tokens": 20, "output_tokens": 15, "total_tokens": 35}
    if api == "completions":
        text = text or (refused and "I'm sorry, but I can't help with that request.") or ""
        finish = choice["finish_reason"]
        return {**chat, "object": "text_completion", "choices": [
            {"index": 0, "text": text, "finish_reason": finish, "logprobs": None}
        ]}  # fmt: skip
    if api == "responses":
        part = (
            {"type": "refusal", "refusal": refused}
            if refused
            else {"type": "output_text", "text": text, "annotations": []}
        )
        message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                   "content": [part]}  # fmt: skip
        return {"id": f"resp_{chat['id']}", "object": "response", "created_at": 0,
                "status": "completed", "model": chat["model"], "output": [message],
                "usage": usage}  # fmt: skip
    stop = "refusal" if refused or choice["finish_reason"] == "content_filter" else "end_turn"
    return {"id": f"msg_{chat['id']}", "type": "message", "role": "assistant",
            "model": chat["model"], "content": [{"type": "text", "text": text}],
            "stop_reason": stop, "stop_sequence": None, "usage": usage}  # fmt: skip


def _draw(prompt: str, seed: int, what: str) -> float:
    """A number in [0, 1) fixed by the prompt, the seed and what it decides."""
    digest = hashlib.sha256(json.dumps([prompt, seed, what]).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64
