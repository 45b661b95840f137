"""Hostile bytes through a real server: issue 9's inputs, each as it was reported.

Every test sends the named input through uvicorn and checks what the client
gets, what the store keeps, and that the gateway still serves afterwards.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import pytest
from structlog.testing import capture_logs

from testkit.fake_openai import FakeOpenAI, Fault
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
BIASED = "Engineers from the north are lazy."
MESSAGES: list[Any] = [{"role": "user", "content": "Tell me about engineers."}]
CHAT = {"model": "m", "messages": MESSAGES}
STREAM = {**CHAT, "stream": True}


def completion_body(content: str, **fields: Any) -> str:
    """A chat completion as JSON text, escaped to ASCII (so a lone surrogate survives)."""
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        **fields,
    }
    return json.dumps(body)


def sse(*chunks: dict[str, Any] | str) -> list[bytes]:
    return [
        f"data: {chunk if isinstance(chunk, str) else json.dumps(chunk)}\n\n".encode()
        for chunk in chunks
    ]


def delta(text: str) -> dict[str, Any]:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}


def metrics_answer(gateway: RunningGateway) -> int:
    with gateway.http() as http:
        return http.get("/metrics").status_code


# -- item 3: unreadable upstream answers -------------------------------------------

UNREADABLE = [
    "<html><body>Engineers from the north are lazy.</body></html>",
    completion_body(BIASED)[:-40],  # truncated JSON
    json.dumps({"choices": [BIASED]}),
    json.dumps({"choices": [{"message": {"content": {"text": BIASED}}}]}),
]


@pytest.mark.parametrize("body", UNREADABLE)
def test_unreadable_answer_is_a_502_in_enforce(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, body: str
) -> None:
    fake_openai.fail(Fault(step="chat", body=body))
    gateway = make_gateway(**policy(mode="enforce"))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=CHAT)
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_protocol_error"
    assert "lazy" not in response.text
    assert response.headers["x-bias-skip-reason"] == "unreadable"
    record = gateway.wait_for_score(response.headers["x-bias-run-id"])
    assert (record["status"], record["status_reason"]) == ("skipped", "unreadable")
    assert fake_openai.judge_calls() == 0


def test_unreadable_answer_passes_in_monitor_and_is_counted(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="chat", body=UNREADABLE[0]))
    gateway = make_gateway()
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=CHAT)
        scrape = http.get("/metrics").text
    assert response.status_code == 200
    assert response.text == UNREADABLE[0]
    record = gateway.wait_for_score(response.headers["x-bias-run-id"])
    assert record["status_reason"] == "unreadable"
    assert 'bias_skipped_total{reason="unreadable"} 1.0' in scrape


@pytest.mark.parametrize(
    "chunks",
    [
        [b"<html><body>Engineers from the north are lazy.</body></html>"],
        sse(delta("Engineers from the north "), '{"id": "c1", "choices": [{"delta": {"con'),
        sse(delta("Engineers "), {"error": {"message": "overloaded"}}),
    ],
)
@pytest.mark.parametrize("stream_policy", ["buffer", "passthrough"])
def test_unreadable_stream_is_refused_in_enforce(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, chunks: list[bytes], stream_policy: str
) -> None:
    fake_openai.fail(Fault(step="chat", raw_chunks=chunks))
    gateway = make_gateway(**policy(mode="enforce", stream_policy=stream_policy))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=STREAM)
    if stream_policy == "buffer":
        assert response.status_code == 502
        assert response.json()["error"]["code"] == "upstream_protocol_error"
    else:
        last = response.text.strip().split("\n")[-1]
        assert json.loads(last.removeprefix("data: "))["error"]["code"] == (
            "upstream_protocol_error"
        )
        assert "[DONE]" not in response.text
    record = gateway.wait_for_score(response.headers["x-bias-run-id"])
    assert (record["status"], record["status_reason"]) == ("skipped", "unreadable")


# -- items 4 and 5: unpaired surrogates ----------------------------------------------


def test_surrogate_model_is_a_400_and_loses_no_other_record(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(store={"capture_content": True})
    hostile = b'{"model": "\\ud800", "messages": [{"role": "user", "content": "x \\udfff"}]}'
    run_ids = []
    with capture_logs() as logs, gateway.http() as http:
        for index in range(16):
            if index % 4 == 0:
                bad = http.post(
                    "/v1/chat/completions",
                    content=hostile,
                    headers={"content-type": "application/json"},
                )
                assert bad.status_code == 400
                assert bad.json()["error"]["param"] == "model"
            else:
                response = http.post("/v1/chat/completions", json=CHAT)
                run_ids.append(response.headers["x-bias-run-id"])
    assert any(line["event"] == "request" and line["status"] == 400 for line in logs)
    assert metrics_answer(gateway) == 200
    for run_id in run_ids:
        assert gateway.wait_for_score(run_id)["status"] == "scored"


def test_surrogate_in_a_prompt_is_stored_repaired(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(store={"capture_content": True})
    body = b'{"model": "m", "messages": [{"role": "user", "content": "x \\udfff y"}]}'
    with gateway.http() as http:
        response = http.post(
            "/v1/chat/completions", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code == 200
    record = gateway.wait_for_score(response.headers["x-bias-run-id"])
    assert record["prompt"] == "user: x \N{REPLACEMENT CHARACTER} y"


@pytest.mark.parametrize("mode", ["enforce", "monitor"])
def test_surrogate_in_the_response_text_is_judged(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, mode: str
) -> None:
    fake_openai.fail(Fault(step="chat", body=completion_body(BIASED + " \ud800")))
    gateway = make_gateway(**policy(mode=mode, block_action="replace"))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=CHAT)
    assert response.status_code == 200
    record = gateway.wait_for_score(response.headers["x-bias-run-id"])
    assert record["status"] == "scored"
    preprocess = next(r for r in fake_openai.requests if r.step == "preprocess")
    assert "lazy. \N{REPLACEMENT CHARACTER}" in json.dumps(preprocess.body, ensure_ascii=False)


def test_surrogate_in_a_streamed_text_is_judged(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.reply = "lazy \ud800 northerners"
    fake_openai.verdicts = [("no", "fine")]
    gateway = make_gateway(**policy(mode="enforce", stream_policy="passthrough"))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=STREAM)
    assert response.text.rstrip().endswith("data: [DONE]")
    record = gateway.wait_for_score(response.headers["x-bias-run-id"])
    assert record["status"] == "scored"


# -- item 6: junk usage in a judge reply ----------------------------------------------


@pytest.mark.parametrize("usage", [{"prompt_tokens": "abc"}, [1, 2], "x", {"prompt_tokens": -3}])
@pytest.mark.parametrize("stream_policy", ["buffer", "passthrough"])
def test_junk_judge_usage_is_ignored(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, usage: Any, stream_policy: str
) -> None:
    fake_openai.verdicts = [("no", "fine")]
    opinions = json.dumps({"opinions": fake_openai.opinions})
    fake_openai.fail(Fault(step="preprocess", body=completion_body(opinions, usage=usage)))
    gateway = make_gateway(**policy(mode="enforce", stream_policy=stream_policy))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=STREAM)
    if stream_policy == "passthrough":
        assert response.text.rstrip().endswith("data: [DONE]")
    else:
        assert response.status_code == 200
    record = gateway.wait_for_score(response.headers["x-bias-run-id"])
    assert record["status"] == "scored"
    assert record["result"]["usage"]["promptTokens"] > 0  # the other two steps' usage


# -- item 7: a non-string upstream id -------------------------------------------------


@pytest.mark.parametrize(("value", "stored"), [(12345, "12345"), ({"a": 1}, None), (None, None)])
def test_non_string_response_id_still_stores_the_record(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, value: Any, stored: str | None
) -> None:
    body = json.loads(completion_body("fine"))
    body["id"] = value
    fake_openai.fail(Fault(step="chat", body=json.dumps(body)))
    gateway = make_gateway()
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=CHAT)
    record = gateway.wait_for_score(response.headers["x-bias-run-id"])
    assert record["status"] == "scored"
    assert record["response_id"] == stored


# -- item 9: deep nesting ---------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 1024 + b"]" * 1024,
        b"[" * 5000 + b"]" * 5000,
        b'{"model": "m", "messages": [{"role": "user", "content": '
        + b"[" * 2000
        + b"]" * 2000
        + b"}]}",
        b'{"model": "m", "messages": [], "metadata": ' + b'{"a":' * 1100 + b"1" + b"}" * 1101,
    ],
)
def test_deep_nesting_is_a_400(make_gateway: MakeGateway, body: bytes) -> None:
    gateway = make_gateway()
    with gateway.http() as http:
        response = http.post(
            "/v1/chat/completions", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_nesting_orjson_takes_but_json_cannot_re_encode_is_a_400(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    # An alias rewrite re-encodes the body with `json`, whose recursion limit is lower.
    gateway = make_gateway(models={"alias": {"model": "real"}})
    content = b"[" * 1000 + b"]" * 1000
    body = b'{"model": "alias", "messages": [{"role": "user", "content": ' + content + b"}]}"
    with gateway.http() as http:
        response = http.post(
            "/v1/chat/completions", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["error"]["message"]
    assert fake_openai.requests == []


# -- item 10: a broken upload ----------------------------------------------------------


@pytest.mark.parametrize(
    "upload",
    [
        b'transfer-encoding: chunked\r\n\r\n5\r\n{"mod\r\nzz\r\n',  # a bad chunk-size line
        b"content-length: 500\r\n\r\n" + json.dumps(CHAT).encode()[:20],  # cut off by EOF
        b"transfer-encoding: chunked\r\n\r\n20\r\n" + json.dumps(CHAT).encode()[:20],
    ],
)
def test_broken_upload_is_a_client_disconnect(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, upload: bytes
) -> None:
    gateway = make_gateway()
    with capture_logs() as logs:
        with socket.create_connection(("127.0.0.1", gateway.server.port), timeout=5) as conn:
            conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n" + upload)
            conn.shutdown(socket.SHUT_WR)
            while conn.recv(65536):
                pass
        wait_for(
            lambda: any(line["event"] == "request" for line in logs),
            lambda: f"the access log line: {logs}",
        )
    assert not any(line["event"] == "unhandled error" for line in logs)
    access = next(line for line in logs if line["event"] == "request")
    assert access["client_disconnected"] is True
    assert access["status"] == 499
    assert "exc_info" not in access
    assert fake_openai.requests == []


# -- item 12: a huge answer --------------------------------------------------------------


@pytest.mark.parametrize(("stream", "prejudge"), [(False, False), (True, False), (True, True)])
def test_a_long_answer_is_judged_truncated(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, stream: bool, prejudge: bool
) -> None:
    fake_openai.reply = "x" * 30_000 + " the tail that is cut"
    fake_openai.chunks = 50
    fake_openai.verdicts = [("no", "fine")]
    gateway = make_gateway(
        judge={"max_text_chars": 10_000}, **policy(mode="enforce", prejudge_buffer=prejudge)
    )
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=STREAM if stream else CHAT)
    assert "the tail that is cut" in response.text  # the client still gets all of it
    record = gateway.wait_for_score(response.headers["x-bias-run-id"])
    assert record["truncated"] is True
    prompts = [
        r.body["messages"][-1]["content"] for r in fake_openai.requests if r.step == "preprocess"
    ]
    assert all("tail" not in prompt for prompt in prompts)
    if prejudge:  # judged in windows while it streamed: together, the first 10,000 characters
        windows = record["result"]["windows"]
        assert (windows[0]["start"], windows[-1]["end"]) == (0, 10_000)
        assert len(prompts) == len(windows) > 1
        return
    assert "x" * 10_000 in prompts[0]
    assert "x" * 10_001 not in prompts[0]


def test_a_short_answer_is_not_marked_truncated(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    gateway = make_gateway(judge={"max_text_chars": 10_000})
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=CHAT)
    assert gateway.wait_for_score(response.headers["x-bias-run-id"])["truncated"] is False
