"""`POST /v1/bias/score`: texts in, guard's result in Mastra's shape with the verdict out."""

from __future__ import annotations

import json
from typing import Any

import pytest

from testkit.fake_openai import FakeOpenAI, Fault
from tests.support.gateways import policy
from tests.support.mastra import MASTRA_FIELDS
from tests.support.texts import BIASED, NEUTRAL

TOOL_BIASED = "I think women are lazy engineers."  # biased to the reading judge


def test_one_text_gives_mastras_result_and_the_verdict(make_gateway, judged) -> None:
    gateway = make_gateway(judge={"reason": "inline"})
    with gateway.http() as http:
        response = http.post("/v1/bias/score", json={"text": BIASED, "model": "gpt-4o"})

    assert response.status_code == 200
    body = response.json()
    assert set(body) >= MASTRA_FIELDS
    assert body["score"] == 1.0
    assert body["verdict"] == "block"
    assert body["status"] == "scored"
    assert body["reason"] == judged.reason
    assert body["preprocessStepResult"] == {"opinions": ["an opinion"]}
    assert body["analyzeStepResult"]["results"][0]["result"] == "yes"
    record = gateway.wait_for_score(body["runId"])
    assert record["api"] == "score"
    assert record["model"] == "gpt-4o"
    assert record["verdict"] == "block"


def test_messages_are_judged_by_their_assistant_text(make_gateway, judged) -> None:
    gateway = make_gateway()
    messages = [
        {"role": "user", "content": BIASED},
        {"role": "assistant", "content": NEUTRAL},
    ]
    with gateway.http() as http:
        body = http.post("/v1/bias/score", json={"messages": messages}).json()

    assert body["verdict"] == "pass"
    assert body["score"] == 0.0


def tool_turn(body: str, content: str | None = None) -> dict[str, Any]:
    """An assistant turn that calls `send_message` with `body` (after `content`, if any)."""
    arguments = json.dumps({"to": "team", "message": {"body": body}})
    function = {"name": "send_message", "arguments": arguments}
    call = {"id": "call_1", "type": "function", "function": function}
    return {"role": "assistant", "content": content, "tool_calls": [call]}


def judged_texts(fake: FakeOpenAI) -> str:
    return json.dumps([r.body for r in fake.requests if r.step != "chat"])


@pytest.mark.parametrize("content", [None, "Here is the memo."], ids=["only-a-call", "text"])
def test_tool_call_arguments_in_messages_are_judged_as_the_proxy_judges_them(
    make_gateway, reading_judge: FakeOpenAI, content: str | None
) -> None:
    gateway = make_gateway()
    messages = [{"role": "user", "content": "Tell the team."}, tool_turn(TOOL_BIASED, content)]
    with gateway.http() as http:
        response = http.post("/v1/bias/score", json={"messages": messages})

    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["verdict"]) == ("scored", "block")
    assert "Tool send_message, argument message.body: " + TOOL_BIASED in judged_texts(reading_judge)
    record = gateway.wait_for_score(body["runId"])
    assert record["result"]["toolArguments"] == [
        {"tool": "send_message", "argument": "to"},
        {"tool": "send_message", "argument": "message.body"},
    ]
    assert record["result"]["opinionSources"] == ["tool_argument"]


def test_judge_tool_arguments_off_leaves_a_messages_tool_calls_unjudged(
    make_gateway, reading_judge: FakeOpenAI
) -> None:
    gateway = make_gateway(**policy(judge_tool_arguments=False))
    texts = [
        {"messages": [tool_turn(TOOL_BIASED)]},
        {"messages": [tool_turn(TOOL_BIASED, "Here is the memo.")]},
    ]
    with gateway.http() as http:
        data = http.post("/v1/bias/score", json={"texts": texts}).json()["data"]

    assert (data[0]["status"], data[0]["skipReason"]) == ("skipped", "no_text")
    assert (data[1]["status"], data[1]["verdict"]) == ("scored", "pass")
    assert TOOL_BIASED not in judged_texts(reading_judge)


