"""One rich answer, in both forms each model API gives it: whole, and streamed.

The fake upstream (`FakeOpenAI.rich`) answers with it, so a test can ask for both
forms of the same answer and compare them, as `prejudge: stream` must rebuild the
one from the other. Each form follows its API's reference as the real servers send
it, differences included:

- Chat Completions (https://platform.openai.com/docs/api-reference/chat): every
  chunk repeats `id`, `created`, `model`, `system_fingerprint` and `service_tier`
  (and, lately, an `obfuscation` padding field); a choice's first delta is
  `{"role", "content": "" or null, "refusal": null}`; `logprobs` come per chunk;
  usage comes last, in a chunk with no choices, only under
  `stream_options.include_usage`. A whole message also has `annotations: []`,
  which no chunk carries: it is the one field a stream cannot give back.
- legacy Completions: the same chunks, `text` and its `logprobs` lists per chunk.
- Responses (https://platform.openai.com/docs/api-reference/responses-streaming):
  `response.completed` carries the whole response; reasoning, message and
  function-call items stream their parts before it.
- Messages (https://docs.anthropic.com/en/api/messages-streaming): `message_start`
  opens the message with its input usage, blocks stream as deltas (thinking and its
  signature, text and its citations, tool input as partial JSON), and
  `message_delta` ends it with `stop_reason` and the cumulative usage.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gateway.demo.apis import Frame, split

Body = dict[str, Any]

# A whole form's fields that no stream of the same answer says, by API: what the
# rebuilt answer lacks, and the docs (docs/policies.md#prejudged-whole-answers) name.
NOT_STREAMED = {"chat": ("annotations",)}


@dataclass
class RichChoice:
    """One choice (chat, legacy Completions) or the one answer (Responses, Messages)."""

    content: str | None = "Engineers design bridges. They test every beam twice."
    refusal: str | None = None
    # (id, name, arguments as JSON text)
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)
    finish_reason: str = "stop"


@dataclass
class RichAnswer:
    choices: list[RichChoice] = field(
        default_factory=lambda: [
            RichChoice(),
            RichChoice(content=None, refusal="I can't help with that request."),
            RichChoice(
                content=None,
                tool_calls=[
                    ("call_a1", "lookup", '{"city": "Oslo", "units": "metric"}'),
                    ("call_b2", "clock", '{"zone": "UTC"}'),
                ],
                finish_reason="tool_calls",
            ),
        ]
    )
    id: str = "rich-0001"
    created: int = 1_764_650_000
    model: str = "gpt-rich-2026-01-01"
    system_fingerprint: str = "fp_rich01"
    service_tier: str = "default"
    reasoning: str = "The user asks about engineers; answer plainly."
    signature: str = "c2lnbmF0dXJl"
    pieces: int = 4  # text pieces per streamed string
    stream_usage: bool = True  # False: a server that ignores `include_usage`
    logprobs: bool = True


# -- tokens and usage ----------------------------------------------------------------


def _pieces(answer: RichAnswer, text: str) -> list[str]:
    return split(text, answer.pieces) if text else []


def _token(piece: str, number: int) -> Body:
    return {
        "token": piece,
        "logprob": round(-0.01 * (number + 1), 4),
        "bytes": list(piece.encode()),
        "top_logprobs": [],
    }


def _chat_usage() -> Body:
    return {
        "prompt_tokens": 31,
        "completion_tokens": 57,
        "total_tokens": 88,
        "prompt_tokens_details": {"cached_tokens": 5, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 12,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _data(payload: Body) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _event(payload: Body) -> bytes:
    return f"event: {payload['type']}\n".encode() + _data(payload)


DONE = Frame(b"data: [DONE]\n\n")


def _includes_usage(answer: RichAnswer, body: Body) -> bool:
    options = body.get("stream_options")
    return (
        answer.stream_usage and isinstance(options, dict) and options.get("include_usage") is True
    )


# -- Chat Completions ----------------------------------------------------------------


def chat_whole(answer: RichAnswer, body: Body) -> Body:
    choices = []
    for index, choice in enumerate(answer.choices):
        message: Body = {
            "role": "assistant",
            "content": choice.content,
            "refusal": choice.refusal,
            "annotations": [],
        }
        if choice.tool_calls:
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
                for call_id, name, args in choice.tool_calls
            ]
        choices.append(
            {
                "index": index,
                "message": message,
                "logprobs": _chat_logprobs(answer, choice),
                "finish_reason": choice.finish_reason,
            }
        )
    return {
        "id": answer.id,
        "object": "chat.completion",
        "created": answer.created,
        "model": answer.model,
        "choices": choices,
        "usage": _chat_usage(),
        "service_tier": answer.service_tier,
        "system_fingerprint": answer.system_fingerprint,
    }


def _chat_logprobs(answer: RichAnswer, choice: RichChoice) -> Body | None:
    if not answer.logprobs or choice.tool_calls:
        return None
    content = [_token(p, n) for n, p in enumerate(_pieces(answer, choice.content or ""))]
    refusal = [_token(p, n) for n, p in enumerate(_pieces(answer, choice.refusal or ""))]
    return {"content": content or None, "refusal": refusal or None}


def chat_stream(answer: RichAnswer, body: Body) -> Iterator[Frame]:
    usage = _includes_usage(answer, body)

    def chunk(index: int | None, delta: Body | None, **choice: Any) -> bytes:
        payload: Body = {
            "id": answer.id,
            "object": "chat.completion.chunk",
            "created": answer.created,
            "model": answer.model,
            "service_tier": answer.service_tier,
            "system_fingerprint": answer.system_fingerprint,
            "choices": []
            if index is None
            else [
                {
                    "index": index,
                    "delta": delta,
                    "logprobs": choice.get("logprobs"),
                    "finish_reason": choice.get("finish_reason"),
                }
            ],
            "obfuscation": "pad",
        }
        if usage:
            payload["usage"] = None
        return _data(payload)

    # The choices interleave, as they do for n > 1: a chunk of each in turn.
    streams = [list(_chat_choice_chunks(answer, choice)) for choice in answer.choices]
    for step in range(max(len(stream) for stream in streams)):
        for index, stream in enumerate(streams):
            if step < len(stream):
                delta, extra, piece = stream[step]
                yield Frame(chunk(index, delta, **extra), piece)
    if usage:
        payload = json.loads(chunk(None, None)[len(b"data: ") :])
        payload["usage"] = _chat_usage()
        yield Frame(_data(payload))
    yield DONE


def _chat_choice_chunks(
    answer: RichAnswer, choice: RichChoice
) -> Iterator[tuple[Body, Body, bool]]:
    first: Body = {"role": "assistant", "content": "" if choice.content is not None else None}
    first["refusal"] = None
    if choice.tool_calls:
        call_id, name, _ = choice.tool_calls[0]
        first["tool_calls"] = [_call_head(0, call_id, name)]
    yield first, {"logprobs": None}, False
    for number, piece in enumerate(_pieces(answer, choice.content or "")):
        logprobs = {"content": [_token(piece, number)], "refusal": None}
        yield {"content": piece}, {"logprobs": logprobs if answer.logprobs else None}, True
    for number, piece in enumerate(_pieces(answer, choice.refusal or "")):
        logprobs = {"content": None, "refusal": [_token(piece, number)]}
        yield {"refusal": piece}, {"logprobs": logprobs if answer.logprobs else None}, True
    for position, (call_id, name, arguments) in enumerate(choice.tool_calls):
        if position:
            yield {"tool_calls": [_call_head(position, call_id, name)]}, {"logprobs": None}, False
        for piece in _pieces(answer, arguments):
            delta = {"tool_calls": [{"index": position, "function": {"arguments": piece}}]}
            yield delta, {"logprobs": None}, True
    yield {}, {"logprobs": None, "finish_reason": choice.finish_reason}, False


def _call_head(index: int, call_id: str, name: str) -> Body:
    return {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }


# -- legacy Completions ----------------------------------------------------------------


def _text_logprobs(
    answer: RichAnswer, pieces: list[str], offset: int, first: int = 0
) -> Body | None:
    """Logprobs of `pieces`, one token each, the first being token number `first`."""
    if not answer.logprobs:
        return None
    offsets, at = [], offset
    for piece in pieces:
        offsets.append(at)
        at += len(piece)
    numbered = list(enumerate(pieces, start=first))
    return {
        "tokens": list(pieces),
        "token_logprobs": [_token(p, n)["logprob"] for n, p in numbered],
        "top_logprobs": [{p: _token(p, n)["logprob"]} for n, p in numbered],
        "text_offset": offsets,
    }


def _text_choices(answer: RichAnswer) -> list[RichChoice]:
    """Legacy Completions has text only: a choice's content, or its refusal, or none."""
    return [
        RichChoice(
            content=choice.content or choice.refusal or "", finish_reason=choice.finish_reason
        )
        for choice in answer.choices
    ]


