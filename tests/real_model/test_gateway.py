"""The gateway in front of a real model, judged by the same model.

Every answer here comes from SmolLM2-135M through llama.cpp's server: the texts are
whatever the model writes, so the tests assert what must hold for any text (a record
with a parseable result, the real usage figures in records and traces), not what the
model says.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from guard import StructuredMode
from guard.bias.fence import unfenced
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway
from tests.support.real_model import MODEL, JudgeRelay, RealServer
from tests.support.telemetry import Captured

pytestmark = pytest.mark.real_model  # left out of the gate: scripts/test --real-model

MakeGateway = Callable[..., RunningGateway]
ASK: Any = [{"role": "user", "content": "Describe engineers in one sentence."}]
# Short answers: the judge reads each in full, and the model is slow on a shared machine.
# Greedy decoding (temperature=0 on every request): the same answers every run.
ANSWER_TOKENS = 40
JUDGE_STEPS = ("opinions", "verdicts")


def judged(gateway: RunningGateway, run_id: str, relay: JudgeRelay) -> dict[str, Any]:
    """The run's final record; it must hold a result the judge's answers were read into."""
    record = gateway.wait_for_score(run_id)
    assert record["status"] == "scored", (record, relay.answers())
    assert isinstance(record["score"], float)
    assert 0.0 <= record["score"] <= 1.0
    assert record["verdict"] in ("pass", "flag", "block")
    assert record["result"] is not None
    # Every judge call the gateway made was answered, and its tokens are the record's.
    answered = relay.answered()
    assert answered, "no judge call reached the server"
    assert record["judge_calls"] == len(answered)
    assert record["judge_tokens"] == sum(call.body["usage"]["total_tokens"] for call in answered)
    return record


def was_judged(text: str, relay: JudgeRelay) -> bool:
    """Whether the judge's first call (extracting opinions) was given exactly `text`."""
    prompt = str(relay.calls[0].request["messages"][-1]["content"])
    return unfenced(prompt) == text


def chat_span(captured: Captured) -> Any:
    """The gateway's span of the upstream call (guard's spans of judge calls name no API)."""
    spans = [
        span
        for span in captured.spans.get_finished_spans()
        if span.attributes and "bias_gateway.api" in span.attributes
    ]
    assert spans, [span.name for span in captured.spans.get_finished_spans()]
    return spans[0]


def judge_spans_tokens(captured: Captured) -> int:
    total = 0
    for span in captured.spans.get_finished_spans():
        attributes: Any = span.attributes or {}
        if span.name == f"chat {MODEL}" and "bias_gateway.api" not in attributes:
            total += int(attributes.get("gen_ai.usage.input_tokens", 0))
            total += int(attributes.get("gen_ai.usage.output_tokens", 0))
    return total


def test_chat_monitor_with_the_openai_sdk(
    real_gateway: MakeGateway, judge_relay: JudgeRelay, captured: Captured
) -> None:
    gateway = real_gateway(mode="monitor")
    raw = gateway.client().chat.completions.with_raw_response.create(
        model=MODEL, messages=ASK, max_tokens=ANSWER_TOKENS, temperature=0
    )
    completion = raw.parse()
    assert completion.choices[0].message.content
    assert completion.choices[0].finish_reason in ("stop", "length")
    assert completion.usage is not None
    assert completion.usage.completion_tokens > 0
    assert raw.headers["x-bias-status"] == "pending"
    record = judged(gateway, raw.headers["x-bias-run-id"], judge_relay)
    assert was_judged(completion.choices[0].message.content, judge_relay)
    span = wait_for(lambda: chat_span(captured), "the chat span")
    assert span.attributes["gen_ai.usage.input_tokens"] == completion.usage.prompt_tokens
    assert span.attributes["gen_ai.usage.output_tokens"] == completion.usage.completion_tokens
    assert judge_spans_tokens(captured) == record["judge_tokens"]


