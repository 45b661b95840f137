"""Property tests: hostile requests and hostile upstream and judge answers, through real servers.

Whatever a client sends and whatever the upstream or the judge answers:

- no 5xx other than the 502/503/504 the contract gives for upstream and judge faults;
- every error body is the OpenAI envelope;
- every announced run id ends in one final status;
- `/metrics` still answers afterwards.

The gate runs a moderate number of examples; `HYPOTHESIS_PROFILE=long` runs many
more (see tests/conftest.py), for example

    HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest --timeout 0 \
        tests/gateway/proxy/test_properties.py
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.store import FINAL_STATUSES
from testkit.fake_openai import FakeOpenAI, Fault
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
ALLOWED_5XX = {502, 503, 504}
FIXTURES_ACROSS_EXAMPLES = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]

# -- strategies ------------------------------------------------------------------------


def _cut(data: bytes, keep: float | None) -> bytes:
    """`data`, or its first `keep` share (a body cut off mid-way)."""
    return data if keep is None else data[: int(len(data) * keep)]


SURROGATES = st.sampled_from(["\ud800", "\udfff", "\ud83d", "a\udc00b"])
TEXT = st.one_of(
    st.text(max_size=40),
    st.builds("".join, st.lists(st.one_of(st.text(max_size=5), SURROGATES), max_size=6)),
    SURROGATES,
    st.sampled_from(["", " ", "\x00", "\u202e", "测试", "한국어", "Engineers are lazy."]),
    st.integers(min_value=1, max_value=60_000).map(lambda n: "x" * n),
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


DEEP = st.integers(min_value=900, max_value=1100).map(nested)
CONTENT_PART = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}),
    st.fixed_dictionaries({"type": st.sampled_from(["image_url", "text", 3]), "text": JSON}),
    JSON,
)
MESSAGE = st.one_of(
    st.fixed_dictionaries(
        {
            "role": st.one_of(st.sampled_from(["user", "system", "assistant", "tool"]), JSON),
            "content": st.one_of(TEXT, st.lists(CONTENT_PART, max_size=3), JSON),
        }
    ),
    JSON,
)
CHAT_REQUEST = st.fixed_dictionaries(
    {},
    optional={
        "model": st.one_of(st.sampled_from(["m", "gpt-4o-mini"]), TEXT, JSON),
        "messages": st.one_of(st.lists(MESSAGE, min_size=1, max_size=3), JSON),
        "stream": st.one_of(st.booleans(), JSON),
        "n": st.one_of(st.integers(min_value=-1, max_value=3), JSON),
        "temperature": JSON,
        "response_format": JSON,
        "metadata": st.one_of(JSON, DEEP),
        "tools": JSON,
    },
)
# Mostly requests the gateway accepts, so that the hostile parts travel on through it.
WELL_FORMED = st.fixed_dictionaries(
    {
        "model": st.one_of(st.just("m"), TEXT),
        "messages": st.lists(MESSAGE, min_size=1, max_size=3),
    },
    optional={
        "stream": st.booleans(),
        "metadata": st.one_of(JSON, DEEP),
        "response_format": JSON,
    },
)
RAW_BODY = st.one_of(
    WELL_FORMED.map(lambda body: json.dumps(body).encode()),
    CHAT_REQUEST.map(lambda body: json.dumps(body).encode()),
    st.builds(
        lambda body, keep: _cut(json.dumps(body).encode(), keep), CHAT_REQUEST, st.floats(0, 1)
    ),
    st.binary(max_size=64),
    JSON.map(lambda value: json.dumps(value).encode()),
    DEEP.map(lambda value: json.dumps({"model": "m", "messages": value}).encode()),
)
MODE = st.sampled_from(["off", "monitor", "enforce"])

ID = st.one_of(st.text(max_size=10), st.integers(), JSON)
USAGE = st.one_of(
    st.fixed_dictionaries(
        {"prompt_tokens": SCALARS, "completion_tokens": SCALARS, "total_tokens": SCALARS}
    ),
    JSON,
)
CHOICE = st.one_of(
    st.fixed_dictionaries(
        {
            "index": st.one_of(st.integers(min_value=0, max_value=2), JSON),
            "message": st.one_of(
                st.fixed_dictionaries(
                    {"role": st.just("assistant"), "content": st.one_of(TEXT, JSON)}
                ),
                JSON,
            ),
            "finish_reason": st.one_of(st.just("stop"), JSON),
        }
    ),
    JSON,
)
COMPLETION = st.fixed_dictionaries(
    {},
    optional={
        "id": ID,
        "object": st.just("chat.completion"),
        "model": st.one_of(st.just("m"), JSON),
        "choices": st.one_of(st.lists(CHOICE, max_size=3), JSON),
        "usage": USAGE,
    },
)
DELTA_CHUNK = st.fixed_dictionaries(
    {},
    optional={
        "id": ID,
        "model": st.one_of(st.just("m"), JSON),
        "choices": st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "index": st.one_of(st.integers(min_value=0, max_value=2), JSON),
                        "delta": st.one_of(st.fixed_dictionaries({"content": TEXT}), JSON),
                        "finish_reason": st.one_of(st.just("stop"), JSON),
                    },
                ),
                max_size=2,
            ),
            JSON,
        ),
        "usage": USAGE,
    },
)


UPSTREAM_BODY = st.one_of(
    COMPLETION.map(json.dumps),
    st.builds(
        lambda body, keep: _cut(body.encode(), keep).decode(errors="ignore"),
        COMPLETION.map(json.dumps),
        st.floats(0, 1),
    ),
    st.sampled_from(["<html>Engineers are lazy.</html>", "", "null", "[]", "{}"]),
    DEEP.map(lambda value: json.dumps({"choices": value})),
)
STREAM_EVENT = st.one_of(
    DELTA_CHUNK.map(lambda chunk: f"data: {json.dumps(chunk)}\n\n".encode()),
    st.sampled_from([b"data: [DONE]\n\n", b": ping\n\n", b'data: {"choi\n\n', b"<html>\n"]),
    st.binary(max_size=20),
)
UPSTREAM_STREAM = st.builds(
    lambda events, keep: [_cut(b"".join(events), keep)],
    st.lists(STREAM_EVENT, max_size=6),
    st.one_of(st.none(), st.floats(0, 1)),
)
JUDGE_BODY = st.one_of(
    st.fixed_dictionaries(
        {
            "choices": st.just([{"message": {"content": '{"opinions": ["o"]}'}}]),
            "usage": USAGE,
        }
    ).map(json.dumps),
    st.fixed_dictionaries(
        {
            "choices": st.just(
                [{"message": {"content": '{"results": [{"result": "yes", "reason": "r"}]}'}}]
            ),
            "usage": USAGE,
        }
    ).map(json.dumps),
    COMPLETION.map(json.dumps),
    st.sampled_from(["", "<html>", '{"choices": [{"message": {"content": 3}}]}']),
)
JUDGE_FAULT = st.one_of(
    st.none(),
    st.builds(
        Fault,
        step=st.sampled_from(["preprocess", "analyze", "reason"]),
        body=JUDGE_BODY,
    ),
    st.builds(
        Fault,
        step=st.sampled_from(["preprocess", "analyze", "reason"]),
        status=st.sampled_from([400, 401, 429, 500, 503]),
    ),
)

# -- the checks -------------------------------------------------------------------------


def check(gateway: RunningGateway, response: httpx.Response) -> None:
    status = response.status_code
    assert status < 500 or status in ALLOWED_5XX, (status, response.text[:500])
    if status >= 400:
        body = response.json()
        error = body["error"]
        assert isinstance(error["message"], str)
        assert isinstance(error["type"], str)
        assert "code" in error
        assert "param" in error
    run_id = response.headers.get("x-bias-run-id")
    if run_id:
        record = gateway.wait_for_score(run_id, timeout=15)
        assert record["status"] in FINAL_STATUSES
    with gateway.http() as http:
        assert http.get("/metrics").status_code == 200


def post(gateway: RunningGateway, body: bytes, mode: str) -> httpx.Response:
    with gateway.http() as http:
        return http.post(
            "/v1/chat/completions",
            content=body,
            headers={"content-type": "application/json", "x-bias-mode": mode},
        )


@pytest.fixture
def gateways(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, tmp_path: Path
) -> Iterator[dict[str, RunningGateway]]:
    """Two gateways whose clients choose the mode: stream policy buffer and passthrough."""
    made = {
        stream_policy: make_gateway(
            store={"capture_content": True, "path": str(tmp_path / f"{stream_policy}.db")},
            telemetry={"capture_content": True},
            judge={"max_text_chars": 20_000},
            **policy(allow_client_override=True, stream_policy=stream_policy),
        )
        for stream_policy in ("buffer", "passthrough")
    }
    yield made
    for gateway in made.values():
        with gateway.http() as http:
            assert http.get("/metrics").status_code == 200
            assert http.get("/readyz").status_code == 200


@settings(suppress_health_check=FIXTURES_ACROSS_EXAMPLES, deadline=None)
@given(body=RAW_BODY, mode=MODE, stream_policy=st.sampled_from(["buffer", "passthrough"]))
def test_hostile_requests(
    gateways: dict[str, RunningGateway],
    fake_openai: FakeOpenAI,
    body: bytes,
    mode: str,
    stream_policy: str,
) -> None:
    fake_openai.reset()
    check(gateways[stream_policy], post(gateways[stream_policy], body, mode))


@settings(suppress_health_check=FIXTURES_ACROSS_EXAMPLES, deadline=None)
@given(
    answer=st.one_of(
        UPSTREAM_BODY.map(lambda body: Fault(step="chat", body=body)),
        UPSTREAM_STREAM.map(lambda chunks: Fault(step="chat", raw_chunks=chunks)),
    ),
    judge_fault=JUDGE_FAULT,
    stream=st.booleans(),
    mode=MODE,
    stream_policy=st.sampled_from(["buffer", "passthrough"]),
)
def test_hostile_upstream_and_judge_answers(
    gateways: dict[str, RunningGateway],
    fake_openai: FakeOpenAI,
    answer: Fault,
    judge_fault: Fault | None,
    stream: bool,
    mode: str,
    stream_policy: str,
) -> None:
    fake_openai.reset()
    fake_openai.fail(answer, *([judge_fault] if judge_fault else []))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    check(gateways[stream_policy], post(gateways[stream_policy], json.dumps(body).encode(), mode))