def completion_whole(answer: RichAnswer, body: Body) -> Body:
    choices = [
        {
            "text": choice.content,
            "index": index,
            "logprobs": _text_logprobs(answer, _pieces(answer, choice.content or ""), 0),
            "finish_reason": choice.finish_reason,
        }
        for index, choice in enumerate(_text_choices(answer))
    ]
    usage = {"prompt_tokens": 31, "completion_tokens": 57, "total_tokens": 88}
    return {
        "id": answer.id,
        "object": "text_completion",
        "created": answer.created,
        "model": answer.model,
        "system_fingerprint": answer.system_fingerprint,
        "choices": choices,
        "usage": usage,
    }


def completion_stream(answer: RichAnswer, body: Body) -> Iterator[Frame]:
    head = {
        "id": answer.id,
        "object": "text_completion",
        "created": answer.created,
        "model": answer.model,
        "system_fingerprint": answer.system_fingerprint,
    }
    usage = _includes_usage(answer, body)
    for index, choice in enumerate(_text_choices(answer)):
        at = 0
        for number, piece in enumerate(_pieces(answer, choice.content or "")):
            item = {
                "text": piece,
                "index": index,
                "logprobs": _text_logprobs(answer, [piece], at, number),
                "finish_reason": None,
            }
            at += len(piece)
            yield Frame(
                _data({**head, "choices": [item], **({"usage": None} if usage else {})}), True
            )
        end = {"text": "", "index": index, "logprobs": None, "finish_reason": choice.finish_reason}
        if answer.logprobs:
            end["logprobs"] = _text_logprobs(answer, [], at)
        yield Frame(_data({**head, "choices": [end]}))
    if usage:
        whole = {"prompt_tokens": 31, "completion_tokens": 57, "total_tokens": 88}
        yield Frame(_data({**head, "choices": [], "usage": whole}))
    yield DONE


