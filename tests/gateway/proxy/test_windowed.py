"""`stream_policy: windowed` and the pre-judged buffer, end to end: the fake upstream
streams a long answer, the fake judge reads each window's text, the official SDKs read
what the gateway sends."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest

from testkit.fake_openai import FakeOpenAI, Fault
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, policy
from tests.support.streams import (
    BIASED_SENTENCE,
    answer,
    delivered,
    neutral,
    raw_stream,
    windowed,
)
from tests.support.surfaces import MESSAGES, Api, Chat, Completions, Messages, Responses, bias_of

MakeGateway = Callable[..., RunningGateway]


SURFACES = [Chat(), Responses(), Completions(), Messages()]


@pytest.fixture(params=SURFACES, ids=[api.name for api in SURFACES])
def api(request: pytest.FixtureRequest) -> Api:
    surface: Api = request.param
    return surface


def test_delivered_reads_a_word_split_across_events() -> None:
    chunks = [{"choices": [{"index": 0, "delta": {"content": part}}]} for part in ("la", "zy")]
    received = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks).encode()
    assert b"lazy" not in received
    assert delivered(received) == "lazy"


def test_a_passing_answer_reaches_every_sdk_window_by_window(
    api: Api, reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    reading_judge.reply = answer(12)
    gateway = make_gateway(**windowed())
    reply = api.stream(gateway)
    assert reply.text == reading_judge.reply
    assert reply.headers["x-bias-status"] == "pending"
    bias = bias_of(reply.last_event)
    assert (bias["status"], bias["verdict"], bias["score"]) == ("scored", "pass", 0)
    record = gateway.wait_for_score(reply.headers["x-bias-run-id"])
    windows = record["result"]["windows"]
    assert len(windows) >= 4
    assert windows[0]["start"] == 0
    assert windows[-1]["end"] == len(reading_judge.reply)
    assert all(w["verdict"] == "pass" and w["judge_calls"] == 2 for w in windows)
    assert all(w["judge_tokens"] > 0 and w["judge_ms"] > 0 for w in windows)
    # Each opinion once, in Mastra's shape, over the whole answer.
    assert len(record["result"]["preprocessStepResult"]["opinions"]) == 12
    assert record["judge_calls"] == 2 * len(windows)
    assert (record["status"], record["verdict"], record["partial"]) == ("scored", "pass", False)


def test_released_events_are_the_upstreams_bytes(
    api: Api, reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    reading_judge.reply = answer(8)
    gateway = make_gateway(**windowed())
    received, _ = raw_stream(gateway, api)
    sent = reading_judge.sent
    # Every event but the last, byte for byte and in order; the last is re-sent with the
    # score after the trailer, as passthrough sends it.
    assert received.startswith(b"".join(sent[:-1]))
    assert len(received) > len(b"".join(sent))


def test_a_blocking_window_never_reaches_the_client(
    api: Api, reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    text = answer(12, biased_at=6)
    reading_judge.reply = text
    # 1 biased opinion of the 7 before it blocks; of the answer's 12 it would only flag.
    gateway = make_gateway(**windowed(flag_threshold=0.05, block_threshold=0.1))
    received, headers = raw_stream(gateway, api)
    assert "lazy" not in delivered(received)
    record = gateway.wait_for_score(headers["x-bias-run-id"])
    assert record["verdict"] == "block"
    windows = record["result"]["windows"]
    assert windows[-1]["verdict"] == "block"
    assert all(w["verdict"] == "pass" for w in windows[:-1])
    # Nothing past the passed windows went out: the blocking window's text is withheld.
    blocking = windows[-1]
    assert text[blocking["start"] : blocking["end"]].strip() not in delivered(received)
    if windows[:-1]:
        assert delivered(received) == text[: windows[-2]["end"]]  # every passed window
    with pytest.raises(api.stream_error) as caught:
        api.stream(gateway)
    assert api.sdk_error(caught.value)["code"] == "bias_threshold_exceeded"


def test_hold_none_goes_live_and_cuts_at_once(
    reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    text = answer(30, biased_at=2)
    reading_judge.reply = text
    reading_judge.chunk_delay = 0.05  # the upstream takes 3 s to finish
    gateway = make_gateway(**windowed(hold="none", flag_threshold=0.1, block_threshold=0.2))
    received, headers = raw_stream(gateway, Chat())
    assert "topic 01" in delivered(received)  # live: the first window went out unjudged
    assert "topic 29" not in delivered(received)  # cut long before the upstream's end
    assert b"bias_threshold_exceeded" in received
    record = gateway.wait_for_score(headers["x-bias-run-id"])
    assert record["verdict"] == "block"
    assert "cancelled" in reading_judge.stream_endings


def test_min_opinions_keeps_one_early_opinion_from_blocking(
    reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    """One biased opinion among twelve flags the whole answer; with `min_opinions` the
    first window's prefix (one opinion of two, biased) does not block it."""
    reading_judge.reply = answer(12, biased_at=0)
    thresholds = {"window_chars": 50, "flag_threshold": 0.05, "block_threshold": 0.5}
    strict = make_gateway(**windowed(**thresholds))
    with pytest.raises(openai.APIError):
        Chat().stream(strict)
    lenient = make_gateway(**windowed(**thresholds, min_opinions=3))
    reply = Chat().stream(lenient)
    assert reply.text == reading_judge.reply
    assert bias_of(reply.last_event)["verdict"] == "flag"


