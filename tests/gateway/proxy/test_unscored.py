"""No silent bypass: what the gateway does with `/v1` paths it does not score.

Calls known to return no model text pass in every mode; any other path is
refused in enforce mode unless the policy allows it, and passed through,
marked and counted, in monitor mode. Gateway-owned paths answer a wrong
method with the gateway's own 405.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import anthropic
import pytest

from gateway.proxy.paths import carries_no_text, owned_methods
from testkit.fake_openai import FakeOpenAI, Fault
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]


def skipped_count(gateway: RunningGateway, reason: str) -> float | None:
    """`bias_skipped_total{reason}`; None when that label was never counted."""
    with gateway.http() as http:
        text = http.get("/metrics").text
    assert "# TYPE bias_skipped_total counter" in text  # the metric itself exists
    found = re.search(rf'^bias_skipped_total\{{reason="{reason}"\}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else None


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/images/generations"),
        ("GET", "/v1/responses/resp_123"),  # a stored response holds model text
        ("GET", "/v1/files/file-1/content"),  # batch output files hold model text
        ("POST", "/v1/audio/transcriptions"),
        ("POST", "/v1/threads/runs"),
    ],
)
def test_enforce_refuses_an_unscored_path(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, method: str, path: str
) -> None:
    gateway = make_gateway(**policy(mode="enforce"))
    with gateway.http() as http:
        response = http.request(method, path, json={"model": "m"})
    assert response.status_code == 403
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("bias_policy_violation", "unscored_path")
    assert path in error["message"]
    assert "unscored_paths: allow" in error["message"]
    assert error["bias"] == {"path": path, "policy": "default", "setting": "unscored_paths"}
    assert fake_openai.requests == []  # nothing reached the upstream


def test_enforce_with_unscored_paths_allow_passes_them_through(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(mode="enforce", unscored_paths="allow"))
    with gateway.http() as http:
        response = http.post("/v1/images/generations", json={"prompt": "a cat"})
    assert response.status_code == 200
    assert response.json() == {"path": "/v1/images/generations"}
    assert response.headers["x-bias-status"] == "skipped"
    assert response.headers["x-bias-skip-reason"] == "unscored_path"
    assert skipped_count(gateway, "unscored_path") == 1


def test_monitor_passes_an_unscored_path_marked_and_counted(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway()
    with gateway.http() as http:
        for _ in range(2):
            response = http.post("/v1/images/generations", json={"prompt": "a cat"})
            assert response.status_code == 200
            assert response.headers["x-bias-skip-reason"] == "unscored_path"
    assert skipped_count(gateway, "unscored_path") == 2
    assert [r.path for r in fake_openai.requests] == ["/v1/images/generations"] * 2
    # The gateway's upstream key goes on; the client's never does.
    assert fake_openai.requests[0].headers["authorization"] == "Bearer sk-upstream-secret"


def test_the_client_may_not_switch_enforce_off_for_an_unscored_path(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(mode="enforce"))  # allow_client_override is off
    with gateway.http() as http:
        response = http.post("/v1/images/generations", json={}, headers={"x-bias-mode": "monitor"})
    assert response.status_code == 403


@pytest.mark.parametrize("mode", ["enforce", "monitor", "off"])
@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/v1/embeddings"), ("GET", "/v1/models/gpt-test"), ("GET", "/v1/files")],
)
def test_paths_without_model_text_pass_in_every_mode(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, mode: str, method: str, path: str
) -> None:
    gateway = make_gateway(**policy(mode=mode))
    with gateway.http() as http:
        response = http.request(method, path, json={"model": "m", "input": "x"})
    assert response.status_code == 200
    assert response.headers["x-bias-status"] == "skipped"
    assert response.headers["x-bias-skip-reason"] == "no_model_text"
    assert len(fake_openai.requests) == 1
    assert skipped_count(gateway, "unscored_path") is None  # not counted as a bypass


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", "/v1/chat/completions", "POST"),
        ("GET", "/v1/completions", "POST"),
        ("GET", "/v1/responses", "POST"),
        ("DELETE", "/v1/messages", "POST"),
        ("POST", "/v1/models", "GET"),
        ("POST", "/v1/bias/scores/some-run", "GET"),
    ],
)
def test_gateway_paths_answer_a_wrong_method_themselves(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, method: str, path: str, allowed: str
) -> None:
    gateway = make_gateway(**policy(mode="monitor"))
    with gateway.http() as http:
        response = http.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "method_not_allowed")
    assert fake_openai.requests == []


def test_an_unknown_bias_path_is_the_gateways_404(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway()
    with gateway.http() as http:
        response = http.get("/v1/bias/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert fake_openai.requests == []


def test_anthropic_count_tokens_goes_to_the_anthropic_upstream(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(mode="enforce"))
    client = anthropic.Anthropic(base_url=gateway.url, api_key="sk-client", max_retries=0)
    counted = client.messages.count_tokens(
        model="claude-test", messages=[{"role": "user", "content": "Hello there"}]
    )
    assert counted.input_tokens > 0
    call = fake_openai.requests[-1]
    assert call.path == "/v1/messages/count_tokens"
    assert call.headers["x-api-key"] == "sk-ant-upstream-secret"
    assert "authorization" not in call.headers


def test_an_unscored_anthropic_path_is_refused_in_anthropics_shape(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(**policy(mode="enforce"))
    client = anthropic.Anthropic(base_url=gateway.url, api_key="sk-client", max_retries=0)
    with pytest.raises(anthropic.PermissionDeniedError) as caught:
        client.messages.batches.list()
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["type"] == "error"
    assert body["error"]["type"] == "bias_policy_violation"  # the same name on every surface
    assert body["error"]["code"] == "unscored_path"
    assert fake_openai.requests == []


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/v1/embeddings", True),
        ("GET", "/v1/embeddings", False),
        ("GET", "/v1/models/gpt-4o", True),
        ("GET", "/v1/files", True),
        ("POST", "/v1/files", True),
        ("GET", "/v1/files/file-1", True),
        ("DELETE", "/v1/files/file-1", True),
        ("GET", "/v1/files/file-1/content", False),
        ("POST", "/v1/batches", True),
        ("POST", "/v1/batches/b1/cancel", True),
        ("POST", "/v1/messages/count_tokens", True),
        ("GET", "/v1/responses/resp_1", False),
        ("POST", "/v1/images/generations", False),
        ("POST", "/v1/embeddings/extra", False),
    ],
)
def test_carries_no_text(method: str, path: str, expected: bool) -> None:
    assert carries_no_text(method, path) is expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/chat/completions", ("POST",)),
        ("/v1/messages", ("POST",)),
        ("/v1/models", ("GET",)),
        ("/v1/bias/scores/abc", ("GET",)),
        ("/v1/bias/scores/abc/more", None),
        ("/v1/models/gpt-4o", None),
        ("/v1/embeddings", None),
    ],
)
def test_owned_methods(path: str, expected: tuple[str, ...] | None) -> None:
    assert owned_methods(path) == expected


def test_an_allowed_unscored_stream_passes_through_as_it_comes(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    frames = [b'event: thread.run.step.delta\ndata: {"n": %d}\n\n' % n for n in range(3)]
    fake_openai.fail(Fault(step="other", raw_chunks=frames, raw_delay=0.01))
    gateway = make_gateway()
    with (
        gateway.http() as http,
        http.stream("POST", "/v1/threads/runs", json={"stream": True}) as response,
    ):
        body = b"".join(response.iter_raw())
        headers = response.headers
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["x-bias-skip-reason"] == "unscored_path"
    assert body == b"".join(frames)
    assert fake_openai.requests[0].headers["authorization"] == "Bearer sk-upstream-secret"


@pytest.mark.parametrize(("mode", "status"), [("enforce", 403), ("monitor", 200), ("off", 200)])
def test_an_unscored_path_in_each_mode(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, mode: str, status: int
) -> None:
    gateway = make_gateway(**policy(mode=mode))
    with gateway.http() as http:
        response = http.post("/v1/images/generations", json={"prompt": "a cat"})
    assert response.status_code == status
    if status == 403:
        assert response.json()["error"]["code"] == "unscored_path"
        assert fake_openai.requests == []
    else:
        assert response.headers["x-bias-skip-reason"] == "unscored_path"
        assert [r.path for r in fake_openai.requests] == ["/v1/images/generations"]
