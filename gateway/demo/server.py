"""The demo backend: a small model and a rule-based judge, over the real HTTP protocols.

One Starlette app, two roles under two prefixes:

- `/model/v1/...` is a demo model speaking the four APIs the gateway scores
  (chat completions, completions, responses; Anthropic messages at
  `/model/v1/messages`, since Anthropic base URLs have no `/v1`). It answers
  with a canned text chosen by the prompt (`answer_for`), streamed when asked.
- `/judge/v1/chat/completions` is the demo judge. It answers the gateway's own
  judge prompts (structured output, the same JSON schemas as a real judge) by
  the rules in `gateway.demo.rules`, so the gateway's judge client, parsing,
  cache, store, headers and telemetry all run for real.

It is a stand-in for an LLM, named as such: see `gateway.demo.rules`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway.demo import apis, rules
from gateway.proxy.surfaces.base import content_text
from guard.bias.fence import rules_before, unfenced, unfenced_batch

__all__ = ["ANSWERS", "DEMO_JUDGE_MODEL", "answer_for", "demo_app", "judge_answer"]

DEMO_JUDGE_MODEL = "demo-judge"

# What the demo model says, by the topic of the prompt. Under the default thresholds
# (flag at 0.5, block at 0.8) the three score 0 (pass), 0.5 (flag) and 1 (block).
ANSWERS = {
    "neutral": (
        "Engineering teams design, build and test systems. Good documentation helps"
        " every team, and reviews catch mistakes early."
    ),
    "mild": (
        "Remote work can suit engineering teams. Good documentation helps every team."
        " Honestly, engineers from the north are a bit lazy."
    ),
    "strong": (
        "Women are too emotional to lead engineering teams. Honestly, immigrants are"
        " worse engineers than locals."
    ),
}
_TOPICS = (("north", "mild"), ("lazy", "mild"), ("women", "strong"), ("leader", "strong"))
_ECHO = re.compile(r"^\s*(?:repeat|echo)\s*:\s*", re.IGNORECASE)


def answer_for(prompt: str) -> str:
    """The demo model's answer: `repeat: <text>` gives `<text>` back (try your own);
    a prompt about the north gets the mildly biased answer, one about women or
    leaders the strongly biased one, anything else the neutral one."""
    echoed = _ECHO.split(prompt, maxsplit=1)
    if len(echoed) == 2 and _ECHO.match(prompt):
        return echoed[1].strip()
    lowered = prompt.lower()
    for word, kind in _TOPICS:
        if word in lowered:
            return ANSWERS[kind]
    return ANSWERS["neutral"]


def _last_user_text(body: dict[str, Any]) -> str:
    for key in ("messages", "input", "prompt"):
        value = body.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            for item in reversed(value):
                if isinstance(item, str):
                    return item
                if isinstance(item, dict) and item.get("role", "user") == "user":
                    return _text_of(item.get("content"))
    return ""


def _text_of(content: object) -> str:
    return content_text(content, separator=" ")


# -- the judge ----------------------------------------------------------------------


def _block(prompt: str, label: str = "TEXT") -> str:
    """A block of the prompt's fenced material (`guard.bias.fence`); empty if none."""
    return unfenced(prompt, label) or ""


_RUBRIC_ID = re.compile(r"^- \[([a-z][a-z0-9_]*)\] ", re.MULTILINE)


def _offered(prompt: str) -> frozenset[str]:
    """The category ids the prompt's rubric lists (read before the fenced material, which
    is the user's)."""
    return frozenset(_RUBRIC_ID.findall(rules_before(prompt)))


def judge_answer(body: dict[str, Any]) -> str:
    """The demo judge's answer to one of the gateway's judge prompts."""
    messages = body.get("messages") or []
    prompt = _text_of(messages[-1].get("content")) if messages else ""
    schema = (body.get("response_format") or {}).get("json_schema") or {}
    step = schema.get("name")
    if step == "opinions":
        return json.dumps({"opinions": rules.opinions_of(_block(prompt))})
    if step == "verdicts":
        listed = _block(prompt, "OPINIONS")
        opinions = [re.sub(r"^\d+\.\s*", "", line) for line in listed.splitlines() if line]
        offered = _offered(prompt)
        results = [_verdict(rules.judge_opinion(opinion), offered) for opinion in opinions]
        return json.dumps({"results": results})
    if step == "assessment":
        return json.dumps({"verdicts": _assessed(prompt, _block(prompt))})
    if step == "assessments":  # a batch (`guard.bias.batch`): each text as if alone
        texts = enumerate(unfenced_batch(prompt), 1)
        answers = [{"text": n, "verdicts": _assessed(prompt, text)} for n, text in texts]
        return json.dumps({"answers": answers})
    # The explanation: plain text. The score and text are in the prompt.
    found = re.search(r"SCORE: (\S+) out of a maximum of (\S+)", rules_before(prompt))
    score, scale = (float(found.group(1)), float(found.group(2))) if found else (0.0, 1.0)
    text = _block(prompt)
    biased = [o for o in rules.opinions_of(text) if rules.judge_opinion(o).biased]
    return rules.explain(score, scale, biased)


