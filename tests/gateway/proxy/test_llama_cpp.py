"""The gateway in front of llama.cpp's server, replayed: the fake upstream and judge answer
with the exact bytes a real llama.cpp server sent (tests/support/llama_cpp.py), so each
way they differ from the fake's own answers is checked on every run, without the model.

The differences, one test each: a first chunk with a null content and a role, a last
chunk with an empty delta and llama.cpp's `timings`, a usage chunk with no choices;
`finish_reason: length`; ids of its own making (legacy Completions' chunks carry
`chatcmpl-` ids); keep-alive comments (a bare `:`) before the first chunk; and its
error bodies (a numeric `code`, its own `type`, a refusal of a prompt past the context).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from guard.bias.fence import unfenced
from testkit.fake_openai import FakeOpenAI, Fault
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, policy
from tests.support.llama_cpp import SHAPES, frames
from tests.support.telemetry import Captured

MakeGateway = Callable[..., RunningGateway]
SERVERS = sorted(SHAPES)
MESSAGES: Any = [{"role": "user", "content": "Describe engineers in one sentence."}]


@pytest.fixture
def captured(otel_capture: Captured) -> Captured:
    otel_capture.spans.clear()
    return otel_capture


def answer(server: str, name: str) -> bytes:
    return SHAPES[server].calls[name].answer


def events(stream: bytes) -> list[dict[str, Any]]:
    """The JSON events of a captured stream, keep-alive comments and [DONE] left out."""
    found = []
    for frame in frames(stream):
        for line in frame.decode().splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                found.append(json.loads(line.removeprefix("data: ")))
    return found


def chat_text(stream: bytes) -> str:
    return "".join(
        choice["delta"].get("content") or ""
        for event in events(stream)
        for choice in event["choices"]
    )


def judged_text(fake: FakeOpenAI) -> str:
    """The text the fake judge was given to extract opinions from."""
    prompt = next(r for r in fake.requests if r.step == "preprocess").body["messages"][-1]
    return unfenced(str(prompt["content"])) or ""


def replay_stream(fake: FakeOpenAI, stream: bytes) -> None:
    fake.fail(Fault(step="chat", raw_chunks=frames(stream)))


def upstream_span(captured: Captured) -> Any:
    spans = [
        s for s in captured.spans.get_finished_spans() if "bias_gateway.api" in (s.attributes or {})
    ]
    assert len(spans) == 1, [s.name for s in captured.spans.get_finished_spans()]
    return spans[0]


@pytest.mark.parametrize("server", SERVERS)
def test_a_stream_with_its_usage_chunk(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, captured: Captured, server: str
) -> None:
    stream = answer(server, "chat_stream_usage")
    usage_event = events(stream)[-1]
    assert usage_event["choices"] == []  # what is replayed
    assert "usage" in usage_event
    replay_stream(fake_openai, stream)
    gateway = make_gateway(otel=captured.telemetry)
    with gateway.http() as http:
        response = http.post(
            "/v1/chat/completions",
            json={"model": "m", "messages": MESSAGES, "stream": True,
                  "stream_options": {"include_usage": True}},
        )  # fmt: skip
    assert response.content == stream  # monitor relays the server's bytes as they came
    record = gateway.wait_for_score(response.headers["x-bias-run-id"])
    assert (record["status"], record["partial"]) == ("scored", False)
    assert judged_text(fake_openai) == chat_text(stream)
    span = wait_for(lambda: upstream_span(captured), "the upstream span")
    usage = usage_event["usage"]
    assert span.attributes["gen_ai.usage.input_tokens"] == usage["prompt_tokens"]
    assert span.attributes["gen_ai.usage.output_tokens"] == usage["completion_tokens"]
    assert span.attributes["gen_ai.response.id"] == usage_event["id"]
    assert list(span.attributes["gen_ai.response.finish_reasons"]) == ["length"]


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("mode", ["monitor", "enforce"])
def test_keepalive_comments_before_the_first_chunk(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, server: str, mode: str
) -> None:
    stream = answer(server, "chat_stream_keepalive")
    assert stream.startswith(b":\n\n")  # what is replayed
    replay_stream(fake_openai, stream)
    fake_openai.verdicts = [("no", "A description.")]
    gateway = make_gateway(**policy(mode=mode))
    reply = gateway.client().chat.completions.with_raw_response.create(
        model="m", messages=MESSAGES, stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in reply.parse() if c.choices)
    assert text == chat_text(stream)
    record = gateway.wait_for_score(reply.headers["x-bias-run-id"])
    assert (record["status"], record["partial"]) == ("scored", False)
    assert judged_text(fake_openai) == text


@pytest.mark.parametrize("server", SERVERS)
def test_a_whole_answer_with_timings(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, captured: Captured, server: str
) -> None:
    body = answer(server, "chat")
    expected = json.loads(body)
    fake_openai.fail(
        Fault(step="chat", body=body.decode(), headers={"content-type": "application/json"})
    )
    gateway = make_gateway(otel=captured.telemetry)
    reply = gateway.client().chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    completion = reply.parse()
    assert completion.id == expected["id"]
    assert completion.choices[0].message.content == expected["choices"][0]["message"]["content"]
    assert completion.choices[0].finish_reason == "length"
    record = gateway.wait_for_score(reply.headers["x-bias-run-id"])
    assert record["status"] == "scored"
    span = wait_for(lambda: upstream_span(captured), "the upstream span")
    assert span.attributes["gen_ai.usage.input_tokens"] == expected["usage"]["prompt_tokens"]
    assert span.attributes["gen_ai.usage.output_tokens"] == expected["usage"]["completion_tokens"]
    assert span.attributes["gen_ai.response.id"] == expected["id"]


@pytest.mark.parametrize("server", SERVERS)
def test_a_legacy_completions_stream(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, server: str
) -> None:
    stream = answer(server, "completions_stream")
    replay_stream(fake_openai, stream)
    gateway = make_gateway()
    reply = gateway.client().completions.with_raw_response.create(
        model="m", prompt="Engineers are", stream=True
    )
    text = "".join(chunk.choices[0].text for chunk in reply.parse() if chunk.choices)
    assert text == "".join(e["choices"][0]["text"] for e in events(stream) if e["choices"])
    record = gateway.wait_for_score(reply.headers["x-bias-run-id"])
    assert (record["status"], record["api"]) == ("scored", "completions")
    assert judged_text(fake_openai) == text


@pytest.mark.parametrize("server", SERVERS)
def test_the_upstream_refusing_a_prompt_past_its_context(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, server: str
) -> None:
    refusal = SHAPES[server].calls["past_context"]
    fake_openai.fail(Fault(step="chat", status=refusal.status, body=refusal.answer.decode()))
    gateway = make_gateway(**policy(mode="enforce"))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json={"model": "m", "messages": MESSAGES})
    assert response.status_code == refusal.status
    assert response.json()["error"]["message"] == json.loads(refusal.answer)["error"]["message"]
    assert fake_openai.judge_calls() == 0


@pytest.mark.parametrize("server", SERVERS)
def test_the_judge_refusing_a_prompt_past_its_context_keeps_its_structured_form(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, server: str
) -> None:
    refusal = SHAPES[server].calls["past_context"]
    fake_openai.fail(Fault(step="preprocess", status=refusal.status, body=refusal.answer.decode()))
    gateway = make_gateway()
    client = gateway.client()
    first = client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    assert gateway.wait_for_score(first.headers["x-bias-run-id"])["status"] == "error"
    fake_openai.reply = "Another answer."
    second = client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    assert gateway.wait_for_score(second.headers["x-bias-run-id"])["status"] == "scored"
    asked = [r for r in fake_openai.requests if r.step in ("preprocess", "analyze")]
    forms = [r.body["response_format"]["type"] for r in asked]
    assert set(forms) == {"json_schema"}  # the refusal was not taken for a format's