# -- Responses ---------------------------------------------------------------------


def _first_calls(answer: RichAnswer) -> list[tuple[str, str, str]]:
    """The tool calls of the first choice that has any: the one answer's, in the APIs
    without choices."""
    return next((choice.tool_calls for choice in answer.choices if choice.tool_calls), [])


def _response_items(answer: RichAnswer) -> list[Body]:
    """The output of the answer's first choice: a reasoning item, then its message (text
    or refusal), then its function calls (those of the first choice that has any)."""
    items: list[Body] = [
        {
            "type": "reasoning",
            "id": "rs_rich1",
            "summary": [{"type": "summary_text", "text": answer.reasoning}],
        }
    ]
    for choice in answer.choices[:2]:
        if choice.content is not None:
            part: Body = {"type": "output_text", "text": choice.content, "annotations": []}
            if answer.logprobs:
                part["logprobs"] = [
                    _token(p, n) for n, p in enumerate(_pieces(answer, choice.content))
                ]
        elif choice.refusal is not None:
            part = {"type": "refusal", "refusal": choice.refusal}
        else:
            continue
        number = len(items)
        message = {"type": "message", "id": f"msg_rich{number}", "status": "completed"}
        items.append({**message, "role": "assistant", "content": [part]})
    for call_id, name, arguments in _first_calls(answer):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{call_id}",
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
                "status": "completed",
            }
        )
    return items