def test_a_short_answer_is_judged_whole_as_today(
    api: Api, reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    reading_judge.reply = answer(1)
    gateway = make_gateway(**windowed(window_chars=800))
    reply = api.stream(gateway)
    assert reply.text == reading_judge.reply
    record = gateway.wait_for_score(reply.headers["x-bias-run-id"])
    assert "windows" not in record["result"]
    assert reading_judge.steps().count("preprocess") == 1
    assert CONTEXT_MARK not in str(reading_judge.requests[-1].body)


CONTEXT_MARK = "The CONTEXT below"


def test_windows_after_the_first_carry_context_and_one_window_judges_at_a_time(
    reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    reading_judge.reply = answer(20)
    reading_judge.judge_delay = 0.05
    reading_judge.judge_opinion_delay = 0.01
    gateway = make_gateway(**windowed(max_inflight_windows=1, max_coalesced_chars=400))
    reply = Chat().stream(gateway)
    assert reply.text == reading_judge.reply
    record = gateway.wait_for_score(reply.headers["x-bias-run-id"])
    windows = record["result"]["windows"]
    assert reading_judge.judge_peak_in_flight == 1
    prompts = [
        r.body["messages"][-1]["content"] for r in reading_judge.requests if r.step == "preprocess"
    ]
    assert CONTEXT_MARK not in prompts[0]
    assert all(CONTEXT_MARK in prompt for prompt in prompts[1:])
    # The text sent to the judge: the answer once, plus the contexts.
    judged = sum(w["end"] - w["start"] for w in windows)
    assert judged == len(reading_judge.reply)
    assert all(w["end"] - w["start"] <= 400 + 60 for w in windows)
    # The stream outran the one judgement at a time: the windows waiting coalesced.
    assert len(windows) < len(reading_judge.reply) // 100 - 2
    assert max(w["end"] - w["start"] for w in windows) > 200


@pytest.mark.parametrize("pipeline", ["faithful", "single"])
def test_both_judge_pipelines_judge_windows(
    reading_judge: FakeOpenAI, make_gateway: MakeGateway, pipeline: str
) -> None:
    reading_judge.reply = answer(12, biased_at=1)
    gateway = make_gateway(
        judge={"pipeline": pipeline}, **windowed(flag_threshold=0.1, block_threshold=0.2)
    )
    received, headers = raw_stream(gateway, Chat())
    assert "lazy" not in delivered(received)
    record = gateway.wait_for_score(headers["x-bias-run-id"])
    assert (record["verdict"], record["result"]["pipeline"]) == ("block", pipeline)
    assert record["result"]["windows"][-1]["verdict"] == "block"
    steps = set(reading_judge.steps()) - {"chat", "reason"}
    assert steps == ({"assess"} if pipeline == "single" else {"preprocess", "analyze"})


@pytest.mark.parametrize("max_windows", [1, 3])
def test_max_windows_bounds_the_judgements(
    reading_judge: FakeOpenAI, make_gateway: MakeGateway, max_windows: int
) -> None:
    reading_judge.reply = answer(30)
    gateway = make_gateway(**windowed(max_windows=max_windows))
    reply = Chat().stream(gateway)
    assert reply.text == reading_judge.reply
    result = gateway.wait_for_score(reply.headers["x-bias-run-id"])["result"]
    assert reading_judge.steps().count("preprocess") == max_windows
    if max_windows == 1:
        assert "windows" not in result  # one judgement: the whole text, as without windows
        return
    windows = result["windows"]
    assert len(windows) == max_windows
    assert windows[-1]["end"] == len(reading_judge.reply)


def test_a_client_that_leaves_ends_the_judgements_and_the_record_says_partial(
    reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    reading_judge.reply = answer(40)
    reading_judge.chunk_delay = 0.03
    gateway = make_gateway(**windowed(hold="none"))
    with (
        gateway.http() as http,
        http.stream("POST", "/v1/chat/completions", json=Chat().http_body(stream=True)) as response,
    ):
        run_id = response.headers["x-bias-run-id"]
        received = b""
        for piece in response.iter_raw():
            received += piece
            if b"topic 05" in received:
                break
    record = gateway.wait_for_score(run_id)
    assert record["partial"] is True
    wait_for(lambda: "cancelled" in reading_judge.stream_endings, "the upstream to be closed")


def test_a_judge_failure_under_on_judge_error_block_ends_the_stream(
    reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    reading_judge.reply = answer(12)
    reading_judge.fail(Fault(step="preprocess", status=500))
    gateway = make_gateway(**windowed(on_judge_error="block"))
    received, headers = raw_stream(gateway, Chat())
    assert b"bias_judge_unavailable" in received
    assert "topic 11" not in delivered(received)
    assert gateway.wait_for_score(headers["x-bias-run-id"])["status"] == "error"


@pytest.mark.parametrize("prejudge_buffer", [True, False])
def test_a_buffered_stream_is_judged_in_windows_and_sent_whole(
    api: Api, reading_judge: FakeOpenAI, make_gateway: MakeGateway, prejudge_buffer: bool
) -> None:
    reading_judge.reply = answer(12)
    gateway = make_gateway(
        **policy(
            mode="enforce",
            stream_policy="buffer",
            window_chars=100,
            prejudge_buffer=prejudge_buffer,
        )
    )
    received, headers = raw_stream(gateway, api)
    assert received == b"".join(reading_judge.sent)  # whole, byte for byte, as today
    assert headers["x-bias-verdict"] == "pass"
    record = gateway.wait_for_score(headers["x-bias-run-id"])
    if prejudge_buffer:
        assert len(record["result"]["windows"]) >= 4
    else:
        assert "windows" not in record["result"]


def test_a_buffered_stream_that_blocks_is_refused_whole(
    api: Api, reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    reading_judge.reply = answer(12, biased_at=1)
    gateway = make_gateway(
        **policy(
            mode="enforce",
            stream_policy="buffer",
            window_chars=100,
            flag_threshold=0.1,
            block_threshold=0.2,
        )
    )
    with gateway.http() as http:
        response = http.post(api.path, json=api.http_body(stream=True))
    assert response.status_code == 422
    assert b"lazy" not in response.content
    assert api.error_of(response.json())["code"] == "bias_threshold_exceeded"


def _chunk(delta: dict[str, Any] | None, **fields: Any) -> bytes:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-raw",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": None}],
        **fields,
    }
    return b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"


def test_tool_calls_usage_and_comments_flow_with_their_window(
    reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    call = {"index": 0, "id": "call_1", "type": "function"}
    chunks = [
        b": a keep-alive comment\n\n",
        _chunk({"role": "assistant", "content": ""}),
        *(_chunk({"content": neutral(n)}) for n in range(8)),
        _chunk({"tool_calls": [{**call, "function": {"name": "lookup", "arguments": "{}"}}]}),
        _chunk({"content": neutral(8)}),
        _chunk(None, usage={"prompt_tokens": 5, "completion_tokens": 90, "total_tokens": 95}),
        b"data: [DONE]\r\n\r\n",
    ]
    reading_judge.fail(Fault(step="chat", raw_chunks=chunks, raw_delay=0.01))
    gateway = make_gateway(**windowed())
    with (
        gateway.http() as http,
        http.stream("POST", "/v1/chat/completions", json=Chat().http_body(stream=True)) as response,
    ):
        received = b"".join(response.iter_raw())
        run_id = response.headers["x-bias-run-id"]
    assert received.startswith(b"".join(chunks[:-1]))  # CRLFs and the comment kept
    assert received.endswith(b"data: [DONE]\n\n")
    windows = gateway.wait_for_score(run_id)["result"]["windows"]
    assert len(windows) >= 2

    reading_judge.fail(Fault(step="chat", raw_chunks=chunks))
    stream = gateway.client().chat.completions.create(model="m", messages=MESSAGES, stream=True)
    parsed = list(stream)
    assert any(c.choices and c.choices[0].delta.tool_calls for c in parsed)
    assert any(c.usage is not None and c.usage.completion_tokens == 90 for c in parsed)


def test_an_upstream_that_breaks_off_ends_the_stream_with_an_error_and_a_partial_record(
    reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    reading_judge.reply = answer(20)
    reading_judge.fail(Fault(step="chat", disconnect_after=40))
    gateway = make_gateway(**windowed())
    received, headers = raw_stream(gateway, Chat())
    assert b"upstream" in received.rsplit(b"\n\ndata: ", 1)[-1]  # the last event: an error
    assert b"[DONE]" not in received
    record = gateway.wait_for_score(headers["x-bias-run-id"])
    assert record["partial"] is True
    assert record["status"] == "scored"


def test_windows_pass_a_judge_of_a_second_a_call_that_answers_429_under_load(
    reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    """Three windows judged at once ask for six calls; the judge allows two a second and
    takes a second each: the 429s are waited out (capped), nothing times out, and the
    client gets the whole answer once every window passed."""
    reading_judge.reply = answer(8)
    reading_judge.judge_delay = 1.0
    reading_judge.judge_max_rps = 2
    gateway = make_gateway(**windowed(), judge={"max_pause": 1.0})
    reply = Chat().stream(gateway)
    assert reply.text == reading_judge.reply
    assert bias_of(reply.last_event)["verdict"] == "pass"
    record = gateway.wait_for_score(reply.headers["x-bias-run-id"])
    assert (record["status"], record["verdict"]) == ("scored", "pass")
    assert len(record["result"]["windows"]) >= 3
    assert reading_judge.rate_limited > 0


def test_two_choices_stream_window_by_window_and_reach_the_sdk_whole(
    reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    other = " ".join(f"I think colour {n:02d} suits every office." for n in range(9))
    reading_judge.replies = [answer(12), other]
    gateway = make_gateway(store={"capture_content": True}, **windowed())
    stream = gateway.client().chat.completions.create(
        model="m", messages=MESSAGES, stream=True, n=2
    )
    texts: dict[int, list[str]] = {0: [], 1: []}
    for chunk in stream:
        for choice in chunk.choices:
            texts[choice.index].append(choice.delta.content or "")
    assert ["".join(texts[0]), "".join(texts[1])] == reading_judge.replies
    run_id = stream.response.headers["x-bias-run-id"]
    record = gateway.wait_for_score(run_id)
    assert record["verdict"] == "pass"
    windows = record["result"]["windows"]
    assert len(windows) >= 4  # both texts, cut in windows
    # Each choice is scored on its own, and the result is the worst one's (both pass:
    # the first). Its opinions are whole sentences: the choices take turns, so when one
    # ends a sentence the other is mid-sentence, and its part waits for its own end.
    opinions = record["result"]["preprocessStepResult"]["opinions"]
    assert opinions == [neutral(n).strip() for n in range(12)]


def test_a_biased_second_choice_blocks_before_its_window_goes_out(
    reading_judge: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    other = [f" I think colour {n:02d} suits every office." for n in range(12)]
    other[6] = BIASED_SENTENCE
    reading_judge.replies = [answer(12), "".join(other).strip()]
    # Each choice is scored on its own: 1 biased opinion of the 7 or so before it blocks
    # (windows judged one by one, not joined while the upstream outruns the judge).
    gateway = make_gateway(
        **windowed(flag_threshold=0.05, block_threshold=0.1, max_coalesced_chars=100)
    )
    body = Chat().http_body(stream=True) | {"n": 2}
    with (
        gateway.http() as http,
        http.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        received, headers = b"".join(response.iter_raw()), response.headers
    assert "lazy" not in delivered(received)
    assert b"bias_threshold_exceeded" in received
    record = gateway.wait_for_score(headers["x-bias-run-id"])
    assert record["verdict"] == "block"
    assert record["result"]["windows"][-1]["verdict"] == "block"
