"""Every way a stream can end leaves its announced run id with one final status.

And `upstream.timeout` bounds the whole upstream call, to its last byte.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.store import FINAL_STATUSES
from testkit.fake_openai import FakeOpenAI, Fault
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
MESSAGES: list[Any] = [{"role": "user", "content": "Tell me about engineers."}]
STREAM = {"model": "m", "messages": MESSAGES, "stream": True}
CHAT = {"model": "m", "messages": MESSAGES}
PING = b": ping\n\n"

STREAMING_MODES = {
    "monitor": policy(mode="monitor"),
    "passthrough": policy(mode="enforce", stream_policy="passthrough"),
}


def delta(text: str) -> bytes:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
    chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


def last_event(text: str) -> dict[str, Any]:
    data = json.loads(text.strip().split("\n")[-1].removeprefix("data: "))
    assert isinstance(data, dict)
    return data


def leave_while_judged(gateway: RunningGateway, fake: FakeOpenAI) -> str:
    """Read a passthrough stream up to the upstream's last chunk, wait until the judge
    has a call in hand, then hang up; returns the stream's run id."""
    with (
        gateway.http() as http,
        http.stream("POST", "/v1/chat/completions", json=STREAM) as response,
    ):
        for line in response.iter_lines():
            if '"finish_reason": "stop"' in line:
                break
        wait_for(lambda: fake.judge_in_flight, lambda: f"a judge call: {fake.steps()}")
        return response.headers["x-bias-run-id"]


def final_record(gateway: RunningGateway, run_id: str) -> dict[str, Any]:
    record = gateway.wait_for_score(run_id)
    assert record["status"] in FINAL_STATUSES
    return record


@pytest.mark.parametrize("mode", STREAMING_MODES)
def test_upstream_reset_mid_stream(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, mode: str
) -> None:
    fake_openai.fail(Fault(step="chat", disconnect_after=2))
    gateway = make_gateway(**STREAMING_MODES[mode])
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=STREAM)
    assert last_event(response.text)["error"]["code"] == "upstream_protocol_error"
    record = final_record(gateway, response.headers["x-bias-run-id"])
    assert (record["status"], record["partial"]) == ("scored", True)


@pytest.mark.parametrize("mode", STREAMING_MODES)
def test_upstream_closing_without_done(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, mode: str
) -> None:
    fake_openai.fail(Fault(step="chat", raw_chunks=[delta("Engineers "), delta("are lazy.")]))
    gateway = make_gateway(**STREAMING_MODES[mode])
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=STREAM)
    assert "are lazy." in response.text
    record = final_record(gateway, response.headers["x-bias-run-id"])
    assert record["status"] == "scored"


def test_a_client_hanging_up_at_done_leaves_a_whole_record(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    # llama.cpp's server ends its body a moment after `[DONE]`; the sync openai SDK hangs
    # up as soon as `[DONE]` arrives, which the gateway sees as a disconnect.
    done = b"data: [DONE]\n\n"
    held_open = [delta("Engineers "), delta("are kind."), done, b""]
    fake_openai.fail(Fault(step="chat", raw_chunks=held_open, raw_delay=0.3))
    gateway = make_gateway()
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="m", messages=MESSAGES, stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in raw.parse())
    assert text == "Engineers are kind."
    record = final_record(gateway, raw.headers["x-bias-run-id"])
    assert (record["status"], record["partial"]) == ("scored", False)


@pytest.mark.parametrize("mode", STREAMING_MODES)
def test_upstream_stall_ends_in_a_timeout_frame(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, mode: str
) -> None:
    fake_openai.fail(Fault(step="chat", raw_chunks=[delta("Engineers "), delta("x")], raw_delay=5))
    gateway = make_gateway(upstream={"timeout": 10, "read_timeout": 0.5}, **STREAMING_MODES[mode])
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=STREAM)
    assert last_event(response.text)["error"]["code"] == "upstream_timeout"
    record = final_record(gateway, response.headers["x-bias-run-id"])
    assert (record["status"], record["partial"]) == ("scored", True)


