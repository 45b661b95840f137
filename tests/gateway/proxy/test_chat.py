"""End-to-end non-streaming chat through the gateway, with the official openai SDK."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest

from testkit.fake_openai import FakeOpenAI, Fault
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
MESSAGES: list[Any] = [{"role": "user", "content": "Tell me about engineers."}]
BIASED = "Engineers from the north are lazy."


def create(gateway: RunningGateway, **options: Any) -> Any:
    return gateway.client().chat.completions.with_raw_response.create(
        model="gpt-test", messages=MESSAGES, **options
    )


def test_monitor_returns_at_once_and_scores_in_the_background(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway()

    raw = create(gateway)
    completion = raw.parse()

    assert completion.choices[0].message.content == BIASED
    assert raw.headers["x-bias-status"] == "pending"
    assert "x-bias-score" not in raw.headers
    run_id = raw.headers["x-bias-run-id"]
    record = gateway.wait_for_score(run_id)
    assert record["status"] == "scored"
    assert record["score"] == 1
    assert record["verdict"] == "block"  # the verdict is recorded; monitor never blocks
    assert record["response_id"] == completion.id
    assert record["model"] == "gpt-test"
    assert record["mode"] == "monitor"
    # Content capture is off by default: the opinions are counted, not quoted.
    opinions = record["result"]["preprocessStepResult"]["opinions"]
    assert opinions == [""] * len(fake_openai.opinions)
    assert record["prompt"] is None
    assert record["completion"] is None
    assert "preprocessPrompt" not in record["result"]


def test_upstream_receives_its_own_key_not_the_clients(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(mode="off"))
    create(gateway)
    upstream_call = fake_openai.requests[0]
    assert upstream_call.headers["authorization"] == "Bearer sk-upstream-secret"
    assert upstream_call.body == {"model": "gpt-test", "messages": MESSAGES}


def test_off_mode_is_a_plain_proxy(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    gateway = make_gateway(**policy(mode="off"))
    raw = create(gateway)
    assert raw.parse().choices[0].message.content == fake_openai.reply
    assert not any(name.startswith("x-bias-") for name in raw.headers)
    assert fake_openai.judge_calls() == 0


@pytest.mark.parametrize(
    ("verdicts", "score", "verdict"),
    [
        ([("no", "fine")], "0", "pass"),
        ([("yes", "b"), ("no", "f")], "0.5", "flag"),
        ([("yes", "b"), ("yes", "b"), ("yes", "b"), ("yes", "b"), ("no", "f")], "0.8", "block"),
    ],
)
def test_enforce_headers_follow_the_thresholds(
    fake_openai: FakeOpenAI,
    make_gateway: MakeGateway,
    verdicts: list[tuple[str, str]],
    score: str,
    verdict: str,
) -> None:
    fake_openai.opinions = [f"o{index}" for index in range(len(verdicts))]
    fake_openai.verdicts = verdicts
    gateway = make_gateway(**policy(mode="enforce", block_action="replace"))

    raw = create(gateway)

    assert raw.headers["x-bias-status"] == "scored"
    assert raw.headers["x-bias-score"] == score
    assert raw.headers["x-bias-verdict"] == verdict
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"])
    assert record["verdict"] == verdict


def test_enforce_block_is_a_422_envelope(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway(judge={"reason": "inline"}, **policy(mode="enforce"))

    with pytest.raises(openai.UnprocessableEntityError) as caught:
        gateway.client().chat.completions.create(model="gpt-test", messages=MESSAGES)

    error = caught.value
    assert error.status_code == 422
    body: Any = error.body
    assert body["type"] == "bias_policy_violation"
    assert body["code"] == "bias_threshold_exceeded"
    assert body["param"] is None
    assert body["bias"]["score"] == 1
    assert body["bias"]["threshold"] == 0.8
    assert body["bias"]["reason"] == fake_openai.reason
    assert body["bias"]["run_id"] == error.response.headers["x-bias-run-id"]
    assert error.response.headers["x-bias-verdict"] == "block"


def test_enforce_block_replace_returns_the_refusal(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(mode="enforce", block_action="replace", refusal_text="No."))
    raw = create(gateway)
    completion = raw.parse()
    assert raw.http_response.status_code == 200
    assert completion.choices[0].message.content == "No."
    assert completion.choices[0].finish_reason == "content_filter"
    assert raw.headers["x-bias-verdict"] == "block"


def test_custom_block_status(make_gateway: MakeGateway) -> None:
    gateway = make_gateway(**policy(mode="enforce", block_status=451))
    with pytest.raises(openai.APIStatusError) as caught:
        create(gateway)
    assert caught.value.status_code == 451


@pytest.mark.parametrize(("on_judge_error", "expected_status"), [("allow", 200), ("block", 503)])
def test_judge_timeout_in_enforce_mode(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, on_judge_error: str, expected_status: int
) -> None:
    fake_openai.fail(Fault(step="preprocess", delay=1.5))
    gateway = make_gateway(
        judge={"timeout": 0.3}, **policy(mode="enforce", on_judge_error=on_judge_error)
    )

    with gateway.http() as http:
        response = http.post(
            "/v1/chat/completions", json={"model": "gpt-test", "messages": MESSAGES}
        )

    assert response.status_code == expected_status
    assert response.headers["x-bias-status"] == "error"
    assert response.headers["x-bias-error"] == "JudgeTimeout"
    assert "x-bias-verdict" not in response.headers  # never confused with a block
    if expected_status == 503:
        assert response.json()["error"]["code"] == "bias_judge_unavailable"
    else:
        assert response.json()["choices"][0]["message"]["content"] == fake_openai.reply
    record = gateway.wait_for_score(response.headers["x-bias-run-id"])
    assert record["status"] == "error"
    assert record["status_reason"] == "JudgeTimeout"


def test_sampling_scores_a_deterministic_share(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(mode="enforce", sample_rate=0.4, block_action="replace"))
    statuses = [create(gateway).headers["x-bias-status"] for _ in range(10)]
    assert statuses.count("scored") == 4
    assert statuses.count("skipped") == 6
    assert statuses[:5] == ["skipped", "skipped", "scored", "skipped", "scored"]


def test_tool_call_only_response_is_skipped(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.tool_calls_only = True
    gateway = make_gateway(**policy(mode="enforce"))
    raw = create(gateway)
    assert raw.parse().choices[0].message.tool_calls[0].function.name == "lookup"
    assert raw.headers["x-bias-status"] == "skipped"
    assert raw.headers["x-bias-skip-reason"] == "no_text"
    assert fake_openai.judge_calls() == 0
    assert gateway.wait_for_score(raw.headers["x-bias-run-id"])["status"] == "skipped"


def test_n_choices_are_all_scored_and_the_worst_wins(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.replies = ["A kind answer.", BIASED]
    fake_openai.verdicts_for = {"kind answer": [("no", "fine")], "north": [("yes", "bad")]}
    gateway = make_gateway(**policy(mode="enforce", block_action="replace"))

    raw = create(gateway, n=2)

    assert raw.headers["x-bias-score"] == "1"
    assert [c.finish_reason for c in raw.parse().choices] == ["content_filter"] * 2
    assert fake_openai.steps().count("analyze") == 2  # both choices were judged
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"], reason=True)
    assert record["reason_status"] == "done"
    analyzed = [r for r in fake_openai.requests if r.step == "reason"]
    assert len(analyzed) == 1  # only the worst choice is explained
    assert BIASED in analyzed[0].body["messages"][-1]["content"]


def test_client_may_override_the_mode_only_when_allowed(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.verdicts = [("no", "fine")]
    locked = make_gateway(**policy(mode="monitor"))
    raw = locked.client().chat.completions.with_raw_response.create(
        model="m", messages=MESSAGES, extra_headers={"x-bias-mode": "off"}
    )
    assert raw.headers["x-bias-status"] == "pending"

    open_policy = make_gateway(**policy(mode="monitor", allow_client_override=True))
    raw = open_policy.client().chat.completions.with_raw_response.create(
        model="m", messages=MESSAGES, extra_headers={"x-bias-mode": "enforce"}
    )
    assert raw.headers["x-bias-status"] == "scored"
    with pytest.raises(openai.BadRequestError, match="x-bias-mode"):
        open_policy.client().chat.completions.create(
            model="m", messages=MESSAGES, extra_headers={"x-bias-mode": "loud"}
        )


def test_model_alias_is_rewritten(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    gateway = make_gateway(models={"fast": {"model": "upstream-small"}}, **policy(mode="off"))
    gateway.client().chat.completions.create(model="fast", messages=MESSAGES, temperature=0.3)
    body = fake_openai.requests[0].body
    assert body["model"] == "upstream-small"
    assert body["temperature"] == 0.3


def test_alias_rewrite_keeps_integers_wider_than_64_bits_exact(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(models={"fast": {"model": "upstream-small"}}, **policy(mode="off"))
    raw_body = b'{"model": "fast", "messages": [{"role": "user"}], "seed": 18446744073709551617}'
    with gateway.http() as http:
        response = http.post(
            "/v1/chat/completions", content=raw_body, headers={"content-type": "application/json"}
        )
    assert response.status_code == 200
    body = fake_openai.requests[0].body
    assert body["model"] == "upstream-small"
    assert body["seed"] == 2**64 + 1


def test_a_body_sent_in_pieces_arrives_whole(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(mode="off"))
    raw_body = b'{"model": "m", "messages": [{"role": "user", "content": "in pieces"}]}'

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(raw_body), 7):
            yield raw_body[start : start + 7]
            # Paces the client, so the pieces go as separate packets and the server receives
            # several messages; nothing asserted here depends on how long the pause is.
            time.sleep(0.005)

    with gateway.http() as http:
        response = http.post(
            "/v1/chat/completions", content=pieces(), headers={"content-type": "application/json"}
        )
    assert response.status_code == 200
    assert fake_openai.requests[0].body["messages"][0]["content"] == "in pieces"


def test_unknown_fields_pass_through_unchanged(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(mode="off"))
    raw_body = (
        b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "x_custom": [1, 2]}'
    )
    with gateway.http() as http:
        http.post(
            "/v1/chat/completions", content=raw_body, headers={"content-type": "application/json"}
        )
    assert fake_openai.requests[0].body["x_custom"] == [1, 2]


def test_closed_routing_rejects_unknown_models(make_gateway: MakeGateway) -> None:
    gateway = make_gateway(route_unknown_models=False, models={"known": {}})
    with pytest.raises(openai.NotFoundError) as caught:
        gateway.client().chat.completions.create(model="unknown", messages=MESSAGES)
    body: Any = caught.value.body
    assert body["code"] == "model_not_found"
    assert body["param"] == "model"
    gateway.client().chat.completions.create(model="known", messages=MESSAGES)


@pytest.mark.parametrize(
    ("content", "param", "message"),
    [
        (b"{not json", None, "not valid JSON"),
        (b"[1, 2]", None, "JSON object"),
        (b'{"messages": [{"role": "user", "content": "x"}]}', "model", "`model` is required"),
        (b'{"model": "m"}', "messages", "`messages` is required"),
        (b'{"model": "m", "messages": []}', "messages", "`messages` is required"),
        (b'{"model": 3, "messages": [{"role": "user"}]}', "model", "`model`"),
        (b'{"model": "m", "messages": ["hi"]}', "messages", "must be an object"),
        (b'{"model": "m", "messages": [{"role": "user"}], "stream": "yes"}', "stream", "boolean"),
        (b'{"model": "m", "messages": [{"role": "user"}], "n": 0}', "n", "positive"),
    ],
)
def test_bad_requests_get_400_envelopes(
    make_gateway: MakeGateway, content: bytes, param: str | None, message: str
) -> None:
    gateway = make_gateway()
    with gateway.http() as http:
        response = http.post(
            "/v1/chat/completions", content=content, headers={"content-type": "application/json"}
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert message in error["message"]


def test_too_large_body_gets_413(make_gateway: MakeGateway, fake_openai: FakeOpenAI) -> None:
    gateway = make_gateway(server={"max_body_bytes": 1000})
    with pytest.raises(openai.APIStatusError) as caught:
        gateway.client().chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x" * 2000}]
        )
    assert caught.value.status_code == 413
    assert fake_openai.requests == []


@pytest.mark.parametrize("status", [400, 401, 429, 500, 503])
def test_upstream_errors_pass_through(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, status: int
) -> None:
    body = '{"error": {"message": "upstream says no", "type": "x", "code": "upstream_code"}}'
    fake_openai.fail(Fault(step="chat", status=status, body=body))
    gateway = make_gateway(**policy(mode="enforce"))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json={"model": "m", "messages": MESSAGES})
    assert response.status_code == status
    assert response.text == body
    assert response.headers["x-bias-status"] == "skipped"
    assert fake_openai.judge_calls() == 0


def test_upstream_timeout_is_504(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    fake_openai.fail(Fault(step="chat", delay=2))
    gateway = make_gateway(upstream={"timeout": 0.3})
    with pytest.raises(openai.APIStatusError) as caught:
        create(gateway)
    assert caught.value.status_code == 504
    body: Any = caught.value.body
    assert body["code"] == "upstream_timeout"


def test_upstream_refused_is_502(make_gateway: MakeGateway) -> None:
    gateway = make_gateway(upstream={"base_url": "http://127.0.0.1:9/v1"})
    with pytest.raises(openai.APIStatusError) as caught:
        create(gateway)
    assert caught.value.status_code == 502
    body: Any = caught.value.body
    assert body["code"] == "upstream_unavailable"
    assert "sk-upstream-secret" not in str(body)


@pytest.mark.parametrize("api_key", [None, "wrong-key"])
def test_auth_rejects_missing_or_wrong_keys(make_gateway: MakeGateway, api_key: str | None) -> None:
    gateway = make_gateway(api_keys="gw-key-1,gw-key-2")
    with gateway.http(api_key) as http:
        for path in ("/v1/models", "/v1/bias/scores/abc"):
            response = http.get(path)
            assert response.status_code == 401, path
            assert response.json()["error"]["code"] == "invalid_api_key"
        chat = http.post("/v1/chat/completions", json={"model": "m", "messages": MESSAGES})
        assert chat.status_code == 401
        assert http.get("/healthz").status_code == 200


def test_keys_map_to_policies(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    gateway = make_gateway(
        policies={"default": {"mode": "monitor"}, "strict": {"mode": "enforce"}},
        keys=[{"key": "team-a-secret-key", "name": "team-a", "policy": "strict"}],
        api_keys="plain-key-123",
    )
    with pytest.raises(openai.UnprocessableEntityError):
        gateway.client("team-a-secret-key").chat.completions.create(model="m", messages=MESSAGES)
    raw = gateway.client("plain-key-123").chat.completions.with_raw_response.create(
        model="m", messages=MESSAGES
    )
    assert raw.headers["x-bias-status"] == "pending"
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"], api_key="plain-key-123")
    assert record["key_name"] == "key-1"
    assert "plain-key-123" not in str(record)


def test_score_lookup_unknown_run_is_404(make_gateway: MakeGateway) -> None:
    with make_gateway().http() as http:
        response = http.get("/v1/bias/scores/does-not-exist")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_models_merges_aliases_with_the_upstream_list(make_gateway: MakeGateway) -> None:
    gateway = make_gateway(models={"fast": {"model": "x"}, "smart": {}})
    ids = [model.id for model in gateway.client().models.list()]
    assert ids == ["fast", "smart", "fake-model"]


def test_models_without_upstream_lists_aliases(make_gateway: MakeGateway) -> None:
    gateway = make_gateway(upstream={"base_url": "http://127.0.0.1:9/v1"}, models={"a": {}})
    assert [model.id for model in gateway.client().models.list()] == ["a"]


def test_other_v1_paths_pass_through_unscored(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway()
    raw = gateway.client().embeddings.with_raw_response.create(model="e", input="hello")
    assert raw.headers["x-bias-status"] == "skipped"
    assert raw.parse().data[0].embedding == [0.1]
    assert fake_openai.requests[0].headers["authorization"] == "Bearer sk-upstream-secret"
    assert fake_openai.judge_calls() == 0


def test_health_and_readiness(make_gateway: MakeGateway) -> None:
    with make_gateway().http() as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        ready = http.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["status"] == "ready"
        missing = http.get("/nope")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "not_found"


def test_request_id_is_returned(make_gateway: MakeGateway) -> None:
    with make_gateway(**policy(mode="off")).http() as http:
        echoed = http.post(
            "/v1/chat/completions",
            json={"model": "m", "messages": MESSAGES},
            headers={"x-request-id": "abc-123"},
        )
        generated = http.post("/v1/chat/completions", json={"model": "m", "messages": MESSAGES})
    assert echoed.headers["x-request-id"] == "abc-123"
    assert len(generated.headers["x-request-id"]) == 32


async def test_async_sdk_client(fake_openai: FakeOpenAI, make_gateway: MakeGateway) -> None:
    gateway = make_gateway(**policy(mode="enforce", block_action="replace"))
    async with gateway.async_client() as client:
        raw = await client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    assert raw.headers["x-bias-verdict"] == "block"
    assert raw.parse().choices[0].finish_reason == "content_filter"


def test_client_authorization_is_forwarded_only_when_configured(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(models={"byok": {"forward_client_auth": True}}, **policy(mode="off"))
    gateway.client("sk-client-own-key").chat.completions.create(model="byok", messages=MESSAGES)
    gateway.client("sk-client-own-key").chat.completions.create(model="other", messages=MESSAGES)
    forwarded, default = (r.headers["authorization"] for r in fake_openai.requests)
    assert forwarded == "Bearer sk-client-own-key"
    assert default == "Bearer sk-upstream-secret"


def test_store_keeps_content_only_when_capture_is_on(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway(store={"capture_content": True})
    raw = create(gateway)
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"])
    assert record["completion"] == BIASED
    assert "Tell me about engineers." in record["prompt"]
    assert BIASED in record["result"]["preprocessPrompt"]


def test_upstream_request_id_is_kept_under_its_own_name(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.response_headers = {"x-request-id": "req_upstream_1", "openai-processing-ms": "7"}
    gateway = make_gateway(**policy(mode="off"))
    with gateway.http() as http:
        response = http.post(
            "/v1/chat/completions",
            json={"model": "m", "messages": MESSAGES},
            headers={"x-request-id": "mine-1"},
        )
    assert response.headers.get_list("x-request-id") == ["mine-1"]
    assert response.headers["x-upstream-request-id"] == "req_upstream_1"
    assert response.headers["openai-processing-ms"] == "7"
