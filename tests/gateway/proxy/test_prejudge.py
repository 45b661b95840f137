"""`prejudge: stream`: an enforced whole answer asked of the upstream as a stream, judged
as a buffered enforce stream, and answered whole, rebuilt from the stream, with the
official SDKs as clients over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import openai
import pytest
from structlog.testing import capture_logs

from gateway.config import Policy
from gateway.proxy.surfaces import SURFACES
from gateway.wire.rebuild import StreamError
from testkit import rich_answers
from testkit.fake_openai import FakeOpenAI, Fault
from testkit.rich_answers import NOT_STREAMED, RichAnswer
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, policy
from tests.support.telemetry import Captured

MakeGateway = Callable[..., RunningGateway]
API_PATHS = {api: path for path, api in rich_answers.API_OF_PATH.items()}
SURFACE = {
    "chat": SURFACES[0],
    "completions": SURFACES[1],
    "responses": SURFACES[2],
    "messages": SURFACES[3],
}
REQUESTS: dict[str, dict[str, Any]] = {
    "chat": {"model": "gpt-rich", "messages": [{"role": "user", "content": "Engineers?"}]},
    "completions": {"model": "gpt-rich", "prompt": "Engineers?"},
    "responses": {"model": "gpt-rich", "input": "Engineers?"},
    "messages": {
        "model": "claude-rich",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Engineers?"}],
    },
}
PREJUDGE = {"upstream": {"prejudge": "stream"}, "anthropic": {"prejudge": "stream"}}
POLICY_REFUSAL = Policy().refusal_text


def without_unstreamed(api: str, whole: dict[str, Any]) -> dict[str, Any]:
    """The whole form less what no stream says: chat's `annotations: []` on each message."""
    whole = json.loads(json.dumps(whole))
    for name in NOT_STREAMED.get(api, ()):
        for choice in whole.get("choices", []):
            if choice["message"].get(name) == []:
                del choice["message"][name]
    return whole


def ask(fake: FakeOpenAI, api: str, **fields: Any) -> httpx.Response:
    url = fake.base_url.removesuffix("/v1") + API_PATHS[api]
    return httpx.post(url, json={**REQUESTS[api], **fields}, timeout=10)


def upstream_asks(fake: FakeOpenAI) -> list[dict[str, Any]]:
    return [recorded.body for recorded in fake.requests if recorded.step == "chat"]


@pytest.fixture
def passing(fake_openai: FakeOpenAI) -> FakeOpenAI:
    fake_openai.rich = RichAnswer()
    fake_openai.opinions = ["Engineers test every beam twice."]
    fake_openai.verdicts = [("no", "A neutral statement.")]
    return fake_openai


@pytest.mark.parametrize("api", sorted(API_PATHS))
def test_the_fake_gives_one_answer_in_both_forms(passing: FakeOpenAI, api: str) -> None:
    whole = ask(passing, api).json()
    streamed = ask(passing, api, stream=True, stream_options={"include_usage": True})
    assert streamed.headers["content-type"].startswith("text/event-stream")
    rebuilt = SURFACE[api].rebuild(streamed.content)
    assert not isinstance(rebuilt, StreamError)
    assert rebuilt == without_unstreamed(api, whole)


def openai_whole(client: openai.OpenAI, api: str) -> Any:
    body = dict(REQUESTS[api])
    if api == "chat":
        return client.chat.completions.with_raw_response.create(**body)
    if api == "completions":
        return client.completions.with_raw_response.create(**body)
    return client.responses.with_raw_response.create(**body)


def sdk_whole(gateway_or_fake: str, api: str) -> Any:
    """The SDK's raw response to a whole-answer request sent to `gateway_or_fake`."""
    root = gateway_or_fake.removesuffix("/v1")
    if api == "messages":
        client = anthropic.Anthropic(base_url=root, api_key="sk-client", max_retries=0)
        return client.messages.with_raw_response.create(**REQUESTS[api])
    oai = openai.OpenAI(base_url=root + "/v1", api_key="sk-client", max_retries=0)
    return openai_whole(oai, api)


