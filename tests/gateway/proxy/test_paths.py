"""Request paths: the canonical form, and what a hostile path can no longer reach."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from gateway.errors import BadRequest
from gateway.proxy.passthrough import forwarded_url
from gateway.proxy.paths import PathRefused, canonical_path
from testkit.fake_openai import FakeOpenAI
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
BIASED = "Engineers from the north are lazy."
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

# The dot-segment spellings of issue 9, item 1: each reached the scored endpoint unscored.
DOT_SEGMENTS = [
    "/v1/./chat/completions",
    "/v1/chat/./completions",
    "/v1/x/../chat/completions",
    "/v1/%2e/chat/completions",
    "/v1/%2E/chat/completions",
    "/v1/chat/completions/.",
    "/v1/models/../chat/completions",
    "/v1/chat/%2e%2e/chat/completions",
    "/v1/chat/completions/%2e",
]
# Item 2: each reached the upstream host outside /v1/ with the upstream key.
TRAVERSALS = [
    "/v1/../healthz",
    "/v1/%2e%2e/%2e%2e/etc/passwd",
    "/v1/..%2f..%2fsecret",
    "/v1/models/../../admin",
    "/v1/bias/scores/..%2f..%2f..%2fhealthz",
    "/v1/models%5c..%5c..%5cadmin",
    "/v1/models\\..\\admin",
    "/v1//chat/completions",
]


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        (b"/v1/chat/completions", "/v1/chat/completions"),
        (b"/v1/chat/completions/", "/v1/chat/completions"),
        (b"/v1/chat/completions///", "/v1/chat/completions"),
        (b"/v1/models/ft%3Agpt-4o%3Aorg", "/v1/models/ft:gpt-4o:org"),
        (b"/v1/files/file-a.b..c", "/v1/files/file-a.b..c"),  # dots inside a segment are fine
        (b"/", "/"),
    ],
)
def test_canonical_paths(raw: bytes, path: str) -> None:
    canonical = canonical_path(raw)
    assert canonical.path == path
    assert canonical.raw_path == raw.rstrip(b"/") or canonical.raw_path == b"/"


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        *((path.encode(), None) for path in DOT_SEGMENTS + TRAVERSALS),
        (b"/v1/models/%00", "control"),
        (b"/v1/models/%ff", "UTF-8"),
        (b"/v1/models/\xc3\xa9", "percent-encoded"),
        (b"v1/models", "start with /"),
    ],
)
def test_refused_paths(raw: bytes, why: str | None) -> None:
    with pytest.raises(PathRefused, match=why):
        canonical_path(raw)


def test_forwarded_url_keeps_the_path_as_received_under_the_base() -> None:
    scope = {"path": "/v1/models/ft:x", "raw_path": b"/v1/models/ft%3Ax", "query_string": b"a=1"}
    url = forwarded_url("http://up:9/base/v1/", scope)
    assert str(url) == "http://up:9/base/v1/models/ft%3Ax?a=1"
    with pytest.raises(BadRequest, match="base path"):
        forwarded_url("http://up:9/v1", {"path": "/v1/../x", "raw_path": b"/v1/../x"})


def raw_request(gateway: RunningGateway, method: str, target: str, body: bytes = b"") -> bytes:
    """Send a request line exactly as written (httpx would normalise the path first)."""
    with socket.create_connection(("127.0.0.1", gateway.server.port), timeout=10) as conn:
        head = (
            f"{method} {target} HTTP/1.1\r\nhost: 127.0.0.1\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n"
        )
        conn.sendall(head.encode("latin-1") + body)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize("path", DOT_SEGMENTS)
@pytest.mark.parametrize("mode", ["enforce", "monitor"])
def test_dot_segments_never_reach_the_upstream(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, path: str, mode: str
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway(**policy(mode=mode))
    answer = raw_request(gateway, "POST", path, b'{"model": "m", "messages": []}')
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b'"code":"invalid_path"' in answer
    assert BIASED.encode() not in answer
    assert fake_openai.requests == []


@pytest.mark.parametrize("path", TRAVERSALS)
def test_traversal_never_leaves_the_upstream_base_path(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, path: str
) -> None:
    gateway = make_gateway()
    for method in ("GET", "POST"):
        answer = raw_request(gateway, method, path)
        assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert fake_openai.requests == []


def test_a_trailing_slash_is_the_scored_route(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    gateway = make_gateway(**policy(mode="enforce"))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions/", json=CHAT)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "bias_threshold_exceeded"
    assert [r.path for r in fake_openai.requests if r.step == "chat"] == ["/v1/chat/completions"]


def test_upstream_redirects_are_never_followed(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = BIASED
    fake_openai.redirects["/v1/somewhere"] = "/v1/chat/completions"
    # An unscored path, let through by the policy: the redirect is still not followed.
    gateway = make_gateway(**policy(mode="enforce", unscored_paths="allow"))
    with gateway.http() as http:
        response = http.post("/v1/somewhere", json=CHAT)
    assert response.status_code == 307
    assert response.headers["location"] == "/v1/chat/completions"
    assert BIASED not in response.text
    assert [r.path for r in fake_openai.requests] == ["/v1/somewhere"]


def test_pass_through_sends_the_checked_path_and_query(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway()
    answer = raw_request(gateway, "GET", "/v1/files/file-1/content?purpose=a%20b")
    assert answer.startswith(b"HTTP/1.1 200 ")
    (recorded,) = fake_openai.requests
    assert recorded.path == "/v1/files/file-1/content"
    assert recorded.headers["authorization"] == "Bearer sk-upstream-secret"
