"""What each surface adapter renders: a replaced answer, a refusal stream, a trailer, an
error frame or body. Rendered SSE is decoded with `gateway.wire.sse.SSEDecoder` and
read back with a fresh reader of the same surface, as a client would read it.
Pure code: no gateway, no I/O.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.config import Policy
from gateway.errors import BadRequest, PayloadTooLarge, unreadable_error
from gateway.proxy.decisions import Refusal, bias_details, block_refusal
from gateway.proxy.surfaces import Surface
from gateway.proxy.surfaces.base import held_with_bias
from gateway.scoring.outcome import Outcome
from gateway.wire.sse import DONE, SSEEvent
from tests.support.surface_samples import (
    CHAT,
    COMPLETIONS,
    EVERY_STREAM,
    FUNCTION_CALL_ITEM,
    MESSAGES,
    REASONING_ITEM,
    RESPONSES,
    STREAM_CASES,
    TOOL_CALL_CHOICE,
    TOOL_USE_BLOCK,
    StreamCase,
    chat_body,
    chat_choice,
    cmpl_choice,
    completions_body,
    decode,
    fed_reader,
    feed,
    messages_body,
    output_message,
    read_back,
    responses_body,
    terminal_only_last,
    text_block,
)

POLICY = Policy(mode="enforce")
# A refusal text with a line break and non-ASCII characters: SSE framing must keep it whole.
ODD_POLICY = Policy(mode="enforce", refusal_text="Not shown: blocked.\nSorry — ✋ «policy»")


WHOLE_BODIES: dict[str, tuple[Surface, dict[str, Any]]] = {
    "chat": (CHAT, chat_body(chat_choice(1, "second", "length"), chat_choice(0, "first"))),
    "completions": (
        COMPLETIONS,
        completions_body(cmpl_choice(1, "second", "length"), cmpl_choice(0, "first", "stop")),
    ),
    "responses": (
        RESPONSES,
        responses_body(
            REASONING_ITEM,
            output_message("msg_1", "first"),
            FUNCTION_CALL_ITEM,
            output_message("msg_2", "second"),
            output_text="firstsecond",
        ),
    ),
    "messages": (
        MESSAGES,
        messages_body(text_block("first"), TOOL_USE_BLOCK, text_block("second")),
    ),
}


@pytest.mark.parametrize("policy", [POLICY, ODD_POLICY], ids=["default", "odd-text"])
@pytest.mark.parametrize("name", list(WHOLE_BODIES))
def test_replaced_puts_the_refusal_where_the_text_was(name: str, policy: Policy) -> None:
    surface, body = WHOLE_BODIES[name]
    original = json.loads(json.dumps(body))

    refused = surface.replaced(body, policy)

    assert body == original, "the upstream's body is left as it was"
    assert surface.readable(refused)
    assert json.loads(json.dumps(refused)) == refused
    assert (refused["id"], refused["model"]) == (body["id"], body["model"])
    assert refused["usage"] == body["usage"]
    facts = surface.facts(refused)
    if name in ("chat", "completions"):
        assert surface.texts(refused) == [policy.refusal_text] * 2
        assert [choice["index"] for choice in refused["choices"]] == [1, 0]
        assert facts.finish_reasons == ["content_filter"] * 2
    elif name == "responses":
        assert surface.texts(refused) == [policy.refusal_text]
        assert refused["status"] == "incomplete"
        assert refused["incomplete_details"] == {"reason": "content_filter"}
        assert [item["type"] for item in refused["output"]] == ["message"]
        assert refused["output_text"] == policy.refusal_text
        assert facts.finish_reasons == ["incomplete"]
    else:
        assert surface.texts(refused) == [policy.refusal_text]
        assert refused["content"] == [{"type": "text", "text": policy.refusal_text}]
        assert (refused["stop_reason"], refused["stop_sequence"]) == ("refusal", None)
        assert facts.finish_reasons == ["refusal"]


@pytest.mark.parametrize(
    ("surface", "body"),
    [
        (CHAT, chat_body()),
        (CHAT, chat_body(TOOL_CALL_CHOICE)),
        (COMPLETIONS, completions_body()),
        (RESPONSES, responses_body()),
        (RESPONSES, responses_body(FUNCTION_CALL_ITEM)),
        (MESSAGES, messages_body()),
        (MESSAGES, messages_body(TOOL_USE_BLOCK)),
    ],
    ids=[
        "chat-no-choices",
        "chat-tool-calls",
        "completions-no-choices",
        "responses-no-output",
        "responses-function-call",
        "messages-no-content",
        "messages-tool-use",
    ],
)
def test_replaced_an_answer_without_text_still_carries_the_refusal(
    surface: Surface, body: dict[str, Any]
) -> None:
    refused = surface.replaced(body, POLICY)

    assert surface.readable(refused)
    assert surface.texts(refused) == [POLICY.refusal_text]


def test_responses_replaced_leaves_output_text_off_when_the_server_sent_none() -> None:
    refused = RESPONSES.replaced(responses_body(output_message("msg_1", "x")), POLICY)

    assert "output_text" not in refused
    assert refused["output"][0]["id"] == "msg_1"


FILTERED_MARK = {
    "chat": ["content_filter"],
    "completions": ["content_filter"],
    "responses": ["incomplete"],
    "messages": ["refusal"],
}


@pytest.mark.parametrize("policy", [POLICY, ODD_POLICY], ids=["default", "odd-text"])
@pytest.mark.parametrize("fed", [True, False], ids=["after-stream", "nothing-read"])
@EVERY_STREAM
def test_refusal_stream_reads_back_as_the_refusal(
    case: StreamCase, fed: bool, policy: Policy
) -> None:
    reader = fed_reader(case)[0] if fed else case.surface.reader(max_chars=None)

    raw = case.surface.refusal_stream(reader, policy)
    events = decode(raw)
    client, flags = read_back(case.surface, raw)

    assert terminal_only_last(flags)
    assert client.done
    assert client.readable
    assert client.texts() == [policy.refusal_text]
    facts = client.facts()
    assert facts.finish_reasons == FILTERED_MARK[case.surface.name.split(".")[0]]
    assert facts.response_id
    if fed:
        assert (facts.response_id, facts.model) == (case.facts.response_id, case.facts.model)
    if case.surface in (CHAT, COMPLETIONS):
        assert events[-1] == SSEEvent(DONE)
        assert all(event.event is None for event in events)
    else:
        assert all(event.event == json.loads(event.data)["type"] for event in events)


def test_responses_refusal_stream_numbers_its_events_in_order() -> None:
    events = decode(RESPONSES.refusal_stream(RESPONSES.reader(max_chars=None), POLICY))

    numbers = [json.loads(event.data)["sequence_number"] for event in events]
    assert numbers == list(range(len(events)))
    assert events[-1].event == "response.incomplete"
    final = json.loads(events[-1].data)["response"]
    assert RESPONSES.texts(final) == [POLICY.refusal_text]
    assert final["incomplete_details"] == {"reason": "content_filter"}


def test_messages_refusal_stream_keeps_the_input_token_count() -> None:
    reader = fed_reader(STREAM_CASES["messages"])[0]

    client, _ = read_back(MESSAGES, MESSAGES.refusal_stream(reader, POLICY))

    assert client.facts().input_tokens == 25
    assert client.facts().output_tokens == 0


PASSED = Outcome(run_id="run-7", status="scored", score=0.12, verdict="pass", reason="neutral")
JUDGE_FAILED = Outcome(run_id="run-8", status="error", status_reason="JudgeTimeout")


@pytest.mark.parametrize(
    ("outcome", "bias"),
    [
        (
            PASSED,
            {
                "status": "scored",
                "run_id": "run-7",
                "score": 0.12,
                "verdict": "pass",
                # No result: a count is only known from the judge's verdicts.
                "biased_opinions": None,
                "categories": [],
                "tamper": [],
            },
        ),
        (
            JUDGE_FAILED,
            {
                "status": "error",
                "run_id": "run-8",
                "score": None,
                "verdict": None,
                "biased_opinions": None,
                "categories": None,
                "tamper": None,
            },
        ),
    ],
    ids=["scored", "judge-error"],
)
@EVERY_STREAM
def test_trailer_ends_a_passed_stream_with_the_score(
    case: StreamCase, outcome: Outcome, bias: dict[str, Any]
) -> None:
    reader, held = fed_reader(case)
    expected_bias = {**bias, "error_type": outcome.status_reason}

    raw = case.surface.trailer(outcome, reader, held)
    trailer = decode(raw)

    if case.surface in (CHAT, COMPLETIONS):
        assert held == [SSEEvent(DONE)]
        assert len(trailer) == 2
        assert trailer[1] == SSEEvent(DONE)
        chunk = json.loads(trailer[0].data)
        assert chunk["choices"] == []
        assert chunk["bias"] == expected_bias
        assert (chunk["id"], chunk["model"]) == (case.facts.response_id, case.facts.model)
    else:
        assert len(held) == 1
        assert [event.event for event in trailer] == [event.event for event in held]
        for sent, kept in zip(trailer, held, strict=True):
            assert json.loads(sent.data) == {**json.loads(kept.data), "bias": expected_bias}
    assert expected_bias == bias_details(outcome)

    # The client reads the forwarded events, then the trailer: the same text, ended once.
    client = case.surface.reader(max_chars=None)
    forwarded = [(name, data) for name, data in case.events if SSEEvent(data, name) not in held]
    assert not any(feed(client, forwarded))
    assert terminal_only_last(feed(client, [(event.event, event.data) for event in trailer]))
    assert client.texts() == case.texts
    assert client.readable


def test_held_events_that_are_not_json_are_resent_as_they_came() -> None:
    held = [SSEEvent("not json", event="message_stop"), SSEEvent('{"type": "message_stop"}')]

    resent = decode(held_with_bias(held, {"run_id": "r"}))

    assert resent[0] == SSEEvent("not json", event="message_stop")
    assert json.loads(resent[1].data) == {"type": "message_stop", "bias": {"run_id": "r"}}
    assert resent[1].event is None


BLOCK_POLICY = Policy(mode="enforce", block_threshold=0.8, block_status=451)
BLOCKED = Outcome(run_id="run-9", status="scored", score=0.93, verdict="block", reason="slur")
REFUSALS = {
    "block": block_refusal(BLOCKED, BLOCK_POLICY),
    "unreadable": Refusal.of(unreadable_error()),
    "judge": Refusal(
        503,
        "bias_judge_error",
        "bias_judge_unavailable",
        "The bias judge failed.",
        bias={"run_id": "run-8", "error_type": "JudgeTimeout"},
    ),
    "bad-request": Refusal.of(BadRequest("`model` is required.", param="model")),
}


def openai_error(refusal: Refusal) -> dict[str, Any]:
    error: dict[str, Any] = {
        "message": refusal.message,
        "type": refusal.type,
        "param": refusal.param,
        "code": refusal.code,
    }
    if refusal.bias is not None:
        error["bias"] = refusal.bias
    return error


@pytest.mark.parametrize("refusal", list(REFUSALS.values()), ids=list(REFUSALS))
@pytest.mark.parametrize("surface", [CHAT, COMPLETIONS], ids=["chat", "completions"])
def test_openai_error_frame_is_an_error_envelope(surface: Surface, refusal: Refusal) -> None:
    frames = decode(surface.error_frame(refusal))

    assert len(frames) == 1
    assert frames[0].event is None
    assert json.loads(frames[0].data) == {"error": openai_error(refusal)}
    assert surface.error_body(refusal) == {"error": openai_error(refusal)}
    reader = surface.reader(max_chars=None)
    reader.add(frames[0].event, frames[0].data)
    assert not reader.readable, "a client-side reader sees no model output in it"


@pytest.mark.parametrize("refusal", list(REFUSALS.values()), ids=list(REFUSALS))
def test_responses_error_frame_has_the_responses_shape_and_the_envelope(
    refusal: Refusal,
) -> None:
    frames = decode(RESPONSES.error_frame(refusal))

    assert len(frames) == 1
    assert frames[0].event == "error"
    data = json.loads(frames[0].data)
    assert data["type"] == "error"
    assert (data["code"], data["message"], data["param"]) == (
        refusal.code,
        refusal.message,
        refusal.param,
    )
    assert data["error"] == openai_error(refusal)  # what makes the openai SDK raise
    assert set(data) == {"type", "code", "message", "param", "error"}
    assert RESPONSES.error_body(refusal) == {"error": openai_error(refusal)}


@pytest.mark.parametrize(
    ("refusal", "error_type"),
    [
        (REFUSALS["block"], "bias_policy_violation"),
        (REFUSALS["unreadable"], "api_error"),
        (REFUSALS["judge"], "bias_judge_error"),
        (REFUSALS["bad-request"], "invalid_request_error"),
    ],
    ids=["block", "unreadable", "judge", "bad-request"],
)
def test_messages_error_frame_has_anthropics_shape(refusal: Refusal, error_type: str) -> None:
    frames = decode(MESSAGES.error_frame(refusal))

    assert len(frames) == 1
    assert frames[0].event == "error"
    data = json.loads(frames[0].data)
    assert data == MESSAGES.error_body(refusal)
    expected: dict[str, Any] = {
        "type": error_type,
        "message": refusal.message,
        "code": refusal.code,
    }
    if refusal.bias is not None:
        expected["bias"] = refusal.bias
    assert data == {"type": "error", "error": expected}


@pytest.mark.parametrize(
    ("status", "kind", "anthropic_type"),
    [
        (400, "invalid_request_error", "invalid_request_error"),
        (401, "invalid_request_error", "authentication_error"),
        (403, "invalid_request_error", "permission_error"),
        (404, "invalid_request_error", "not_found_error"),
        (413, "invalid_request_error", "request_too_large"),
        (429, "rate_limit_exceeded", "rate_limit_error"),
        (529, "overloaded", "overloaded_error"),
        (405, "invalid_request_error", "api_error"),
        (500, "server_error", "api_error"),
        (502, "upstream_error", "api_error"),
        (503, "upstream_error", "api_error"),
        (504, "upstream_error", "api_error"),
        # The gateway's own decisions keep their types, whatever the status.
        (422, "bias_policy_violation", "bias_policy_violation"),
        (451, "bias_policy_violation", "bias_policy_violation"),
        (403, "bias_policy_violation", "bias_policy_violation"),
        (503, "bias_judge_error", "bias_judge_error"),
        (400, "bias_judge_error", "bias_judge_error"),
    ],
)
def test_messages_error_body_maps_statuses_to_anthropic_types(
    status: int, kind: str, anthropic_type: str
) -> None:
    refusal = Refusal(status, kind, "some_code", "Something went wrong.")

    body = MESSAGES.error_body(refusal)

    assert body == {
        "type": "error",
        "error": {
            "type": anthropic_type,
            "message": "Something went wrong.",
            "code": "some_code",
        },
    }


def test_messages_error_body_of_a_gateway_error_uses_its_status() -> None:
    refusal = Refusal.of(PayloadTooLarge("Request body is too large."))

    error = MESSAGES.error_body(refusal)["error"]

    assert (error["type"], error["code"]) == ("request_too_large", "request_too_large")
    assert "bias" not in error