def _response(
    answer: RichAnswer, body: Body, output: list[Body], done: bool, *, usage: bool
) -> Body:
    counts = {
        "input_tokens": 31,
        "input_tokens_details": {"cached_tokens": 5},
        "output_tokens": 57,
        "output_tokens_details": {"reasoning_tokens": 12},
        "total_tokens": 88,
    }
    return {
        "id": f"resp_{answer.id}",
        "object": "response",
        "created_at": answer.created,
        "status": "completed" if done else "in_progress",
        "model": answer.model,
        "output": output,
        "usage": counts if done and usage else None,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "metadata": body.get("metadata") or {},
        "parallel_tool_calls": True,
        "service_tier": answer.service_tier,
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
    }


def response_whole(answer: RichAnswer, body: Body) -> Body:
    return _response(answer, body, _response_items(answer), True, usage=True)


def response_stream(answer: RichAnswer, body: Body) -> Iterator[Frame]:
    numbers = iter(range(10_000))

    def event(kind: str, piece: bool = False, **fields: Any) -> Frame:
        return Frame(_event({"type": kind, "sequence_number": next(numbers), **fields}), piece)

    started = _response(answer, body, [], False, usage=False)
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    items = _response_items(answer)
    for index, item in enumerate(items):
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "reasoning":
            yield event(
                "response.output_item.added", output_index=index, item={**item, "summary": []}
            )
            text = item["summary"][0]["text"]
            empty = {"type": "summary_text", "text": ""}
            yield event("response.reasoning_summary_part.added", **at, summary_index=0, part=empty)
            for piece in _pieces(answer, text):
                yield event(
                    "response.reasoning_summary_text.delta",
                    True,
                    **at,
                    summary_index=0,
                    delta=piece,
                )
            yield event("response.reasoning_summary_text.done", **at, summary_index=0, text=text)
            yield event(
                "response.reasoning_summary_part.done",
                **at,
                summary_index=0,
                part=item["summary"][0],
            )
        elif item["type"] == "message":
            added = {**item, "status": "in_progress", "content": []}
            yield event("response.output_item.added", output_index=index, item=added)
            part = item["content"][0]
            at = {**at, "content_index": 0}
            if part["type"] == "output_text":
                yield event("response.content_part.added", **at, part={**part, "text": ""})
                pieces = _pieces(answer, part["text"])
                for number, piece in enumerate(pieces):
                    logprobs = [_token(piece, number)] if answer.logprobs else []
                    yield event(
                        "response.output_text.delta", True, **at, delta=piece, logprobs=logprobs
                    )
                yield event(
                    "response.output_text.done",
                    **at,
                    text=part["text"],
                    logprobs=part.get("logprobs", []),
                )
            else:
                yield event("response.content_part.added", **at, part={**part, "refusal": ""})
                for piece in _pieces(answer, part["refusal"]):
                    yield event("response.refusal.delta", True, **at, delta=piece)
                yield event("response.refusal.done", **at, refusal=part["refusal"])
            yield event("response.content_part.done", **at, part=part)
        else:
            added = {**item, "arguments": "", "status": "in_progress"}
            yield event("response.output_item.added", output_index=index, item=added)
            for piece in _pieces(answer, item["arguments"]):
                yield event("response.function_call_arguments.delta", True, **at, delta=piece)
            yield event("response.function_call_arguments.done", **at, arguments=item["arguments"])
        yield event("response.output_item.done", output_index=index, item=item)
    done = _response(answer, body, items, True, usage=answer.stream_usage)
    yield event("response.completed", response=done)


# -- Anthropic Messages ----------------------------------------------------------------