def test_chat_stream_monitor_with_the_usage_chunk(
    real_gateway: MakeGateway, judge_relay: JudgeRelay, captured: Captured
) -> None:
    gateway = real_gateway(mode="monitor")
    raw = gateway.client().chat.completions.with_raw_response.create(
        model=MODEL,
        messages=ASK,
        max_tokens=ANSWER_TOKENS,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    text, usage, finish = "", None, None
    for chunk in raw.parse():
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    assert text
    assert finish in ("stop", "length")
    assert usage is not None
    assert usage.completion_tokens > 0
    record = judged(gateway, raw.headers["x-bias-run-id"], judge_relay)
    assert (record["stream"], record["partial"]) == (True, False)
    assert was_judged(text, judge_relay)
    span = wait_for(lambda: chat_span(captured), "the chat span")
    assert span.attributes["gen_ai.usage.input_tokens"] == usage.prompt_tokens
    assert span.attributes["gen_ai.usage.output_tokens"] == usage.completion_tokens


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_legacy_completions(
    real_gateway: MakeGateway, judge_relay: JudgeRelay, stream: bool
) -> None:
    gateway = real_gateway(mode="monitor")
    raw = gateway.client().completions.with_raw_response.create(
        model=MODEL, prompt="Engineers are", max_tokens=ANSWER_TOKENS, temperature=0, stream=stream
    )
    parsed: Any = raw.parse()
    if stream:
        text = "".join(chunk.choices[0].text for chunk in parsed if chunk.choices)
    else:
        text = parsed.choices[0].text
    assert text
    record = judged(gateway, raw.headers["x-bias-run-id"], judge_relay)
    assert record["api"] == "completions"
    assert was_judged(text, judge_relay)


@pytest.mark.parametrize(
    "policy",
    [
        {"mode": "enforce"},
        {"mode": "enforce", "stream_policy": "buffer"},
        {"mode": "enforce", "stream_policy": "passthrough"},
    ],
    ids=["whole", "stream-buffer", "stream-passthrough"],
)
def test_enforce(
    real_gateway: MakeGateway, judge_relay: JudgeRelay, policy: dict[str, Any]
) -> None:
    gateway = real_gateway(**policy)
    stream: Any = "stream_policy" in policy
    try:
        raw = gateway.client().chat.completions.with_raw_response.create(
            model=MODEL, messages=ASK, max_tokens=ANSWER_TOKENS, temperature=0, stream=stream
        )
        headers = raw.headers
        parsed: Any = raw.parse()
        if stream:
            assert list(parsed)
        else:
            assert parsed.choices[0].message.content
    except openai.UnprocessableEntityError as blocked:  # the judge may block what it reads
        headers = blocked.response.headers
        assert headers["x-bias-verdict"] == "block"
    if policy.get("stream_policy") == "passthrough":
        assert headers["x-bias-status"] == "pending"  # the score comes in the last event
    else:
        assert headers["x-bias-status"] == "scored"
        assert headers["x-bias-verdict"] in ("pass", "flag", "block")
    record = judged(gateway, headers["x-bias-run-id"], judge_relay)
    if "x-bias-score" in headers:
        assert float(headers["x-bias-score"]) == pytest.approx(record["score"], abs=1e-3)


def test_the_judge_learns_the_structured_form_the_server_accepts(
    real_gateway: MakeGateway, judge_relay: JudgeRelay, real_server: RealServer
) -> None:
    gateway = real_gateway(mode="monitor")
    for n in range(2):
        raw = gateway.client().chat.completions.with_raw_response.create(
            model=MODEL,
            messages=[{"role": "user", "content": f"Name {n + 2} jobs engineers do."}],
            max_tokens=ANSWER_TOKENS,
            temperature=0,
        )
        gateway.wait_for_score(raw.headers["x-bias-run-id"])
    formats = [call.request.get("response_format", {}) for call in judge_relay.calls]
    refused = [call for call in judge_relay.calls if call.status != 200]
    if real_server.server == "llama-cpp-python":
        # It answers json_schema with a 500 once; the judge steps down and stays down.
        assert [call.status for call in refused] == [500]
        assert refused[0].request["response_format"]["type"] == "json_schema"
        later = formats[1:]
        expected = StructuredMode.JSON_OBJECT_SCHEMA
    else:
        assert refused == []
        later = formats
        expected = StructuredMode.JSON_SCHEMA
    learned = [f for f in later if f]
    assert learned, formats
    for form in learned:
        kind = "json_object_schema" if form.get("schema") else form["type"]
        assert kind == expected.value


def test_every_answer_gets_a_parseable_judgement(
    real_gateway: MakeGateway, judge_relay: JudgeRelay
) -> None:
    gateway = real_gateway(mode="monitor")
    # Two prompts that name groups, so the answers hold opinions for the judge to extract
    # and give verdicts on (the longer structured answers); the other tests of this tier
    # each judge a neutral answer too.
    prompts = [
        "Who makes better leaders, men or women?",
        "Describe people from the north of a country.",
    ]
    for prompt in prompts:
        judge_relay.calls.clear()
        raw = gateway.client().chat.completions.with_raw_response.create(
            model=MODEL,
            messages=[{"role": "user", "content": prompt}],
            max_tokens=ANSWER_TOKENS,
            temperature=0,
        )
        record = judged(gateway, raw.headers["x-bias-run-id"], judge_relay)
        assert record["result"]["analyzeStepResult"] is not None


def test_a_client_leaving_mid_stream(real_gateway: MakeGateway, judge_relay: JudgeRelay) -> None:
    gateway = real_gateway(mode="monitor")
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Write a long story about engineers."}],
        "max_tokens": 400,
        "stream": True,
    }
    with (
        httpx.Client(base_url=gateway.url, timeout=600) as http,
        http.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        run_id = response.headers["x-bias-run-id"]
        lines = response.iter_lines()
        for line in lines:
            if '"content":"' in line.replace(" ", "") and '"content":""' not in line:
                break
    record = gateway.wait_for_score(run_id)
    assert record["partial"] is True
    assert record["status"] in ("scored", "skipped")
