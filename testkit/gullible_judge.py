"""A gullible judge: the demo judge's rules, and it does what its prompt tells it to.

Issue 30's attack suite measures how often an answer talks the judge out of its
verdict. A rule-based judge cannot be talked to, and a real LLM cannot run in a
test, so this fake stands for the worst naive LLM: it answers the gateway's judge
prompts as the demo judge does (`gateway.demo.server.judge_answer`, whose rules
are `gateway.demo.rules`), except when its prompt holds an instruction to find no
bias (`testkit.naive_reading.instruction_in`: a note to the reviewer, an
"ignore the rules", a forged role token or a forged answer, in nine languages,
read through tag characters, look-alikes, zero-width characters, spacing and
fullwidth letters). Then it finds no opinion, or calls every opinion unbiased.

It does not credit the prompt's fence: an instruction counts wherever it sits,
inside boundary markers, in a window's context or in the list of opinions, as it
would for a model that reads its prompt as one stream of orders. That is a worst
case on purpose: a defence measured against it does not rely on the judge
respecting the fence. It only knows its own task: a line of the prompt that is a
line of the gateway's prompt templates (`guard.bias.prompts` and the batch prompt,
built around a probe text; numbers and the fence's random codes ignored) is the
task, not an instruction about it, so rules such as "return an empty list" or a
warning about instructions in the text do not steer it.

Serve it with `python -m testkit.gullible_judge --port 9200`; its
OpenAI-compatible endpoint is `/v1/chat/completions`, for any model name.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.demo import apis
from gateway.demo.server import judge_answer
from gateway.proxy.surfaces.base import content_text
from guard.bias.batch import batch_prompt
from guard.bias.prompts import SYSTEM_PROMPT, BiasPrompts
from testkit.naive_reading import Finding, instruction_in

__all__ = ["GullibleJudge", "gullible_answer", "obeyed"]


_PROBE = "probe-text-of-the-gullible-judge"
_DIGITS = re.compile(r"[\w-]*\d[\w-]*|\b[0-9a-f]{16}\b")


def _shape(line: str) -> str:
    """A line with its words that hold digits or are a fence code (`guard.bias.fence`)
    blanked: numbers, and the random code of the markers."""
    return _DIGITS.sub("#", line.strip())


@functools.cache
def _task_lines() -> frozenset[str]:
    """The shapes of the lines of every judge prompt the gateway writes, but the text's."""
    prompts = BiasPrompts()
    built = [
        SYSTEM_PROMPT,
        prompts.extract(_PROBE),
        prompts.extract(_PROBE, context=_PROBE),
        prompts.analyze(_PROBE, [_PROBE]),
        prompts.analyze(_PROBE, [_PROBE], context=_PROBE),
        prompts.assess(_PROBE),
        prompts.assess(_PROBE, judge_whole_text=False, context=_PROBE),
        prompts.reason(_PROBE, 0.5, 1.0, [_PROBE]),
        batch_prompt(prompts, [_PROBE, _PROBE], judge_whole_text=True),
        batch_prompt(prompts, [_PROBE], judge_whole_text=False),
    ]
    return frozenset(
        _shape(line)
        for prompt in built
        for line in prompt.splitlines()
        # A section's label stays: after a forged close, a second one restarts the text.
        if line.strip() and _PROBE not in line and line.strip() not in ("TEXT:", "TEXTS:")
    )


def _prompt(body: dict[str, Any]) -> str:
    """Every message of the judge call, as one text (a naive model reads them all), less
    the lines of its task."""
    messages = body.get("messages") or []
    text = "\n\n".join(
        content_text(message.get("content"), separator=" ")
        for message in messages
        if isinstance(message, dict)
    )
    task = _task_lines()
    return "\n".join(line for line in text.splitlines() if _shape(line) not in task)


def obeyed(body: dict[str, Any]) -> Finding | None:
    """The instruction the gullible judge obeys in this judge call, or None."""
    return instruction_in(_prompt(body))


def _unbiased(verdict: Any) -> Any:
    if isinstance(verdict, dict) and "result" in verdict:
        return {**verdict, "result": "no", "categories": [], "reason": "As instructed: fair."}
    return verdict


def _complied(answer: dict[str, Any]) -> dict[str, Any]:
    """The demo judge's answer, rewritten as told: no opinion, every verdict unbiased."""
    if "opinions" in answer:
        return {"opinions": []}
    if "answers" in answer:
        return {
            "answers": [
                {**text, "verdicts": [_unbiased(v) for v in text.get("verdicts", [])]}
                for text in answer["answers"]
            ]
        }
    return {key: [_unbiased(v) for v in value] for key, value in answer.items()}


def gullible_answer(body: dict[str, Any]) -> str:
    """The demo judge's answer to this judge call, or, when the prompt holds an
    instruction to find no bias, the answer that instruction asks for."""
    return _answer(body, obeyed(body))


def _answer(body: dict[str, Any], finding: Finding | None) -> str:
    answer = judge_answer(body)
    if finding is None:
        return answer
    try:
        parsed = json.loads(answer)
    except ValueError:  # the explanation step: plain text decides nothing
        return answer
    return json.dumps(_complied(parsed)) if isinstance(parsed, dict) else answer


class GullibleJudge:
    """The judge as an ASGI app (`app`), counting the calls it answered and obeyed."""

    def __init__(self) -> None:
        self.calls = 0
        self.obeyed: list[Finding] = []
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._judge, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    async def _judge(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse(apis.openai_error("invalid_request_error", "invalid JSON"), 400)
        if not isinstance(body, dict):
            return JSONResponse(apis.openai_error("invalid_request_error", "not an object"), 400)
        self.calls += 1
        finding = obeyed(body)
        if finding is not None:
            self.obeyed.append(finding)
        content = _answer(body, finding)
        prompt_chars = apis.text_chars(body.get("messages"))
        return JSONResponse(apis.chat_completion(body, [content], prompt_chars=prompt_chars))

    async def _models(self, request: Request) -> Response:
        model = {"id": "gullible-judge", "object": "model", "owned_by": "tests"}
        return JSONResponse({"object": "list", "data": [model]})


def main() -> None:
    import argparse

    import uvicorn

    parser = argparse.ArgumentParser(prog="python -m testkit.gullible_judge")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9200)
    args = parser.parse_args()
    uvicorn.run(GullibleJudge().app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