def _message_blocks(answer: RichAnswer) -> list[Body]:
    first = answer.choices[0]
    blocks: list[Body] = [
        {"type": "thinking", "thinking": answer.reasoning, "signature": answer.signature},
        {
            "type": "text",
            "text": first.content or first.refusal or "",
            "citations": [
                {
                    "type": "char_location",
                    "cited_text": "Engineers design bridges.",
                    "document_index": 0,
                    "document_title": "Handbook",
                    "start_char_index": 0,
                    "end_char_index": 25,
                }
            ],
        },
    ]
    for call_id, name, arguments in _first_calls(answer):
        blocks.append(
            {
                "type": "tool_use",
                "id": f"toolu_{call_id}",
                "name": name,
                "input": json.loads(arguments),
            }
        )
    return blocks


def _message_usage(answer: RichAnswer, output: int) -> Body:
    return {
        "input_tokens": 31,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 5,
        "output_tokens": output,
        "service_tier": "standard",
    }


def _message(answer: RichAnswer, content: list[Body], stop: str | None, usage: Body | None) -> Body:
    message: Body = {
        "id": f"msg_{answer.id}",
        "type": "message",
        "role": "assistant",
        "model": answer.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
    }
    if usage is not None:
        message["usage"] = usage
    return message


def message_whole(answer: RichAnswer, body: Body) -> Body:
    stop = "tool_use" if any(choice.tool_calls for choice in answer.choices) else "end_turn"
    return _message(answer, _message_blocks(answer), stop, _message_usage(answer, 57))


def message_stream(answer: RichAnswer, body: Body) -> Iterator[Frame]:
    def event(payload: Body, piece: bool = False) -> Frame:
        return Frame(_event(payload), piece)

    usage = _message_usage(answer, 1) if answer.stream_usage else None
    yield event({"type": "message_start", "message": _message(answer, [], None, usage)})
    for index, block in enumerate(_message_blocks(answer)):
        at = {"index": index}
        if block["type"] == "thinking":
            start: Body = {"type": "thinking", "thinking": "", "signature": ""}
            yield event({"type": "content_block_start", **at, "content_block": start})
            for piece in _pieces(answer, block["thinking"]):
                delta: Body = {"type": "thinking_delta", "thinking": piece}
                yield event({"type": "content_block_delta", **at, "delta": delta}, True)
            signed = {"type": "signature_delta", "signature": block["signature"]}
            yield event({"type": "content_block_delta", **at, "delta": signed})
        elif block["type"] == "text":
            start = {"type": "text", "text": "", "citations": []}
            yield event({"type": "content_block_start", **at, "content_block": start})
            if index == 1:
                yield event({"type": "ping"})
            for citation in block["citations"]:
                delta = {"type": "citations_delta", "citation": citation}
                yield event({"type": "content_block_delta", **at, "delta": delta})
            for piece in _pieces(answer, block["text"]):
                delta = {"type": "text_delta", "text": piece}
                yield event({"type": "content_block_delta", **at, "delta": delta}, True)
        else:
            start = {**block, "input": {}}
            yield event({"type": "content_block_start", **at, "content_block": start})
            for piece in _pieces(answer, json.dumps(block["input"])):
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield event({"type": "content_block_delta", **at, "delta": delta}, True)
        yield event({"type": "content_block_stop", **at})
    whole = message_whole(answer, body)
    ending: Body = {
        "type": "message_delta",
        "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
    }
    if answer.stream_usage:
        ending["usage"] = {"output_tokens": 57}
    yield event(ending)
    yield event({"type": "message_stop"})


# -- by API --------------------------------------------------------------------------

WHOLE = {
    "chat": chat_whole,
    "completions": completion_whole,
    "responses": response_whole,
    "messages": message_whole,
}
STREAM = {
    "chat": chat_stream,
    "completions": completion_stream,
    "responses": response_stream,
    "messages": message_stream,
}
# The fake's paths, by API.
API_OF_PATH = {
    "/v1/chat/completions": "chat",
    "/v1/completions": "completions",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
}
