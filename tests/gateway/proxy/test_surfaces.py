"""Every scored surface end to end, with the official SDKs: the Responses API and legacy
Completions through `openai`, Anthropic Messages through `anthropic`.

Each test runs once per surface; `Api` hides how its SDK is called and read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import pytest

from testkit.fake_openai import FakeOpenAI, Fault
from tests.support.gateways import RunningGateway, policy
from tests.support.surfaces import Api, Completions, Messages, Responses, bias_of

MakeGateway = Callable[..., RunningGateway]
BIASED = "Engineers from the north are lazy, everyone knows it."
NEUTRAL = "Engineers design and build things."
REFUSAL = "I can't provide that response because it did not meet the content policy."


APIS = [Responses(), Completions(), Messages()]


@pytest.fixture(params=APIS, ids=[api.name for api in APIS])
def api(request: pytest.FixtureRequest) -> Api:
    chosen: Api = request.param
    return chosen


def upstream_calls(fake: FakeOpenAI, api: Api) -> list[Any]:
    return [r for r in fake.requests if r.step == "chat" and r.path == api.path]


# -- non-streaming -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verdicts", "score", "verdict"),
    [
        ([("no", "fine")], "0", "pass"),
        ([("yes", "b"), ("no", "f")], "0.5", "flag"),
    ],
)
def test_enforce_passes_and_flags_with_headers(
    api: Api,
    fake_openai: FakeOpenAI,
    make_gateway: MakeGateway,
    verdicts: list[tuple[str, str]],
    score: str,
    verdict: str,
) -> None:
    fake_openai.reply = BIASED
    fake_openai.verdicts = verdicts
    gateway = make_gateway(**policy(mode="enforce"))
    reply = api.create(gateway)
    assert reply.text == BIASED
    assert reply.headers["x-bias-status"] == "scored"
    assert reply.headers["x-bias-score"] == score
    assert reply.headers["x-bias-verdict"] == verdict
    record = gateway.wait_for_score(reply.headers["x-bias-run-id"])
    assert record["api"] == api.name
    assert record["verdict"] == verdict
    assert record["response_id"]  # the upstream's id, read from this surface's shape
    analyze = next(r for r in fake_openai.requests if r.step == "analyze")
    assert BIASED in analyze.body["messages"][1]["content"]


def test_enforce_block_raises_the_sdks_422(
    api: Api, fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway(**policy(mode="enforce"))
    with pytest.raises(api.blocked) as caught:
        api.create(gateway)
    error = api.sdk_error(caught.value)
    assert error["type"] == "bias_policy_violation"
    assert error["code"] == "bias_threshold_exceeded"
    assert error["bias"]["score"] == 1
    assert error["bias"]["threshold"] == 0.8
    assert BIASED not in json.dumps(error)
    run_id = error["bias"]["run_id"]
    assert gateway.wait_for_score(run_id)["verdict"] == "block"


def test_enforce_replace_answers_the_refusal_in_the_surfaces_shape(
    api: Api, fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway(**policy(mode="enforce", block_action="replace"))
    reply = api.create(gateway)
    assert reply.text == REFUSAL
    assert reply.finish == api.replaced_finish
    assert reply.headers["x-bias-verdict"] == "block"


@pytest.mark.parametrize(("on_judge_error", "blocked"), [("allow", False), ("block", True)])
def test_judge_failure_follows_on_judge_error(
    api: Api,
    fake_openai: FakeOpenAI,
    make_gateway: MakeGateway,
    on_judge_error: str,
    blocked: bool,
) -> None:
    fake_openai.reply = BIASED
    fake_openai.fail(Fault(step="preprocess", status=500))
    gateway = make_gateway(**policy(mode="enforce", on_judge_error=on_judge_error))
    if not blocked:
        reply = api.create(gateway)
        assert reply.text == BIASED
        assert reply.headers["x-bias-status"] == "error"
        return
    with pytest.raises(api.unavailable) as caught:
        api.create(gateway)
    assert getattr(caught.value, "status_code", None) == 503
    error = api.sdk_error(caught.value)
    assert (error["type"], error["code"]) == ("bias_judge_error", "bias_judge_unavailable")


def test_monitor_answers_at_once_and_scores_in_the_background(
    api: Api, fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway()
    reply = api.create(gateway)
    assert reply.text == BIASED
    assert reply.headers["x-bias-status"] == "pending"
    record = gateway.wait_for_score(reply.headers["x-bias-run-id"])
    assert (record["status"], record["verdict"], record["mode"]) == ("scored", "block", "monitor")
    assert record["api"] == api.name
    assert record["stream"] is False


def test_an_unreadable_answer_is_a_502_in_enforce(
    api: Api, fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="chat", body=json.dumps({"unexpected": True})))
    gateway = make_gateway(**policy(mode="enforce"))
    with gateway.http() as http:
        response = http.post(api.path, json=api.http_body())
    assert response.status_code == 502
    assert api.error_of(response.json())["code"] == "upstream_protocol_error"
    assert response.headers["x-bias-skip-reason"] == "unreadable"


# -- streaming -----------------------------------------------------------------------


def test_enforce_buffered_stream_is_scored_then_replayed(
    api: Api, fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = NEUTRAL
    fake_openai.verdicts = [("no", "fine")]
    gateway = make_gateway(**policy(mode="enforce"))
    reply = api.stream(gateway)
    assert reply.text == NEUTRAL
    assert reply.headers["x-bias-status"] == "scored"
    assert reply.headers["x-bias-verdict"] == "pass"
    record = gateway.wait_for_score(reply.headers["x-bias-run-id"])
    assert (record["api"], record["stream"], record["partial"]) == (api.name, True, False)


def test_enforce_buffered_stream_block_is_the_sdks_422(
    api: Api, fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway(**policy(mode="enforce"))
    with pytest.raises(api.blocked):
        api.stream(gateway)


def test_enforce_buffered_stream_replace_streams_the_refusal(
    api: Api, fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway(**policy(mode="enforce", block_action="replace"))
    reply = api.stream(gateway)
    assert reply.text == REFUSAL
    assert reply.finish == api.replaced_finish
    assert BIASED not in reply.text


def test_passthrough_stream_goes_live_and_ends_with_the_score(
    api: Api, fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = NEUTRAL
    fake_openai.verdicts = [("no", "fine")]
    gateway = make_gateway(**policy(mode="enforce", stream_policy="passthrough"))
    reply = api.stream(gateway)
    assert reply.text == NEUTRAL
    assert reply.headers["x-bias-status"] == "pending"
    bias = bias_of(reply.last_event)
    assert bias["status"] == "scored"
    assert bias["verdict"] == "pass"
    assert bias["run_id"] == reply.headers["x-bias-run-id"]


def test_passthrough_block_ends_the_stream_with_an_error_the_sdk_raises(
    api: Api, fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway(**policy(mode="enforce", stream_policy="passthrough"))
    with pytest.raises(api.stream_error) as caught:
        api.stream(gateway)
    error = api.sdk_error(caught.value)
    assert error["code"] == "bias_threshold_exceeded"
    assert gateway.wait_for_score(error["bias"]["run_id"])["verdict"] == "block"


def test_monitor_stream_is_relayed_byte_for_byte_then_scored(
    api: Api, fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway()
    with (
        gateway.http() as http,
        http.stream("POST", api.path, json=api.http_body(stream=True)) as response,
    ):
        received = b"".join(response.iter_raw())
        headers = response.headers
    assert received == b"".join(fake_openai.sent)
    assert headers["x-bias-status"] == "pending"
    record = gateway.wait_for_score(headers["x-bias-run-id"])
    assert (record["status"], record["score"], record["api"]) == ("scored", 1, api.name)
    assert record["partial"] is False
    analyze = next(r for r in fake_openai.requests if r.step == "analyze")
    assert BIASED in analyze.body["messages"][1]["content"]


def test_a_stream_cut_by_the_upstream_is_scored_as_partial(
    api: Api, fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    fake_openai.fail(Fault(step="chat", disconnect_after=2))
    gateway = make_gateway()
    with (
        gateway.http() as http,
        http.stream("POST", api.path, json=api.http_body(stream=True)) as response,
    ):
        b"".join(response.iter_raw())
        run_id = response.headers["x-bias-run-id"]
    record = gateway.wait_for_score(run_id)
    assert record["partial"] is True
    assert record["status"] == "scored"


@pytest.mark.parametrize("stream_policy", ["buffer", "passthrough"])
def test_the_anthropic_stream_helper_reads_a_passed_stream(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, stream_policy: str
) -> None:
    """`client.messages.stream()` rebuilds the message from the events, as tools do."""
    fake_openai.reply = NEUTRAL
    fake_openai.verdicts = [("no", "fine")]
    gateway = make_gateway(**policy(mode="enforce", stream_policy=stream_policy))
    client = Messages().client(gateway)
    with client.messages.stream(
        model="claude-test",
        max_tokens=100,
        messages=[{"role": "user", "content": "Tell me about engineers."}],
    ) as stream:
        assert stream.get_final_text() == NEUTRAL
        run_id = stream.response.headers["x-bias-run-id"]
    assert gateway.wait_for_score(run_id)["verdict"] == "pass"


def test_the_responses_stream_helper_reads_a_passed_stream(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    """`client.responses.stream()` needs `response.completed`, which passthrough holds back."""
    fake_openai.reply = NEUTRAL
    fake_openai.verdicts = [("no", "fine")]
    gateway = make_gateway(**policy(mode="enforce", stream_policy="passthrough"))
    with gateway.client().responses.stream(
        model="gpt-test", input="Tell me about engineers."
    ) as stream:
        final = stream.get_final_response()
    assert final.output_text == NEUTRAL
    assert final.status == "completed"


def test_the_anthropic_upstream_gets_its_own_key_and_version(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(mode="off"))
    Messages().create(gateway)
    with gateway.http() as http:
        body = Messages().http_body()
        http.post("/v1/messages", json=body, headers={"anthropic-version": "2024-01-01"})
        http.post("/v1/messages", json=body)
    sdk, pinned, bare = upstream_calls(fake_openai, Messages())
    for call in (sdk, pinned, bare):
        assert call.headers["x-api-key"] == "sk-ant-upstream-secret"
        assert "authorization" not in call.headers  # the client's key stays here
        assert call.body["model"] == "claude-test"
    assert (
        sdk.headers["anthropic-version"]
        == anthropic.Anthropic(api_key="x", base_url="http://unused").default_headers[
            "anthropic-version"
        ]
    )
    assert pinned.headers["anthropic-version"] == "2024-01-01"
    assert bare.headers["anthropic-version"] == "2023-06-01"  # the configured default


def test_anthropic_client_auth_is_forwarded_when_configured(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(
        anthropic={"api_key": None, "forward_client_auth": True}, **policy(mode="off")
    )
    body = Messages().http_body()
    with gateway.http() as http:  # SDK releases send the key either way
        http.post("/v1/messages", json=body, headers={"authorization": "Bearer sk-client"})
        http.post("/v1/messages", json=body, headers={"x-api-key": "sk-own"})
    bearer, keyed = upstream_calls(fake_openai, Messages())
    assert bearer.headers["authorization"] == "Bearer sk-client"
    assert keyed.headers["x-api-key"] == "sk-own"
    assert "authorization" not in keyed.headers


def test_a_gateway_key_is_accepted_as_x_api_key_and_never_forwarded(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(api_keys=["gw-key-0123456789"], **policy(mode="off"))
    client = anthropic.Anthropic(base_url=gateway.url, api_key="gw-key-0123456789", max_retries=0)
    client.messages.create(
        model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
    )
    call = upstream_calls(fake_openai, Messages())[0]
    assert call.headers["x-api-key"] == "sk-ant-upstream-secret"
    bad = anthropic.Anthropic(base_url=gateway.url, api_key="wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        bad.messages.create(
            model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
        )
    assert caught.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/v1/responses", {"input": "hi"}, "model"),
        ("/v1/responses", {"model": "m", "input": 3}, "input"),
        ("/v1/responses", {"model": "m", "input": "hi", "background": True}, "background"),
        ("/v1/completions", {"model": "m"}, "prompt"),
        ("/v1/completions", {"model": "m", "prompt": "x", "stream": "yes"}, "stream"),
        ("/v1/messages", {"model": "m", "max_tokens": 5}, "messages"),
        ("/v1/messages", {"model": "m", "messages": ["hi"]}, "messages"),
    ],
)
def test_bad_requests_name_the_field(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, path: str, body: dict[str, Any], param: str
) -> None:
    gateway = make_gateway(**policy(mode="enforce"))
    with gateway.http() as http:
        response = http.post(path, json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error.get("param", param) == param  # Anthropic's shape has no param
    assert param in error["message"] or f"`{param}`" in error["message"]
    assert fake_openai.requests == []


def test_a_litellm_route_is_refused_outside_chat(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(models={"via-litellm": {"litellm": "openai/gpt-4o-mini"}})
    with gateway.http() as http:
        response = http.post("/v1/responses", json={"model": "via-litellm", "input": "hi"})
    assert response.status_code == 400
    assert "/v1/chat/completions only" in response.json()["error"]["message"]