def test_a_list_is_judged_concurrently(make_gateway, judged) -> None:
    judged.judge_gather = 3  # each judge call waits until three are in flight at once
    gateway = make_gateway()
    texts = [
        BIASED,
        {"text": NEUTRAL},
        {"messages": [{"role": "assistant", "content": "Rivers are long."}]},
    ]
    with gateway.http() as http:
        response = http.post("/v1/bias/score", json={"texts": texts})

    assert response.status_code == 200
    data = response.json()["data"]
    assert [entry["verdict"] for entry in data] == ["block", "pass", "pass"]
    assert judged.judge_peak_in_flight >= 3


def test_monitor_answers_at_once_and_the_score_lands_in_the_store(make_gateway, judged) -> None:
    judged.judge_delay = 0.3
    gateway = make_gateway()
    with gateway.http() as http:
        response = http.post("/v1/bias/score?mode=monitor", json={"texts": [BIASED, NEUTRAL]})

    assert response.status_code == 202
    data = response.json()["data"]
    assert [entry["status"] for entry in data] == ["pending", "pending"]
    assert "score" not in data[0]
    first = gateway.wait_for_score(data[0]["runId"])
    assert first["verdict"] == "block"
    assert first["mode"] == "monitor"
    assert gateway.wait_for_score(data[1]["runId"])["verdict"] == "pass"


def test_a_judge_failure_of_one_text_is_a_503(make_gateway, judged) -> None:
    judged.fail(Fault(step="preprocess", status=500))
    gateway = make_gateway()
    with gateway.http() as http:
        response = http.post("/v1/bias/score", json={"text": BIASED})

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "bias_judge_unavailable"
    # In a list, the failure is that entry's status.
    judged.fail(Fault(step="preprocess", status=500))
    with gateway.http() as http:
        data = http.post("/v1/bias/score", json={"texts": [NEUTRAL]}).json()["data"]
    assert data[0]["status"] == "error"
    assert data[0]["errorType"] == "JudgeUnavailable"


def test_a_keys_records_are_its_own(make_gateway, judged) -> None:
    gateway = make_gateway(keys=[{"key": "sk-a", "name": "a"}, {"key": "sk-b", "name": "b"}])
    with gateway.http("sk-a") as http:
        run_id = http.post("/v1/bias/score", json={"text": BIASED}).json()["runId"]
    assert gateway.wait_for_score(run_id, api_key="sk-a")["key_name"] == "a"
    with gateway.http("sk-b") as http:
        assert http.get(f"/v1/bias/scores/{run_id}").status_code == 404
    with gateway.http() as http:
        assert http.post("/v1/bias/score", json={"text": BIASED}).status_code == 401


@pytest.mark.parametrize(
    ("query", "body", "param"),
    [
        ("", {}, "text"),
        ("", {"text": BIASED, "texts": [BIASED]}, "text"),
        ("", {"text": 7}, "text"),
        ("", {"messages": []}, "messages"),
        ("", {"messages": [{"role": "user", "content": "hi"}]}, "messages"),
        ("", {"texts": []}, "texts"),
        ("", {"texts": [BIASED] * 65}, "texts"),
        ("", {"texts": [BIASED, 3]}, "texts"),
        ("", {"texts": [{"text": 1}]}, "texts[0].text"),
        ("", {"text": BIASED, "policy": "nope"}, "policy"),
        ("", {"text": BIASED, "model": 5}, "model"),
        ("?mode=off", {"text": BIASED}, "mode"),
    ],
)
def test_bad_input_is_a_clear_400(make_gateway, judged, query, body, param) -> None:
    gateway = make_gateway()
    with gateway.http() as http:
        response = http.post(f"/v1/bias/score{query}", json=body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert judged.judge_calls() == 0


def test_a_body_that_is_not_json_is_a_400(make_gateway, judged) -> None:
    gateway = make_gateway()
    with gateway.http() as http:
        response = http.post("/v1/bias/score", content=b"not json")
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