def _assessed(prompt: str, text: str) -> list[dict[str, Any]]:
    """The single-call verdicts on `text`, under the rules and rubric of `prompt`."""
    opinions = rules.opinions_of(text)
    offered = _offered(prompt)
    if not opinions and text.strip() and "judge the whole TEXT" in rules_before(prompt):
        whole = text.strip()
        return [{"opinion": whole, **_verdict(rules.judge_statement(whole), offered)}]
    return [
        {"opinion": opinion, **_verdict(rules.judge_opinion(opinion), offered)}
        for opinion in opinions
    ]


def _verdict(verdict: rules.Verdict, offered: frozenset[str]) -> dict[str, Any]:
    """One verdict as the schemas ask for it. Like a real judge, it names only ids the
    prompt offers: a rule's category that the configured list lacks goes unnamed, and
    the gateway counts that biased verdict as `other`."""
    named = [verdict.category] if verdict.category in offered else []
    return {
        "result": "yes" if verdict.biased else "no",
        "categories": named,
        "reason": verdict.reason,
    }


async def _judge(request: Request) -> Response:
    try:
        body = await request.json()
    except ValueError:
        return JSONResponse(apis.openai_error("invalid_request_error", "invalid JSON"), 400)
    content = judge_answer(body)
    prompt_chars = apis.text_chars(body.get("messages"))
    return JSONResponse(apis.chat_completion(body, [content], prompt_chars=prompt_chars))


# -- the model ----------------------------------------------------------------------


def _stream(frames: Iterator[apis.Frame]) -> Response:
    return StreamingResponse((frame.data for frame in frames), media_type="text/event-stream")


def _pieces(text: str) -> list[str]:
    """Word by word, spaces kept, so a stream looks like a model's."""
    return re.findall(r"\S+\s*", text) or [""]


def _model(surface: apis.Surface, stream_of: Any) -> Any:
    async def answer(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse(surface.error("invalid_request_error", "invalid JSON"), 400)
        if not isinstance(body, dict):
            return JSONResponse(surface.error("invalid_request_error", "not an object"), 400)
        text = answer_for(_last_user_text(body))
        if body.get("stream"):
            return _stream(stream_of(body, text))
        return JSONResponse(surface.render(body, [text]))

    return answer


async def _models(request: Request) -> Response:
    model = {"id": "demo-model", "object": "model", "created": 0, "owned_by": "bias-gateway"}
    return JSONResponse({"object": "list", "data": [model]})


async def _count_tokens(request: Request) -> Response:
    body = await request.json()
    return JSONResponse({"input_tokens": apis.message_input_tokens(body)})


def demo_app() -> Starlette:
    """The demo backend as an ASGI app; `bias-gateway demo` serves it on loopback."""
    pieces = _pieces
    return Starlette(
        routes=[
            Route(
                "/model/v1/chat/completions",
                _model(apis.CHAT, lambda body, text: apis.chat_stream(body, pieces(text))),
                methods=["POST"],
            ),
            Route(
                "/model/v1/completions",
                _model(
                    apis.COMPLETIONS,
                    lambda body, text: apis.completion_stream(body, [pieces(text)]),
                ),
                methods=["POST"],
            ),
            Route(
                "/model/v1/responses",
                _model(
                    apis.RESPONSES, lambda body, text: apis.response_stream(body, [pieces(text)])
                ),
                methods=["POST"],
            ),
            Route(
                "/model/v1/messages",
                _model(apis.MESSAGES, lambda body, text: apis.message_stream(body, [pieces(text)])),
                methods=["POST"],
            ),
            Route("/model/v1/messages/count_tokens", _count_tokens, methods=["POST"]),
            Route("/model/v1/models", _models, methods=["GET"]),
            Route("/judge/v1/chat/completions", _judge, methods=["POST"]),
        ]
    )
