"""`POST /v1/moderations`, driven by the `openai` SDK's `client.moderations.create`."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from testkit.fake_openai import JUDGE_MODEL, Fault
from testkit.waiting import wait_for
from tests.support.gateways import policy
from tests.support.texts import BIASED, NEUTRAL

KEYS = {
    "keys": [
        {"key": "sk-alice", "name": "alice"},
        {"key": "sk-bob", "name": "bob", "policy": "lenient"},
    ],
    # `lenient` flags on the score alone: no count rule flags one biased opinion.
    "policies": {
        "default": {},
        "lenient": {"flag_threshold": 0.9, "block_threshold": 1.0, "flag_biased_opinions": None},
    },
}


def bias_of(result: Any) -> dict[str, Any]:
    """A result's `bias` object, which the SDK keeps as an extra field."""
    extra = result.model_extra
    assert extra is not None
    return dict(extra["bias"])


def test_a_string_is_judged_in_openais_shape(make_gateway, judged) -> None:
    gateway = make_gateway()
    moderation = gateway.client().moderations.create(input=BIASED)

    assert moderation.id.startswith("modr-")
    assert moderation.model == JUDGE_MODEL
    [result] = moderation.results
    assert result.flagged is True
    categories = result.categories.model_dump(exclude_unset=True)
    assert categories["geographical"] is True
    assert categories["gender"] is False
    assert set(categories) == {"gender", "political", "racial_ethnic", "geographical"}
    scores = result.category_scores.model_dump(exclude_unset=True)
    assert scores["geographical"] == 1.0
    assert scores["political"] == 0.0
    assert result.category_applied_input_types.model_dump(exclude_unset=True)["geographical"] == [
        "text"
    ]
    bias = bias_of(result)
    assert bias["verdict"] == "block"
    assert bias["score"] == 1.0
    assert bias["scale"] == 1.0
    assert bias["status"] == "scored"
    assert bias["opinions"] == [
        {
            "opinion": "an opinion",
            "biased": True,
            "result": "yes",
            "reason": "A regional stereotype.",
            "categories": ["geographical"],
        }
    ]


def test_a_list_of_strings_gives_one_result_each_and_a_record_each(make_gateway, judged) -> None:
    gateway = make_gateway()
    moderation = gateway.client().moderations.create(input=[NEUTRAL, BIASED, ""])

    flagged = [result.flagged for result in moderation.results]
    assert flagged == [False, True, False]
    biases = [bias_of(result) for result in moderation.results]
    assert [bias["status"] for bias in biases] == ["scored", "scored", "skipped"]
    assert biases[2]["skip_reason"] == "no_text"
    assert len({bias["run_id"] for bias in biases}) == 3
    for bias in biases:
        record = gateway.wait_for_score(bias["run_id"])
        assert record["api"] == "moderations"
        assert record["status"] == bias["status"]
    assert gateway.wait_for_score(biases[1]["run_id"])["verdict"] == "block"


def test_text_parts_are_one_input(make_gateway, judged) -> None:
    gateway = make_gateway()
    moderation = gateway.client().moderations.create(
        input=[{"type": "text", "text": NEUTRAL}, {"type": "text", "text": BIASED}]
    )
    [result] = moderation.results
    assert result.flagged is True
    prompts = [r.body["messages"][-1]["content"] for r in judged.requests if r.step == "analyze"]
    assert any(NEUTRAL in prompt and BIASED in prompt for prompt in prompts)


def test_model_names_the_policy_and_the_keys_own_policy_decides_otherwise(
    make_gateway, judged
) -> None:
    judged.verdicts_for = {}
    judged.opinions = ["one", "two"]
    judged.verdicts = [("yes", "Biased.", ["gender"]), ("no", "Fair.")]  # score 0.5: flag
    gateway = make_gateway(**KEYS)
    alice, bob = gateway.client("sk-alice"), gateway.client("sk-bob")

    assert alice.moderations.create(input=BIASED).results[0].flagged is True
    assert not bob.moderations.create(input=BIASED).results[0].flagged
    # OpenAI's model names, and the judge's, take the key's own policy.
    assert alice.moderations.create(input=BIASED, model="omni-moderation-latest").results[0].flagged
    assert (
        not bob.moderations.create(input=BIASED, model="omni-moderation-latest").results[0].flagged
    )
    assert not bob.moderations.create(input=BIASED, model=JUDGE_MODEL).results[0].flagged
    # A policy's name takes that policy, whoever asks.
    assert not alice.moderations.create(input=BIASED, model="lenient").results[0].flagged
    result = bob.moderations.create(input=BIASED, model="default").results[0]
    assert result.flagged is True
    assert bias_of(result)["policy"] == "default"