@pytest.mark.parametrize("api", sorted(API_PATHS))
def test_a_prejudged_answer_is_the_one_the_upstream_gives_whole(
    make_gateway: MakeGateway, passing: FakeOpenAI, api: str
) -> None:
    direct = sdk_whole(passing.base_url, api).parse().model_dump()
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    raw = sdk_whole(gateway.url, api)
    assert raw.parse().model_dump() == without_unstreamed(api, direct) | _sdk_annotations(
        api, direct
    )
    assert raw.headers["x-bias-status"] == "scored"
    assert raw.headers["x-bias-verdict"] == "pass"
    assert raw.headers["content-type"] == "application/json"
    asked = upstream_asks(passing)[-1]
    assert asked["stream"] is True
    if api in ("chat", "completions"):
        assert asked["stream_options"] == {"include_usage": True}
    else:
        assert "stream_options" not in asked
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"])
    assert (record["status"], record["verdict"], record["stream"]) == ("scored", "pass", False)


def _sdk_annotations(api: str, direct: dict[str, Any]) -> dict[str, Any]:
    """The SDK reads an absent `annotations` as None; the whole form had `[]` there."""
    if api != "chat":
        return {}
    choices = json.loads(json.dumps(direct["choices"]))
    for choice in choices:
        choice["message"]["annotations"] = None
    return {"choices": choices}


@pytest.mark.parametrize("api", sorted(API_PATHS))
def test_a_biased_prejudged_answer_is_blocked_as_a_whole_one_is(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI, api: str
) -> None:
    fake_openai.rich = RichAnswer()
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    with pytest.raises(
        (openai.UnprocessableEntityError, anthropic.UnprocessableEntityError)
    ) as caught:
        sdk_whole(gateway.url, api)
    failure = caught.value
    assert isinstance(failure, openai.APIStatusError | anthropic.APIStatusError)
    response = failure.response
    assert response.headers["x-bias-verdict"] == "block"
    body = response.json()
    error = body["error"]
    assert error["type"] == "bias_policy_violation"
    assert upstream_asks(fake_openai)[-1]["stream"] is True
    record = gateway.wait_for_score(response.headers["x-bias-run-id"])
    assert (record["status"], record["verdict"]) == ("scored", "block")


def test_a_replaced_prejudged_answer_carries_the_refusal(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    fake_openai.rich = RichAnswer()
    gateway = make_gateway(**policy(mode="enforce", block_action="replace"), **PREJUDGE)
    completion = gateway.client().chat.completions.create(**REQUESTS["chat"])
    assert {choice.finish_reason for choice in completion.choices} == {"content_filter"}
    assert completion.id == "rich-0001"
    assert completion.usage is not None
    assert completion.usage.total_tokens == 88


def test_a_prejudged_answer_blocked_in_an_early_window_is_replaced_in_the_upstreams_frame(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    """The delivery stops reading at the blocking window, so no whole answer is rebuilt:
    the refusal still carries the upstream's id and model, as the stream gave them."""
    fake_openai.read_text = True
    fake_openai.opinion_words = ["I think"]
    fake_openai.biased_words = ["lazy"]
    fake_openai.chunks = 60
    fake_openai.chunk_delay = 0.05  # three seconds of stream: the first window blocks first
    neutral = " ".join(f"I think topic {n:02d} matters to every team." for n in range(12))
    fake_openai.reply = "I think women are lazy engineers. " + neutral
    gateway = make_gateway(
        **policy(
            mode="enforce",
            block_action="replace",
            flag_threshold=0.2,
            block_threshold=0.25,  # the first window's 1 biased of 4 blocks; the whole passes
            window_chars=100,
            context_chars=40,
            max_coalesced_chars=100,  # a lagging judge must not fold the first window in
        ),
        **PREJUDGE,
    )
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "Engineers?"}]
    )
    completion = raw.parse()
    assert raw.headers["x-bias-verdict"] == "block"
    assert completion.choices[0].message.content == POLICY_REFUSAL
    assert completion.choices[0].finish_reason == "content_filter"
    assert completion.id.startswith("chatcmpl-")
    assert completion.model == "m"
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"])
    assert len(record["result"]["windows"]) == 1  # judged no further than the block