def test_judge_failure_ends_the_passthrough_stream_with_a_record(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="analyze", status=500))
    gateway = make_gateway(**policy(mode="enforce", stream_policy="passthrough"))
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=STREAM)
    assert last_event(response.text.replace("data: [DONE]", "").strip())["bias"]["status"] == (
        "error"
    )
    assert response.text.rstrip().endswith("data: [DONE]")  # on_judge_error: allow
    record = final_record(gateway, response.headers["x-bias-run-id"])
    assert record["status"] == "error"


@pytest.mark.parametrize("mode", STREAMING_MODES)
@pytest.mark.parametrize("when", ["after_headers", "after_first_chunk", "during_a_stall"])
def test_client_disconnect(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, mode: str, when: str
) -> None:
    if when == "during_a_stall":
        fake_openai.fail(
            Fault(step="chat", raw_chunks=[delta("Engineers "), delta("stall")], raw_delay=5)
        )
    else:
        fake_openai.reply = "one two three four five six seven eight nine ten"
        fake_openai.chunks = 10
        fake_openai.chunk_delay = 0.2
    gateway = make_gateway(**STREAMING_MODES[mode])
    with (
        gateway.http() as http,
        http.stream("POST", "/v1/chat/completions", json=STREAM) as response,
    ):
        run_id = response.headers["x-bias-run-id"]
        if when != "after_headers":
            lines = response.iter_lines()
            assert next(lines).startswith("data: ")
    record = final_record(gateway, run_id)
    assert record["partial"] is True
    assert record["status"] in ("scored", "skipped")


def test_client_leaving_while_the_passthrough_stream_is_judged(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.judge_delay = 0.3
    gateway = make_gateway(**policy(mode="enforce", stream_policy="passthrough"))
    run_id = leave_while_judged(gateway, fake_openai)
    # The explanation is deferred: wait for it too, or its call may not have begun.
    record = gateway.wait_for_score(run_id, reason=True)
    assert record["status"] == "scored"
    assert record["reason_status"] == "done"
    assert fake_openai.judge_calls() == 3


# -- upstream.timeout bounds the whole call ---------------------------------------------


@pytest.mark.parametrize(
    ("mode", "body"),
    [
        ("enforce", CHAT),
        ("enforce", STREAM),  # stream_policy buffer: nothing reaches the client before the end
        ("monitor", CHAT),
    ],
)
def test_keepalive_pings_do_not_outlast_the_timeout(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, mode: str, body: dict[str, Any]
) -> None:
    fake_openai.fail(Fault(step="chat", raw_chunks=[PING] * 12, raw_delay=0.5))
    gateway = make_gateway(upstream={"timeout": 1.5}, **policy(mode=mode))
    started = time.monotonic()
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=body)
    elapsed = time.monotonic() - started
    assert response.status_code == 504
    assert response.json()["error"]["code"] == "upstream_timeout"
    assert elapsed < 5  # the pings alone would hold it for 5.5 s


def test_keepalive_pings_on_a_monitored_stream_end_in_a_timeout_frame(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    fake_openai.fail(Fault(step="chat", raw_chunks=[PING] * 12, raw_delay=0.5))
    gateway = make_gateway(upstream={"timeout": 1.5})
    with gateway.http() as http:
        response = http.post("/v1/chat/completions", json=STREAM)
    assert response.text.count(": ping") < 12
    assert last_event(response.text)["error"]["code"] == "upstream_timeout"
    record = final_record(gateway, response.headers["x-bias-run-id"])
    assert record["status_reason"] == "no_text"


def test_a_judgement_still_running_at_shutdown_is_recorded_dropped(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, tmp_path: Path
) -> None:
    fake_openai.judge_delay = 3
    gateway = make_gateway(
        queue={"drain_deadline": 0.3}, **policy(mode="enforce", stream_policy="passthrough")
    )
    run_id = leave_while_judged(gateway, fake_openai)
    gateway.server.stop()
    with sqlite3.connect(tmp_path / "scores.db") as db:
        row = db.execute(
            "SELECT status, status_reason FROM scores WHERE run_id = ?", (run_id,)
        ).fetchone()
    db.close()
    assert row == ("dropped", "shutdown")
