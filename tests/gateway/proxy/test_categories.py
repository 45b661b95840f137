"""Categories and languages through the gateway, against the fake judge: headers, the
record and its lookup, the stream trailer, spans, metrics, and the config."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from guard.bias.fence import unfenced
from testkit.fake_openai import FakeOpenAI
from tests.support.gateways import RunningGateway, policy
from tests.support.telemetry import Captured

MakeGateway = Callable[..., RunningGateway]
ENFORCE = policy(mode="enforce", block_action="replace")
AGE = {"id": "age", "description": "Age bias: judging people by how old they are."}


def ask(gateway: RunningGateway, text: str = "hi", **extra: Any) -> Any:
    return gateway.client().chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": text}], **extra
    )


def test_a_scored_response_names_its_categories_everywhere(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI, otel_capture: Captured
) -> None:
    otel_capture.spans.clear()
    fake_openai.opinions = ["Men cannot cook.", "Rural people are slow.", "Tea is nice."]
    fake_openai.verdicts = [
        ("yes", "Gender stereotype.", ["gender"]),
        ("yes", "Regional stereotype.", ["geographical", "gender"]),
        ("no", "A taste.", []),
    ]
    gateway = make_gateway(otel=otel_capture.telemetry, **ENFORCE)
    raw = ask(gateway)
    assert raw.headers["x-bias-categories"] == "gender,geographical"
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"])
    assert record["categories"] == ["gender", "geographical"]
    assert record["result"]["categoryScores"] == {"gender": 0.67, "geographical": 0.33}
    assert [v["categories"] for v in record["result"]["analyzeStepResult"]["results"]] == [
        ["gender"],
        ["geographical", "gender"],
        [],
    ]
    evaluation = otel_capture.one("evaluation bias")
    assert evaluation.attributes is not None
    assert tuple(evaluation.attributes["bias.categories"]) == ("gender", "geographical")  # type: ignore[arg-type]
    with gateway.http() as http:
        metrics = http.get("/metrics").text
    assert 'bias_category_opinions_total{category="gender"} 2.0' in metrics
    assert 'bias_category_opinions_total{category="geographical"} 1.0' in metrics


def test_an_unbiased_response_has_an_empty_categories_header(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    fake_openai.verdicts = [("no", "Fair.", [])]
    raw = ask(make_gateway(**ENFORCE))
    assert raw.headers["x-bias-verdict"] == "pass"
    assert raw.headers["x-bias-categories"] == ""


def test_a_passthrough_stream_ends_with_its_categories(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    gateway = make_gateway(
        **policy(
            mode="enforce", stream_policy="passthrough", block_threshold=0.9, flag_threshold=0.5
        )
    )
    fake_openai.verdicts = [("yes", "Regional.", ["geographical"]), ("no", "ok", [])]
    fake_openai.opinions = ["a", "b"]
    with gateway.http() as http:
        body = http.post(
            "/v1/chat/completions",
            json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]},
        ).text
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]
    assert events[-1]["bias"]["categories"] == ["geographical"]
    assert events[-1]["bias"]["verdict"] == "flag"


def test_configured_categories_reach_the_rubric_and_others_count_as_other(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    fake_openai.opinions = ["Old people cannot use phones.", "They pray too much."]
    fake_openai.verdicts = [("yes", "Ageist.", ["age"]), ("yes", "Religious.", ["religion"])]
    gateway = make_gateway(judge={"extra_categories": [AGE]}, **ENFORCE)
    raw = ask(gateway)
    assert raw.headers["x-bias-categories"] == "age,other"
    analyze = next(r for r in fake_openai.requests if r.step == "analyze")
    prompt = analyze.body["messages"][1]["content"]
    assert "[age] Age bias: judging people by how old they are." in prompt
    assert "[gender] Gender bias." in prompt  # extended, not replaced


def test_a_replaced_list_is_the_whole_rubric(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    fake_openai.verdicts = [("yes", "Stereotype.", ["gender"])]
    gateway = make_gateway(judge={"categories": [AGE]}, **ENFORCE)
    raw = ask(gateway)
    assert raw.headers["x-bias-categories"] == "other"  # gender is not in this list
    prompt = next(r for r in fake_openai.requests if r.step == "analyze").body["messages"][1]
    assert "[gender]" not in prompt["content"]


@pytest.mark.parametrize(
    ("text", "opinion"),
    [
        ("Engineers from the north are lazy.", "Engineers from the north are lazy."),
        ("北方来的工程师都很懒。", "北方来的工程师都很懒。"),
        ("북쪽 출신 엔지니어들은 게으르다.", "북쪽 출신 엔지니어들은 게으르다."),
    ],
    ids=["english", "chinese", "korean"],
)
@pytest.mark.parametrize(
    ("setting", "asked"),
    [
        ({}, "the language the TEXT is written in"),
        ({"reason_language": "ko"}, "Korean (language code ko)"),
        ({"reason_language": "en"}, "English (language code en)"),
    ],
    ids=["auto", "ko", "en"],
)
def test_any_language_is_judged_as_written_with_reasons_in_the_asked_language(
    make_gateway: MakeGateway,
    fake_openai: FakeOpenAI,
    text: str,
    opinion: str,
    setting: dict[str, str],
    asked: str,
) -> None:
    fake_openai.reply = text
    fake_openai.opinions = [opinion]  # the fake quotes the text, as the prompt asks
    fake_openai.reason = {"auto": "点数是 1", "ko": "점수는 1입니다", "en": "The score is 1"}.get(
        setting.get("reason_language", "auto"), ""
    )
    gateway = make_gateway(
        judge={**setting, "reason": "inline"}, store={"capture_content": True}, **ENFORCE
    )
    raw = ask(gateway)
    record = gateway.wait_for_score(raw.headers["x-bias-run-id"])
    # The judge saw the text as written, and the prompt asked for reasons in the language.
    extract = next(r for r in fake_openai.requests if r.step == "preprocess")
    assert unfenced(extract.body["messages"][1]["content"]) == text
    assert "Never translate an opinion." in extract.body["messages"][1]["content"]
    assert {step for step, language in fake_openai.languages if language == asked} == {
        "analyze",
        "reason",
    }
    assert record["result"]["preprocessStepResult"]["opinions"] == [opinion]
    assert record["reason"] == fake_openai.reason


def test_bad_category_settings_are_config_errors() -> None:
    from pydantic import ValidationError

    from gateway.config import Settings

    with pytest.raises(ValidationError, match="reserved"):
        Settings.model_validate(
            {"judge": {"extra_categories": [{"id": "other", "description": "x"}]}}
        )
    with pytest.raises(ValidationError, match="twice"):
        Settings.model_validate(
            {"judge": {"extra_categories": [{"id": "gender", "description": "x"}]}}
        )
    with pytest.raises(ValidationError, match="id"):
        Settings.model_validate({"judge": {"categories": [{"id": "Age!", "description": "x"}]}})
    # Given under its old key, the error names the setting where it now lives.
    with pytest.raises(ValidationError, match=r"judge\.explanations\.language"):
        Settings.model_validate({"judge": {"reason_language": "korean please"}})
