"""Streaming through the gateway: monitor, enforce buffer and passthrough, disconnects."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest

from guard.bias.fence import unfenced
from testkit.fake_openai import FakeOpenAI, Fault
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
MESSAGES: list[Any] = [{"role": "user", "content": "Tell me about engineers."}]
BIASED = "Engineers from the north are lazy, everyone knows it."
REQUEST = {"model": "m", "messages": MESSAGES, "stream": True}


def stream_text(gateway: RunningGateway) -> tuple[str, Any]:
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="m", messages=MESSAGES, stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in raw.parse() if chunk.choices)
    return text, raw.headers


def test_monitor_relays_bytes_unchanged_then_scores(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway()

    with (
        gateway.http() as http,
        http.stream("POST", "/v1/chat/completions", json=REQUEST) as response,
    ):
        received = b"".join(response.iter_raw())
        headers = response.headers

    assert received == b"".join(fake_openai.sent)
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["x-bias-status"] == "pending"
    record = gateway.wait_for_score(headers["x-bias-run-id"])
    assert record["status"] == "scored"
    assert record["score"] == 1
    assert record["partial"] is False
    assert record["stream"] is True
    assert record["response_id"].startswith("chatcmpl-")
    analyze = next(r for r in fake_openai.requests if r.step == "analyze")
    assert BIASED in analyze.body["messages"][1]["content"]


def test_monitor_with_the_sdk(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    fake_openai.reply = BIASED
    text, headers = stream_text(make_gateway())
    assert text == BIASED
    assert headers["x-bias-status"] == "pending"


def test_enforce_buffer_puts_the_score_in_headers(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.verdicts = [("no", "fine")]
    text, headers = stream_text(make_gateway(**policy(mode="enforce")))
    assert text == fake_openai.reply
    assert headers["x-bias-status"] == "scored"
    assert headers["x-bias-score"] == "0"
    assert headers["x-bias-verdict"] == "pass"


def test_enforce_buffer_replays_the_upstream_bytes(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.verdicts = [("no", "fine")]
    gateway = make_gateway(**policy(mode="enforce"))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=REQUEST)
    assert response.content == b"".join(fake_openai.sent)


def test_enforce_buffer_blocks_with_422_before_any_byte(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway(**policy(mode="enforce"))
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        gateway.client().chat.completions.create(model="m", messages=MESSAGES, stream=True)
    body: Any = caught.value.body
    assert body["code"] == "bias_threshold_exceeded"
    assert body["bias"]["score"] == 1


def test_enforce_buffer_replace_streams_the_refusal(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(mode="enforce", block_action="replace", refusal_text="Nope."))
    chunks = list(
        gateway.client().chat.completions.create(model="m", messages=MESSAGES, stream=True)
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Nope."
    assert chunks[-1].choices[0].finish_reason == "content_filter"


def test_enforce_passthrough_sends_a_trailing_bias_chunk(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.opinions = ["a", "b"]
    fake_openai.verdicts = [("yes", "r"), ("no", "r")]
    gateway = make_gateway(**policy(mode="enforce", stream_policy="passthrough"))

    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=REQUEST)
    events = [line[6:] for line in response.text.split("\n") if line.startswith("data: ")]

    assert events[-1] == "[DONE]"
    bias = json.loads(events[-2])
    assert bias["choices"] == []
    assert bias["bias"]["score"] == 0.5
    assert bias["bias"]["verdict"] == "flag"
    assert bias["bias"]["status"] == "scored"
    assert bias["bias"]["run_id"] == response.headers["x-bias-run-id"]
    text = "".join(
        (json.loads(event)["choices"] or [{"delta": {}}])[0]["delta"].get("content") or ""
        for event in events[:-2]
    )
    assert text == fake_openai.reply


def test_enforce_passthrough_block_ends_in_an_error_frame(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(mode="enforce", stream_policy="passthrough"))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=REQUEST)
    assert "[DONE]" not in response.text
    last = json.loads(response.text.strip().split("\n")[-1][6:])
    assert last["error"]["code"] == "bias_threshold_exceeded"

    stream = gateway.client().chat.completions.create(model="m", messages=MESSAGES, stream=True)
    with pytest.raises(openai.APIError, match="blocked by the bias policy"):
        list(stream)


def test_passthrough_judge_failure_with_block_policy(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="preprocess", status=401))
    gateway = make_gateway(
        **policy(mode="enforce", stream_policy="passthrough", on_judge_error="block")
    )
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=REQUEST)
    last = json.loads(response.text.strip().split("\n")[-1][6:])
    assert last["error"]["code"] == "bias_judge_unavailable"
    assert "[DONE]" not in response.text


def test_buffer_judge_failure_with_block_policy_is_503(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="analyze", status=401))
    gateway = make_gateway(**policy(mode="enforce", on_judge_error="block"))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=REQUEST)
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-bias-status"] == "error"


def test_client_disconnect_cancels_upstream_and_scores_the_partial_text(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = "one two three four five six seven eight nine ten"
    fake_openai.chunks = 10
    fake_openai.chunk_delay = 0.15
    gateway = make_gateway()

    with (
        gateway.http() as http,
        http.stream("POST", "/v1/chat/completions", json=REQUEST) as response,
    ):
        run_id = response.headers["x-bias-run-id"]
        lines = response.iter_lines()
        received = [next(lines) for _ in range(4)]  # role chunk, blank, first piece, blank
    assert received[0].startswith("data: ")

    record = gateway.wait_for_score(run_id)
    assert record["partial"] is True
    assert record["status"] == "scored"
    wait_for(lambda: fake_openai.stream_endings, "the upstream stream to end")
    assert fake_openai.stream_endings == ["cancelled"]
    analyze = next(r for r in fake_openai.requests if r.step == "analyze")
    judged = unfenced(analyze.body["messages"][1]["content"]) or ""
    assert judged.startswith("one")
    assert "ten" not in judged


def test_upstream_breaking_off_mid_stream(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="chat", disconnect_after=2))
    gateway = make_gateway()
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=REQUEST)
    last = json.loads(response.text.strip().split("\n")[-1][6:])
    assert last["error"]["code"] == "upstream_protocol_error"
    record = gateway.wait_for_score(response.headers["x-bias-run-id"])
    assert record["partial"] is True


def test_enforce_buffer_upstream_breaking_off_is_502(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="chat", disconnect_after=1))
    gateway = make_gateway(**policy(mode="enforce"))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=REQUEST)
    assert response.status_code == 502
    assert fake_openai.judge_calls() == 0


def test_upstream_error_status_on_a_stream_passes_through(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="chat", status=429, body='{"error": {"message": "slow down"}}'))
    gateway = make_gateway()
    with pytest.raises(openai.RateLimitError, match="slow down"):
        gateway.client().chat.completions.create(model="m", messages=MESSAGES, stream=True)


def test_off_mode_stream_is_untouched(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    gateway = make_gateway(**policy(mode="off"))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=REQUEST)
    assert response.content == b"".join(fake_openai.sent)
    assert "x-bias-status" not in response.headers
    assert fake_openai.judge_calls() == 0


async def test_async_sdk_stream(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    fake_openai.verdicts = [("no", "fine")]
    gateway = make_gateway(**policy(mode="enforce", stream_policy="passthrough"))
    async with gateway.async_client() as client:
        stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        chunks = [chunk async for chunk in stream]
    assert (
        "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == fake_openai.reply
    )
    bias = chunks[-1].model_extra["bias"]  # type: ignore[index]
    assert bias["verdict"] == "pass"