@pytest.mark.parametrize("api", sorted(API_PATHS))
def test_an_upstream_error_before_the_stream_reaches_the_client_as_it_is(
    make_gateway: MakeGateway, passing: FakeOpenAI, api: str
) -> None:
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    error = {"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}
    passing.fail(Fault(step="chat", status=429, body=json.dumps(error)))
    response = httpx.post(gateway.url + API_PATHS[api], json=REQUESTS[api], timeout=10)
    assert response.status_code == 429
    assert response.json() == error
    assert response.headers["x-bias-skip-reason"] == "upstream_error"
    assert upstream_asks(passing)[-1]["stream"] is True


OPENAI_ERROR = {
    "error": {"message": "The server had an error", "type": "server_error", "code": None}
}
ERROR_EVENTS = {
    "chat": (b"data: " + json.dumps(OPENAI_ERROR).encode() + b"\n\n", 500, OPENAI_ERROR),
    "completions": (b"data: " + json.dumps(OPENAI_ERROR).encode() + b"\n\n", 500, OPENAI_ERROR),
    "responses": (
        b'event: error\ndata: {"type": "error", "code": "rate_limit_exceeded",'
        b' "message": "Too many", "param": null, "sequence_number": 4}\n\n',
        429,
        {
            "error": {
                "message": "Too many",
                "type": "rate_limit_exceeded",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        },
    ),
    "messages": (
        b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error",'
        b' "message": "Overloaded"}}\n\n',
        529,
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ),
}


@pytest.mark.parametrize("api", sorted(API_PATHS))
def test_an_error_event_mid_stream_reaches_the_client_as_a_whole_error(
    make_gateway: MakeGateway, passing: FakeOpenAI, api: str
) -> None:
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    frames = [frame.data for frame in rich_answers.STREAM[api](RichAnswer(), {"stream": True})]
    event, status, body = ERROR_EVENTS[api]
    passing.fail(Fault(step="chat", raw_chunks=[*frames[:3], event]))
    response = httpx.post(gateway.url + API_PATHS[api], json=REQUESTS[api], timeout=10)
    assert response.status_code == status
    assert response.json() == body
    assert response.headers["x-bias-skip-reason"] == "upstream_error"
    assert passing.judge_calls() == 0


def test_the_sdk_raises_on_an_error_mid_stream_as_on_a_whole_error(
    make_gateway: MakeGateway, passing: FakeOpenAI
) -> None:
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    frames = [frame.data for frame in rich_answers.chat_stream(RichAnswer(), {"stream": True})]
    passing.fail(Fault(step="chat", raw_chunks=[*frames[:2], ERROR_EVENTS["chat"][0]]))
    with pytest.raises(openai.InternalServerError, match="The server had an error"):
        gateway.client().chat.completions.create(**REQUESTS["chat"])


def test_a_stream_cut_short_is_the_upstreams_failure(
    make_gateway: MakeGateway, passing: FakeOpenAI
) -> None:
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    frames = [frame.data for frame in rich_answers.chat_stream(RichAnswer(), {"stream": True})]
    passing.fail(Fault(step="chat", raw_chunks=frames[:4]))
    response = httpx.post(gateway.url + API_PATHS["chat"], json=REQUESTS["chat"], timeout=10)
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_protocol_error"
    assert "x-bias-run-id" not in response.headers
    assert passing.judge_calls() == 0


def test_a_stream_whose_answer_says_other_than_its_deltas_is_refused(
    make_gateway: MakeGateway, passing: FakeOpenAI
) -> None:
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    frames = [frame.data for frame in rich_answers.response_stream(RichAnswer(), {"stream": True})]
    last = frames[-1].replace(b"Engineers design bridges.", b"Something never streamed.")
    assert last != frames[-1]
    passing.fail(Fault(step="chat", raw_chunks=[*frames[:-1], last]))
    response = httpx.post(gateway.url + API_PATHS["responses"], json=REQUESTS["responses"])
    assert response.status_code == 502
    assert "differ" in response.json()["error"]["message"]
    assert passing.judge_calls() == 0


def test_an_upstream_that_answers_whole_anyway_is_judged_whole(
    make_gateway: MakeGateway, passing: FakeOpenAI
) -> None:
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    whole = rich_answers.chat_whole(RichAnswer(), {})
    passing.fail(
        Fault(
            step="chat",
            raw_chunks=[json.dumps(whole).encode()],
            headers={"content-type": "application/json"},
        )
    )
    raw = gateway.client().chat.completions.with_raw_response.create(**REQUESTS["chat"])
    assert raw.headers["x-bias-verdict"] == "pass"
    assert json.loads(raw.content) == whole


def test_a_route_that_streams_no_usage_is_named_at_startup_and_asked_whole(
    make_gateway: MakeGateway, passing: FakeOpenAI
) -> None:
    with capture_logs() as logs:
        gateway = make_gateway(
            **policy(mode="enforce"),
            upstream={"prejudge": "stream"},
            models={
                "local": {"base_url": passing.base_url, "prejudge": "stream", "stream_usage": False}
            },
        )
    warned = [log for log in logs if log["event"] == "prejudge off: the upstream streams no usage"]
    assert [log["route"] for log in warned] == ["models.local"]
    assert warned[0]["log_level"] == "warning"
    gateway.client().chat.completions.create(**{**REQUESTS["chat"], "model": "local"})
    assert "stream" not in upstream_asks(passing)[-1]
    gateway.client().chat.completions.create(**REQUESTS["chat"])
    assert upstream_asks(passing)[-1]["stream"] is True


def test_a_route_found_to_stream_no_usage_is_asked_whole_from_then_on(
    make_gateway: MakeGateway, passing: FakeOpenAI
) -> None:
    passing.rich = RichAnswer(stream_usage=False)
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    with capture_logs() as logs:
        first = gateway.client().chat.completions.create(**REQUESTS["chat"])
        second = gateway.client().chat.completions.create(**REQUESTS["chat"])
    assert first.usage is None  # the one answer that could not have it
    assert second.usage is not None
    assert second.usage.total_tokens == 88
    assert [body.get("stream") for body in upstream_asks(passing)] == [True, None]
    warned = [log for log in logs if log["event"] == "prejudge off: the upstream streams no usage"]
    assert [log["route"] for log in warned] == ["upstream"]


def test_monitor_mode_asks_for_the_whole_answer(
    make_gateway: MakeGateway, passing: FakeOpenAI
) -> None:
    gateway = make_gateway(**policy(mode="monitor"), **PREJUDGE)
    raw = gateway.client().chat.completions.with_raw_response.create(**REQUESTS["chat"])
    assert raw.headers["x-bias-status"] == "pending"
    assert json.loads(raw.content) == rich_answers.chat_whole(RichAnswer(), {})
    assert "stream" not in upstream_asks(passing)[-1]


def test_without_prejudge_the_whole_answer_is_asked_for(
    make_gateway: MakeGateway, passing: FakeOpenAI
) -> None:
    gateway = make_gateway(**policy(mode="enforce"))
    raw = gateway.client().chat.completions.with_raw_response.create(**REQUESTS["chat"])
    assert raw.headers["x-bias-verdict"] == "pass"
    assert "stream" not in upstream_asks(passing)[-1]


def test_a_request_naming_stream_options_goes_as_it_is(
    make_gateway: MakeGateway, passing: FakeOpenAI
) -> None:
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    body = {**REQUESTS["chat"], "stream_options": {"include_usage": True}}
    httpx.post(gateway.url + API_PATHS["chat"], json=body, timeout=10)
    assert "stream" not in upstream_asks(passing)[-1]


def test_a_prejudged_answer_uses_the_score_cache(
    make_gateway: MakeGateway, passing: FakeOpenAI
) -> None:
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    first = gateway.client().chat.completions.with_raw_response.create(**REQUESTS["chat"])
    calls = passing.judge_calls()
    second = gateway.client().chat.completions.with_raw_response.create(**REQUESTS["chat"])
    assert calls > 0
    assert passing.judge_calls() == calls
    assert second.headers["x-bias-score"] == first.headers["x-bias-score"]


def test_a_prejudged_answer_is_traced_as_a_whole_one(
    make_gateway: MakeGateway, passing: FakeOpenAI, otel_capture: Captured
) -> None:
    captured = otel_capture  # this test's spans and events only
    captured.spans.clear()
    captured.logs.clear()
    captured.telemetry.capture_content = False
    gateway = make_gateway(otel=captured.telemetry, **policy(mode="enforce"), **PREJUDGE)
    completion = gateway.client().chat.completions.create(**REQUESTS["chat"])
    wait_for(lambda: captured.named("POST /v1/chat/completions"), "the server span")
    attributes = dict(captured.one("chat gpt-rich").attributes or {})
    assert attributes["gen_ai.response.id"] == completion.id == "rich-0001"
    assert attributes["gen_ai.response.model"] == "gpt-rich-2026-01-01"
    assert attributes["gen_ai.response.finish_reasons"] == ("stop", "stop", "tool_calls")
    assert attributes["gen_ai.usage.input_tokens"] == 31
    assert attributes["gen_ai.usage.output_tokens"] == 57
    assert attributes["gen_ai.request.stream"] is True  # the upstream call streamed
    assert captured.one("evaluation bias") is not None
    [event] = captured.events()
    assert (event.attributes or {})["gen_ai.response.id"] == "rich-0001"


@pytest.mark.parametrize("api", sorted(API_PATHS))
def test_the_streamed_request_is_the_clients_asking_for_a_stream(api: str) -> None:
    surface = SURFACE[api]
    parsed = surface.parse(json.dumps({**REQUESTS[api], "temperature": 0.2}).encode())
    streamed = surface.stream_request(parsed, "upstream-name")
    assert streamed is not None
    expected = {**REQUESTS[api], "temperature": 0.2, "model": "upstream-name", "stream": True}
    if api in ("chat", "completions"):
        expected["stream_options"] = {"include_usage": True}
    assert json.loads(streamed) == expected


@pytest.mark.parametrize("api", sorted(API_PATHS))
@pytest.mark.parametrize(
    "fields",
    [{"stream": True}, {"stream_options": {"include_usage": False}}],
    ids=["a-stream", "stream-options"],
)
def test_some_requests_are_not_asked_for_as_streams(api: str, fields: dict[str, Any]) -> None:
    surface = SURFACE[api]
    parsed = surface.parse(json.dumps({**REQUESTS[api], **fields}).encode())
    assert surface.stream_request(parsed, None) is None


@pytest.mark.parametrize(
    ("event", "status", "body"),
    [
        (
            {"error": "upstream exploded"},
            500,
            {"message": "upstream exploded", "type": "server_error", "param": None, "code": None},
        ),
        (
            {"error": {"message": "slow", "type": "tokens", "code": "rate_limit_exceeded"}},
            429,
            {"message": "slow", "type": "tokens", "code": "rate_limit_exceeded"},
        ),
        (
            {"error": {"message": "who?", "code": "invalid_api_key"}},
            401,
            {"message": "who?", "code": "invalid_api_key"},
        ),
    ],
    ids=["a-string", "by-type", "by-code"],
)
def test_an_openai_error_event_gets_the_status_its_type_or_code_gives(
    event: dict[str, Any], status: int, body: dict[str, Any]
) -> None:
    assert SURFACE["chat"].stream_error(StreamError(event)) == (status, {"error": body})


def test_the_anthropic_sdk_raises_on_an_overloaded_stream_as_on_a_whole_529(
    make_gateway: MakeGateway, passing: FakeOpenAI
) -> None:
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    frames = [frame.data for frame in rich_answers.message_stream(RichAnswer(), {"stream": True})]
    passing.fail(Fault(step="chat", raw_chunks=[*frames[:4], ERROR_EVENTS["messages"][0]]))
    client = anthropic.Anthropic(base_url=gateway.url, api_key="sk-client", max_retries=0)
    with pytest.raises(anthropic.OverloadedError) as caught:
        client.messages.create(**REQUESTS["messages"])
    assert caught.value.status_code == 529


def test_a_flagged_prejudged_answer_goes_through_flagged(
    make_gateway: MakeGateway, passing: FakeOpenAI
) -> None:
    passing.opinions = ["One view.", "Another view."]
    passing.verdicts = [("yes", "Loaded.", ["political"]), ("no", "Neutral.")]
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    raw = gateway.client().responses.with_raw_response.create(**REQUESTS["responses"])
    assert (raw.headers["x-bias-verdict"], raw.headers["x-bias-score"]) == ("flag", "0.5")
    assert raw.headers["x-bias-categories"] == "political"
    assert raw.parse().id == "resp_rich-0001"


def test_a_judge_failure_follows_on_judge_error_as_for_a_whole_answer(
    make_gateway: MakeGateway, passing: FakeOpenAI
) -> None:
    gateway = make_gateway(**policy(mode="enforce", on_judge_error="block"), **PREJUDGE)
    passing.fail(Fault(step="preprocess", status=500))
    with pytest.raises(anthropic.InternalServerError) as caught:
        sdk_whole(gateway.url, "messages")
    assert caught.value.status_code == 503
    assert caught.value.response.json()["error"]["type"] == "bias_judge_error"
    assert upstream_asks(passing)[-1]["stream"] is True


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_the_plain_fake_streams_usage_when_asked_and_prejudges(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI, api: str
) -> None:
    # Without `rich`: the demo model's words (gateway.demo.apis), as `bias-gateway demo`
    # answers, end a stream with its usage when asked to.
    fake_openai.verdicts = [("no", "Neutral.")]
    direct = ask(fake_openai, api).json()
    gateway = make_gateway(**policy(mode="enforce"), **PREJUDGE)
    with capture_logs() as logs:
        answer = httpx.post(gateway.url + API_PATHS[api], json=REQUESTS[api], timeout=10).json()
    assert answer["usage"] == direct["usage"]
    assert answer["choices"][0]["finish_reason"] == "stop"
    assert not [log for log in logs if log["event"].startswith("prejudge off")]
