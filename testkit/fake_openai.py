"""A fake OpenAI-compatible server that plays both the upstream model and the judge.

Requests whose `model` is `judge_model` are answered as the bias judge, step by
step, from the scripted `opinions`, `verdicts` and `reason`. Any other model is
answered as an upstream chat model with `reply` (streamed when asked).

The upstream also speaks OpenAI's legacy Completions (`/v1/completions`) and
Responses (`/v1/responses`) APIs and Anthropic's Messages API (`/v1/messages`),
worded by `fake_apis`; those calls are recorded as step "chat" and take the same
knobs and faults, so a test can script an upstream whichever API it is reached by.

With `rich` set (`testkit.rich_answers`), every upstream API answers one rich
answer instead, whole or streamed, in the same words both ways.

Misbehaviour is scripted with `Fault`s, each used by the next matching request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway.demo import apis as fake_apis
from gateway.demo.apis import Frame, Surface, split
from guard.bias.fence import unfenced_batch
from testkit import rich_answers
from testkit.reading_judge import opinions_written, reading_answer
from testkit.rich_answers import RichAnswer

JUDGE_MODEL = "judge"

ScriptedVerdict = tuple[str, str] | tuple[str, str, list[str]]
_LANGUAGE_ASKED = re.compile(r"(?:Write every reason in|Write in|why, in)\s+(.+?)[.;]", re.DOTALL)


def _verdict(scripted: ScriptedVerdict) -> dict[str, Any]:
    answer: dict[str, Any] = {"result": scripted[0], "reason": scripted[1]}
    if len(scripted) == 3:
        answer["categories"] = scripted[2]
    return answer


@dataclass
class Fault:
    """One scripted misbehaviour.

    `step` limits it to one kind of request: "preprocess", "analyze", "reason"
    (judge steps), "chat" (upstream, by whichever API), or "count_tokens"
    and "other" (the catch-all route), each only taken by a fault naming it.
    `content` replaces the answer's text(s), `body` replaces the whole HTTP
    body, `status` sets the HTTP status, `delay` waits first, and
    `disconnect_after` cuts a stream after that many text pieces.
    `raw_chunks` answers with exactly these bytes, `raw_delay` seconds apart
    (a stream or a slow body, whatever the request asked for); `reset_after`
    then drops the connection after that many of them.
    """

    step: str | None = None
    status: int | None = None
    body: str | None = None
    content: str | None = None
    delay: float = 0.0
    disconnect_after: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw_chunks: list[bytes] | None = None
    raw_delay: float = 0.0
    reset_after: int | None = None


@dataclass
class Recorded:
    step: str
    body: dict[str, Any]
    headers: dict[str, str]
    path: str = ""


class FakeOpenAI:
    def __init__(self) -> None:
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/completions", self._completions, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route(
                    "/{path:path}",
                    self._other,
                    methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                ),
            ]
        )
        self.base_url = ""
        self.reset()

    def reset(self) -> None:
        self.judge_model = JUDGE_MODEL
        self.opinions: list[str] = ["Engineers from the north are lazy."]
        # (result, reason) or (result, reason, categories); without categories the
        # fake names none, as a judge that ignores the field would.
        self.verdicts: Sequence[ScriptedVerdict] = [
            ("yes", "Geographical stereotype.", ["geographical"])
        ]
        self.reason = "The score is 1 because the text stereotypes northerners."
        self.reply = "Hello! How can I help?"
        # Each chat reply distinct ("<reply> #<n>"), so the score cache cannot hide the judge.
        self.unique_replies = False
        self._served = 0
        # One text per chat choice (n > 1), Responses output message or Messages text block.
        self.replies: list[str] | None = None
        self.tool_calls_only = False
        # One rich answer (several choices, tool calls, logprobs, a refusal, reasoning,
        # usage details) in both forms, for every upstream API: `rich_answers`.
        self.rich: RichAnswer | None = None
        self.response_headers: dict[str, str] = {}
        # Verdicts chosen by a substring of the judged text; falls back to `verdicts`.
        self.verdicts_for: dict[str, Sequence[ScriptedVerdict]] = {}
        # The language each judge prompt asked reasons in, as worded ("Korean (language
        # code ko)", "the language the TEXT is written in"), per step.
        self.languages: list[tuple[str, str]] = []
        self.chunks = 5
        self.chunk_delay = 0.0
        self.delay = 0.0
        self.judge_delay = 0.0  # every judge call waits this long
        # ... and this long more for each opinion (or verdict) its answer writes, as a
        # real judge, writing one line per opinion, takes longer for a longer answer.
        self.judge_opinion_delay = 0.0
        # The judge reads the TEXT it is asked about (`reading_judge`): its opinions are
        # the sentences holding one of these words, biased when a biased word is in one.
        self.read_text = False
        self.biased_words: list[str] = []
        self.opinion_words: list[str] = []
        # Structured-output forms refused: json_schema, json_object_schema (JSON mode with
        # a schema beside it) or json_object; with refuse_status (llama.cpp's is a 500).
        self.refuse_formats: set[str] = set()
        self.refuse_status = 400
        # Chat calls whose messages reach this many tokens (four characters each) are
        # refused as llama-cpp-python's server refuses them: a 400 context_length_exceeded.
        self.context_window: int | None = None
        self.faults: deque[Fault] = deque()
        self.requests: list[Recorded] = []
        self.sent: list[bytes] = []  # the bytes of the last stream, as sent
        self.stream_endings: list[str] = []  # "completed" or "cancelled", per stream
        self.redirects: dict[str, str] = {}  # path -> Location of a 307 answer
        # Judge calls answered 429 above this many a second (a sliding one-second window).
        self.judge_max_rps: float | None = None
        self.judge_calls_at: deque[float] = deque()
        # Judge calls in flight, counted per reset: a call a previous test left running
        # (its gateway's background work) neither counts here nor, ending, uncounts.
        self._generation = getattr(self, "_generation", 0) + 1
        self.judge_in_flight = 0
        self.judge_peak_in_flight = 0
        # A judge call waits (5 s at most) until this many are in flight at once, so that a
        # test sees a concurrency bound reached, not merely kept.
        self.judge_gather = 0
        self._gathered: asyncio.Event | None = None
        # Cleared by a test, every judge call waits (30 s at most) until it is set again: the
        # test arranges a queue while the judge holds, then lets it go (no race with speed).
        self.judge_open = threading.Event()
        self.judge_open.set()
        self.rate_limited = 0  # 429s sent for judge_max_rps

    def fail(self, *faults: Fault) -> None:
        self.faults.extend(faults)

    def steps(self) -> list[str]:
        return [recorded.step for recorded in self.requests]

    def judge_calls(self) -> int:
        judge_steps = ("preprocess", "analyze", "assess", "assess_batch", "reason")
        return sum(1 for recorded in self.requests if recorded.step in judge_steps)

    # -- handlers ---------------------------------------------------------------

    async def _chat(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            return _error(400, "invalid JSON body")
        step = self._step_of(body)
        self.requests.append(Recorded(step, body, dict(request.headers), request.url.path))
        if step != "chat":
            limited = self._over_rate_limit()
            if limited is not None:
                return limited
            generation = self._generation
            self.judge_in_flight += 1
            self.judge_peak_in_flight = max(self.judge_peak_in_flight, self.judge_in_flight)
            try:
                if self.judge_gather:
                    await self._gather()
                if not self.judge_open.is_set():
                    await asyncio.to_thread(self.judge_open.wait, 30)
                return await self._answer_chat(step, body)
            finally:
                if generation == self._generation:
                    self.judge_in_flight -= 1
        return await self._answer_chat(step, body)

    async def _gather(self) -> None:
        if self._gathered is None:
            self._gathered = asyncio.Event()
        if self.judge_in_flight >= self.judge_gather:
            self._gathered.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._gathered.wait(), 5)

    def _over_rate_limit(self) -> Response | None:
        if self.judge_max_rps is None:
            return None
        now = time.monotonic()
        window = self.judge_calls_at
        while window and window[0] <= now - 1.0:
            window.popleft()
        if len(window) < self.judge_max_rps:
            window.append(now)
            return None
        self.rate_limited += 1
        wait = max(0.001, window[0] + 1.0 - now)
        return JSONResponse(
            {"error": {"message": "Rate limit reached", "type": "requests", "code": None}},
            status_code=429,
            headers={
                "retry-after": str(max(1, round(wait))),
                "x-ratelimit-reset-requests": f"{round(wait * 1000)}ms",
            },
        )

    async def _answer_chat(self, step: str, body: dict[str, Any]) -> Response:
        fault = self._take_fault(step)
        failure = fake_apis.openai_error("server_error", "scripted failure")
        scripted = await self._scripted(step, fault, failure)
        if scripted is not None:
            return scripted
        refused = _format_key(body.get("response_format"))
        if refused in self.refuse_formats:
            message = f"response_format {refused} is not supported"
            return _error(self.refuse_status, message)
        too_long = self._past_context_window(body)
        if too_long is not None:
            return too_long
        if self.rich is not None and step == "chat":
            return self._rich("chat", body, fault)
        content = fault.content if fault and fault.content is not None else self._answer(step, body)
        if step != "chat" and self.judge_opinion_delay:
            await asyncio.sleep(self.judge_opinion_delay * opinions_written(step, content))
        if body.get("stream"):
            return self._stream(body, content, fault)
        return JSONResponse(self._completion(body, content), headers=self.response_headers)

    def _past_context_window(self, body: dict[str, Any]) -> Response | None:
        """llama-cpp-python's refusal of a prompt longer than its context, or None."""
        asked = fake_apis.tokens(fake_apis.text_chars(body.get("messages")))
        if self.context_window is None or asked < self.context_window:
            return None
        message = (
            f"This model's maximum context length is {self.context_window} tokens. However, "
            f"you requested {asked} tokens ({asked} in the messages, "
            f"{body.get('max_tokens')} in the completion). "
            "Please reduce the length of the messages or completion."
        )
        error = {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
        return JSONResponse({"error": error}, status_code=400)

    async def _scripted(
        self, step: str, fault: Fault | None, failure: dict[str, Any]
    ) -> Response | None:
        """Wait as scripted, then the fault's own answer if it has one (None: answer as usual).

        `failure` is the error body of a `status` fault without a `body`, in the API's words.
        """
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.judge_delay and step != "chat":
            await asyncio.sleep(self.judge_delay)
        if fault and fault.delay:
            await asyncio.sleep(fault.delay)
        if fault and fault.status is not None and fault.status >= 400:
            return Response(
                fault.body or json.dumps(failure),
                status_code=fault.status,
                media_type="application/json",
                headers=fault.headers,
            )
        if fault and fault.raw_chunks is not None:
            return self._raw(fault)
        if fault and fault.body is not None:
            return Response(fault.body, status_code=fault.status or 200, headers=fault.headers)
        return None

    # -- the other model APIs (always the upstream, never the judge) --------------

    async def _completions(self, request: Request) -> Response:
        return await self._upstream(request, fake_apis.COMPLETIONS)

    async def _responses(self, request: Request) -> Response:
        return await self._upstream(request, fake_apis.RESPONSES)

    async def _messages(self, request: Request) -> Response:
        return await self._upstream(request, fake_apis.MESSAGES)

    async def _upstream(self, request: Request, surface: Surface) -> Response:
        """One upstream call in `surface`'s words, recorded and faulted as step "chat"."""
        body = await _json_object(request)
        if body is None:
            return JSONResponse(surface.error("invalid_request_error", "invalid JSON body"), 400)
        self.requests.append(Recorded("chat", body, dict(request.headers), request.url.path))
        fault = self._take_fault("chat")
        failure = surface.error(surface.server_error, "scripted failure")
        scripted = await self._scripted("chat", fault, failure)
        if scripted is not None:
            return scripted
        if self.rich is not None:
            return self._rich(rich_answers.API_OF_PATH[request.url.path], body, fault)
        n = int(body.get("n") or 1) if surface.honours_n else 1
        texts = self._texts(body, fault, n)
        if body.get("stream"):
            pieces = [split(text, self.chunks) for text in texts]
            frames = surface.stream(body, pieces)
            return self._streaming(frames, fault, self.response_headers)
        return JSONResponse(surface.render(body, texts), headers=self.response_headers)

    async def _count_tokens(self, request: Request) -> Response:
        """Anthropic's token count; faulted only by faults with step "count_tokens"."""
        body = await _json_object(request)
        if body is None:
            message = "invalid JSON body"
            return JSONResponse(fake_apis.anthropic_error("invalid_request_error", message), 400)
        self.requests.append(
            Recorded("count_tokens", body, dict(request.headers), request.url.path)
        )
        fault = self._take_fault("count_tokens", exact=True)
        failure = fake_apis.anthropic_error("api_error", "scripted failure")
        scripted = await self._scripted("count_tokens", fault, failure)
        if scripted is not None:
            return scripted
        return JSONResponse({"input_tokens": fake_apis.message_input_tokens(body)})

    def _texts(self, body: dict[str, Any], fault: Fault | None, n: int) -> list[str]:
        """The upstream's texts: a `content` fault's, else `replies`, else `n` times the reply."""
        if fault and fault.content is not None:
            return [fault.content] * n
        if self.replies:
            return list(self.replies)
        return [self._answer("chat", body)] * n

    def _rich(self, api: str, body: dict[str, Any], fault: Fault | None) -> Response:
        assert self.rich is not None
        if body.get("stream"):
            frames = rich_answers.STREAM[api](self.rich, body)
            return self._streaming(frames, fault, self.response_headers)
        return JSONResponse(rich_answers.WHOLE[api](self.rich, body), headers=self.response_headers)

    def _streaming(
        self, frames: Iterable[Frame], fault: Fault | None, headers: dict[str, str] | None = None
    ) -> StreamingResponse:
        """Send `frames` as an event stream, kept in `sent` and its end in `stream_endings`.

        A `disconnect_after` fault cuts it before that many text pieces have gone, and
        `chunk_delay` paces the pieces, whichever API the frames speak.
        """
        cut = fault.disconnect_after if fault else None
        self.sent = []

        async def body() -> Any:
            ending = "cancelled"
            pieces = 0
            try:
                for frame in frames:
                    if frame.piece:
                        if cut is not None and pieces >= cut:
                            raise ConnectionResetError("scripted disconnect")
                        pieces += 1
                        if self.chunk_delay:
                            await asyncio.sleep(self.chunk_delay)
                    self.sent.append(frame.data)
                    yield frame.data
                ending = "completed"
            finally:
                self.stream_endings.append(ending)

        return StreamingResponse(body(), media_type="text/event-stream", headers=headers)

    async def _other(self, request: Request) -> Response:
        """Any other path: recorded with its raw path, so tests see where requests landed."""
        raw_path = request.scope.get("raw_path", b"").decode("latin-1") or request.url.path
        self.requests.append(Recorded("other", {}, dict(request.headers), raw_path))
        target = self.redirects.get(request.url.path)
        if request.url.path == "/v1/chat/completions/":
            # What many servers do with a trailing slash; a client that follows it lands
            # on the scored path without the gateway having scored it.
            target = "/v1/chat/completions"
        if target is not None:
            return Response(status_code=307, headers={"location": target})
        # Only a fault that names this step: a path nobody scores must not take one meant
        # for a model call.
        fault = next((f for f in self.faults if f.step == "other"), None)
        if fault is not None and fault.raw_chunks is not None:
            self.faults.remove(fault)
            return self._raw(fault)
        return JSONResponse({"path": raw_path})

    def _raw(self, fault: Fault) -> Response:
        chunks = list(fault.raw_chunks or [])

        async def body() -> Any:
            for index, chunk in enumerate(chunks):
                if fault.reset_after is not None and index >= fault.reset_after:
                    raise ConnectionResetError("scripted reset")
                if index and fault.raw_delay:
                    await asyncio.sleep(fault.raw_delay)
                yield chunk

        media_type = fault.headers.get("content-type", "text/event-stream")
        return StreamingResponse(body(), status_code=fault.status or 200, media_type=media_type)

    async def _models(self, request: Request) -> Response:
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": "fake-model", "object": "model", "owned_by": "fake"}],
            }
        )

    async def _embeddings(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(Recorded("embeddings", body, dict(request.headers)))
        return JSONResponse(
            {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.1]}]}
        )

    # -- behaviour --------------------------------------------------------------

    def _step_of(self, body: dict[str, Any]) -> str:
        if body.get("model") != self.judge_model and not _asks_as_judge(body):
            return "chat"
        schema_name = _field(body, "response_format", "json_schema", "name")
        if schema_name == "opinions":
            return "preprocess"
        if schema_name == "verdicts":
            return "analyze"
        if schema_name == "assessment":
            return "assess"
        if schema_name == "assessments":
            return "assess_batch"
        text = "\n".join(
            message["content"]
            for message in body.get("messages", [])
            if isinstance(message, dict) and isinstance(message.get("content"), str)
        )
        if '{"answers"' in text:
            return "assess_batch"
        if '{"verdicts"' in text:
            return "assess"
        if '{"results"' in text:
            return "analyze"
        if '{"opinions"' in text:
            return "preprocess"
        return "reason"

    def _take_fault(self, step: str, *, exact: bool = False) -> Fault | None:
        """The first fault for `step`; unless `exact`, a fault for any step will do."""
        for fault in list(self.faults):
            if fault.step == step or (fault.step is None and not exact):
                self.faults.remove(fault)
                return fault
        return None

    def _answer(self, step: str, body: dict[str, Any]) -> str:
        if step in ("analyze", "assess", "assess_batch", "reason"):
            asked = _LANGUAGE_ASKED.search(str(body["messages"][-1]["content"]))
            if asked is not None:
                self.languages.append((step, " ".join(asked.group(1).split())))
        if self.read_text and step != "chat":
            read = reading_answer(
                step,
                str(body["messages"][-1]["content"]),
                biased_words=self.biased_words,
                opinion_words=self.opinion_words,
            )
            if read is not None:
                return read
        if step == "preprocess":
            return json.dumps({"opinions": self.opinions})
        if step == "analyze":
            prompt = str(body["messages"][-1]["content"])
            verdicts = next(
                (found for key, found in self.verdicts_for.items() if key in prompt),
                self.verdicts,
            )
            return json.dumps({"results": [_verdict(verdict) for verdict in verdicts]})
        if step == "assess":
            return json.dumps({"verdicts": self._assessed(str(body["messages"][-1]["content"]))})
        if step == "assess_batch":
            # Each text between its markers answered as the single-call step answers it.
            texts = unfenced_batch(str(body["messages"][-1]["content"]))
            answers = [
                {"text": number, "verdicts": self._assessed(text)}
                for number, text in enumerate(texts, 1)
            ]
            return json.dumps({"answers": answers})
        if step == "reason":
            return self.reason
        if self.unique_replies:
            self._served += 1
            return f"{self.reply} #{self._served}"
        return self.reply

    def _assessed(self, judged: str) -> list[dict[str, Any]]:
        """The single-call step's verdicts for a prompt (or one text) holding `judged`."""
        verdicts = next(
            (found for key, found in self.verdicts_for.items() if key in judged), self.verdicts
        )
        opinions = [*self.opinions, *(f"opinion {n}" for n in range(len(verdicts)))]
        return [
            {"opinion": opinion, **_verdict(verdict)}
            for opinion, verdict in zip(opinions, verdicts, strict=False)
        ]

    def _completion(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        messages = body.get("messages")
        prompt_chars = sum(
            len(m["content"]) if isinstance(m, dict) and isinstance(m.get("content"), str) else 8
            for m in (messages if isinstance(messages, list) else [])
        )
        n = int(body.get("n") or 1)
        is_chat = body.get("model") != self.judge_model and not _asks_as_judge(body)
        texts = self.replies if self.replies and is_chat else [content] * n
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [self._choice(index, text, is_chat) for index, text in enumerate(texts)],
            "usage": {
                "prompt_tokens": max(1, prompt_chars // 4),
                "completion_tokens": max(1, len(content) // 4),
                "total_tokens": max(1, prompt_chars // 4) + max(1, len(content) // 4),
            },
        }

    def _choice(self, index: int, text: str, is_chat: bool) -> dict[str, Any]:
        if self.tool_calls_only and is_chat:
            call = {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": "{}"},
            }
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            return {"index": index, "message": message, "finish_reason": "tool_calls"}
        message = {"role": "assistant", "content": text}
        return {"index": index, "message": message, "finish_reason": "stop"}

    def _stream(self, body: dict[str, Any], content: str, fault: Fault | None) -> Response:
        """One choice of `content`; for the upstream, `replies` (a choice each) if set."""
        is_chat = body.get("model") != self.judge_model and not _asks_as_judge(body)
        texts = self.replies if self.replies and is_chat else [content]
        pieces = [split(text, self.chunks) for text in texts]
        return self._streaming(fake_apis.chat_choices_stream(body, pieces), fault)


def _field(value: Any, *path: str) -> Any:
    """`value[a][b]...`, or None where a level is missing or not an object (client input)."""
    for name in path:
        if not isinstance(value, dict):
            return None
        value = value.get(name)
    return value


def _format_key(response_format: Any) -> str | None:
    """The structured-output form a `response_format` asks for, as `refuse_formats` names it."""
    kind = _field(response_format, "type")
    if kind == "json_object" and _field(response_format, "schema") is not None:
        return "json_object_schema"
    return kind if isinstance(kind, str) else None


def _asks_as_judge(body: dict[str, Any]) -> bool:
    """Whatever the model name, a request framed by the bias judge's system prompt."""
    messages = body.get("messages") or [{}]
    first = messages[0] if isinstance(messages[0], dict) else {}
    return first.get("role") == "system" and "You review text for bias" in str(first.get("content"))


async def _json_object(request: Request) -> dict[str, Any] | None:
    """The request's JSON object, or None when the body is not one."""
    try:
        body = json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return body if isinstance(body, dict) else None


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": "invalid_request_error", "code": None}},
        status_code=status,
    )


def main() -> None:
    """Serve the fake on its own: `python -m testkit.fake_openai --port 9100`."""
    import argparse

    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9100)
    args = parser.parse_args()
    uvicorn.run(FakeOpenAI().app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
