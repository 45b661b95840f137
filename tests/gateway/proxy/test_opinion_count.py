"""Padding cannot dilute a verdict, end to end: one biased opinion among ten neutral ones
scores 0.1, under every threshold, and is still flagged by the shipped policy
(`flag_biased_opinions: 1`) and blocked by `block_biased_opinions: 1`, whole, as a
buffered stream and as a windowed stream, read by the official `openai` SDK."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest

from testkit.fake_openai import FakeOpenAI
from tests.support.gateways import RunningGateway, policy
from tests.support.streams import answer
from tests.support.surfaces import bias_of

MakeGateway = Callable[..., RunningGateway]
MESSAGES: list[Any] = [{"role": "user", "content": "Tell me about engineers."}]
# One biased opinion, padded with nine neutral ones: Mastra's ratio is 1/10.
PADDED = answer(10, biased_at=4)
BLOCKED_WHY = "1 biased opinion is at or above block_biased_opinions (1)"

WHOLE = {"mode": "enforce"}
BUFFERED = {"mode": "enforce", "stream_policy": "buffer", "window_chars": 100}
WINDOWED = {"mode": "enforce", "stream_policy": "windowed", "window_chars": 100}


@pytest.fixture
def padded(fake_openai: FakeOpenAI) -> FakeOpenAI:
    """The upstream answers PADDED; the judge reads it: each "I think" sentence is an
    opinion, biased when it says "lazy"."""
    fake_openai.read_text = True
    fake_openai.opinion_words = ["I think"]
    fake_openai.biased_words = ["lazy"]
    fake_openai.chunks = 40
    fake_openai.reply = PADDED
    return fake_openai


def whole(gateway: RunningGateway) -> tuple[str, Any]:
    raw = gateway.client().chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    return raw.parse().choices[0].message.content or "", raw.headers


def streamed(gateway: RunningGateway) -> tuple[str, Any, Any]:
    """The text, the headers and the last chunk of a streamed answer."""
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="m", messages=MESSAGES, stream=True
    )
    parts: list[str] = []
    last = None
    for chunk in raw.parse():
        parts.extend(choice.delta.content or "" for choice in chunk.choices)
        last = chunk
    return "".join(parts), raw.headers, last


def assert_flagged(gateway: RunningGateway, headers: Any) -> dict[str, Any]:
    assert headers["x-bias-status"] in ("scored", "pending")
    record = gateway.wait_for_score(headers["x-bias-run-id"])
    assert (record["status"], record["score"], record["verdict"]) == ("scored", 0.1, "flag")
    assert record["biased_opinions"] == 1
    return record


def assert_refusal(error: Any) -> None:
    body = error.body
    assert body["code"] == "bias_threshold_exceeded"
    assert BLOCKED_WHY in body["message"]
    assert "score" not in body["message"]  # 0.1 is far under the block threshold
    bias = body["bias"]
    # The whole answer's 0.1, or a prefix's (one of the opinions so far): under 0.8.
    assert bias["score"] < bias["threshold"] == 0.8
    assert (bias["biased_opinions"], bias["biased_opinions_threshold"]) == (1, 1)


def test_the_padded_answer_scores_under_every_threshold_and_passes_without_the_rule(
    padded: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(**WHOLE, flag_biased_opinions=None))
    text, headers = whole(gateway)
    assert text == PADDED
    assert (headers["x-bias-score"], headers["x-bias-verdict"]) == ("0.1", "pass")
    assert headers["x-bias-biased-opinions"] == "1"


def test_a_whole_padded_answer_is_flagged_by_the_shipped_policy(
    padded: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(**WHOLE))
    text, headers = whole(gateway)
    assert text == PADDED  # flagged, not withheld
    assert (headers["x-bias-score"], headers["x-bias-verdict"]) == ("0.1", "flag")
    assert headers["x-bias-biased-opinions"] == "1"
    assert_flagged(gateway, headers)


def test_a_whole_padded_answer_is_blocked_at_one_biased_opinion(
    padded: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(**WHOLE, block_biased_opinions=1))
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        whole(gateway)
    assert "lazy" not in caught.value.response.text
    assert caught.value.response.headers["x-bias-biased-opinions"] == "1"
    assert_refusal(caught.value)
    record = gateway.wait_for_score(caught.value.response.headers["x-bias-run-id"])
    assert (record["verdict"], record["biased_opinions"]) == ("block", 1)


def test_a_buffered_padded_stream_is_flagged_by_the_shipped_policy(
    padded: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(**BUFFERED))
    text, headers, _ = streamed(gateway)
    assert text == PADDED
    assert (headers["x-bias-verdict"], headers["x-bias-biased-opinions"]) == ("flag", "1")
    record = assert_flagged(gateway, headers)
    # Judged in windows (the buffer is pre-judged): the prefix that took the biased
    # opinion in was flagged, those before it passed.
    verdicts = [window["verdict"] for window in record["result"]["windows"]]
    assert len(verdicts) > 1
    assert verdicts[0] == "pass"
    assert verdicts[-1] == "flag"
    assert record["result"]["windows"][-1]["biased_opinions"] == 1


def test_a_buffered_padded_stream_is_refused_whole_at_one_biased_opinion(
    padded: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(**BUFFERED, block_biased_opinions=1))
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        streamed(gateway)
    assert "lazy" not in caught.value.response.text
    assert_refusal(caught.value)


def test_a_windowed_padded_stream_is_flagged_by_the_shipped_policy(
    padded: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(**WINDOWED))
    text, headers, last = streamed(gateway)
    assert text == PADDED
    bias = bias_of(last)
    assert (bias["status"], bias["score"], bias["verdict"]) == ("scored", 0.1, "flag")
    assert bias["biased_opinions"] == 1
    assert_flagged(gateway, headers)


def test_a_windowed_padded_stream_is_cut_before_its_biased_window(
    padded: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(**WINDOWED, block_biased_opinions=1))
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="m", messages=MESSAGES, stream=True
    )
    parts: list[str] = []

    def read() -> None:
        for chunk in raw.parse():
            parts.extend(choice.delta.content or "" for choice in chunk.choices)

    with pytest.raises(openai.APIError) as caught:
        read()
    delivered = "".join(parts)
    assert "lazy" not in delivered
    assert "topic 00" in delivered  # the windows before the biased one went out
    assert PADDED.startswith(delivered)
    assert_refusal(caught.value)
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"])
    assert (record["verdict"], record["biased_opinions"]) == ("block", 1)
    windows = record["result"]["windows"]
    assert windows[-1]["verdict"] == "block"
    assert all(window["verdict"] == "pass" for window in windows[:-1])


def test_two_biased_opinions_among_twenty_block_at_two(
    padded: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    text = answer(20, biased_at=3).replace("topic 15 matters", "lazy people matter")
    padded.reply = text
    gateway = make_gateway(**policy(**WHOLE, block_biased_opinions=2))
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        whole(gateway)
    assert "2 biased opinions are at or above block_biased_opinions (2)" in caught.value.message
    body: Any = caught.value.body
    assert body["bias"]["score"] == 0.1


def test_among_choices_the_worst_verdict_decides_not_the_highest_score(
    padded: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    """Choice 0 scores 0.5 on one biased opinion of two (flag); choice 1 scores 0.1 on
    two of twenty, which `block_biased_opinions: 2` blocks. Choice 1 decides."""
    few = "I think women are lazy engineers. I think topic 00 matters to every team."
    many = answer(20, biased_at=3).replace("topic 15 matters", "lazy people matter")
    padded.replies = [few, many]
    gateway = make_gateway(**policy(**WHOLE, block_biased_opinions=2))
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        gateway.client().chat.completions.create(model="m", messages=MESSAGES, n=2)
    body: Any = caught.value.body
    assert (body["bias"]["score"], body["bias"]["biased_opinions"]) == (0.1, 2)
    record = gateway.wait_for_score(caught.value.response.headers["x-bias-run-id"])
    assert (record["verdict"], record["score"], record["biased_opinions"]) == ("block", 0.1, 2)
    # Under the score alone choice 0 (0.5) would decide, and only flag.
    flagged = make_gateway(**policy(**WHOLE))
    raw = flagged.client().chat.completions.with_raw_response.create(
        model="m", messages=MESSAGES, n=2
    )
    assert (raw.headers["x-bias-verdict"], raw.headers["x-bias-score"]) == ("flag", "0.5")