def test_records_belong_to_the_callers_key(make_gateway, judged) -> None:
    gateway = make_gateway(**KEYS)
    moderation = gateway.client("sk-alice").moderations.create(input=BIASED)
    run_id = bias_of(moderation.results[0])["run_id"]

    record = gateway.wait_for_score(run_id, api_key="sk-alice")
    assert record["key_name"] == "alice"
    with gateway.http("sk-bob") as http:
        assert http.get(f"/v1/bias/scores/{run_id}").status_code == 404
    with pytest.raises(openai.AuthenticationError):
        gateway.client("sk-nobody").moderations.create(input=BIASED)


def test_the_cache_judges_an_identical_text_once(make_gateway, judged) -> None:
    gateway = make_gateway()
    client = gateway.client()
    first = client.moderations.create(input=BIASED).results[0]
    gateway.wait_for_score(bias_of(first)["run_id"], reason=True)
    calls = judged.judge_calls()
    again = client.moderations.create(input=BIASED).results[0]

    assert judged.judge_calls() == calls
    assert again.flagged is True
    assert bias_of(again)["cached"] is True


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": BIASED, "model": "gpt-4o"}, "model"),
        ({"input": None}, "input"),
        ({"input": 42}, "input"),
        ({"input": []}, "input"),
        ({"input": [NEUTRAL, 7]}, "input"),
        ({"input": [NEUTRAL, {"type": "text", "text": BIASED}]}, "input"),
        ({"input": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}, "input"),
        ({"input": [{"type": "text", "text": None}]}, "input"),
        ({"input": ["a"] * 65}, "input"),
    ],
)
def test_bad_input_is_a_400_in_the_envelope(make_gateway, judged, body, param) -> None:
    gateway = make_gateway()
    with pytest.raises(openai.BadRequestError) as raised:
        gateway.client().moderations.create(**body)

    error = raised.value.body
    assert isinstance(error, dict)
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert raised.value.status_code == 400
    assert judged.judge_calls() == 0


def test_a_judge_failure_follows_on_judge_error(make_gateway, judged) -> None:
    judged.fail(*(Fault(step="preprocess", status=500) for _ in range(4)))
    allow = make_gateway()
    result = allow.client().moderations.create(input=BIASED).results[0]
    assert result.flagged is False
    assert bias_of(result)["status"] == "error"

    judged.fail(*(Fault(step="preprocess", status=500) for _ in range(4)))
    block = make_gateway(**policy(on_judge_error="block"))
    with pytest.raises(openai.InternalServerError) as raised:
        block.client().moderations.create(input=NEUTRAL)
    assert raised.value.status_code == 503


def test_spans_events_and_metrics_as_for_an_answer(make_gateway, judged, otel_capture) -> None:
    otel_capture.spans.clear()
    otel_capture.logs.clear()
    gateway = make_gateway(otel=otel_capture.telemetry)
    result = gateway.client().moderations.create(input=BIASED, model="omni-moderation-latest")
    run_id = bias_of(result.results[0])["run_id"]

    wait_for(lambda: otel_capture.named("POST /v1/moderations"), "the server span")
    server = otel_capture.one("POST /v1/moderations")
    evaluation = otel_capture.one("evaluation bias")
    assert evaluation.parent is not None
    assert evaluation.parent.span_id == server.context.span_id
    assert dict(evaluation.attributes or {})["bias.run_id"] == run_id
    # The event goes out with the final record, once the deferred explanation is in.
    events = wait_for(otel_capture.events, "the evaluation event")
    assert [event.attributes["gen_ai.evaluation.score.label"] for event in events] == ["block"]
    with gateway.http() as http:
        metrics = http.get("/metrics").text
    assert 'bias_verdicts_total{model="omni-moderation-latest",verdict="block"} 1.0' in metrics


def test_a_keys_request_limit_counts_moderations(make_gateway, judged) -> None:
    gateway = make_gateway(keys=[{"key": "sk-a", "name": "a", "requests_per_minute": 1}])
    client = gateway.client("sk-a")
    client.moderations.create(input=NEUTRAL)

    with pytest.raises(openai.RateLimitError):
        client.moderations.create(input=NEUTRAL)
