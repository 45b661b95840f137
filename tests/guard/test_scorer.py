"""End-to-end scorer runs against the fake judge served by uvicorn."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from guard import (
    BiasScorer,
    JudgeOutputError,
    JudgeTimeout,
    JudgeUnavailable,
    OutputShapeError,
    create_bias_scorer,
)
from guard.bias.fence import rules_before, unfenced
from guard.bias.prompts import SYSTEM_PROMPT
from testkit.fake_openai import FakeOpenAI, Fault
from tests.support.mastra import MASTRA_FIELDS

MakeScorer = Callable[..., BiasScorer]


@pytest.mark.parametrize(
    ("verdicts", "scale", "expected"),
    [
        ([], 1, 0),
        (["yes"], 1, 1),
        (["no"], 1, 0),
        (["yes", "no", "no"], 1, 0.33),
        (["yes", "yes", "no"], 1, 0.67),
        (["yes", "no", "no", "no"], 1, 0.25),
        (["yes", "yes", "yes", "no", "no"], 1, 0.6),
        (["YES", "Yes.", " yes "], 1, 1),
        (["yes", "no", "no"], 10, 3.33),
    ],
)
async def test_score_formula_end_to_end(
    fake_openai: FakeOpenAI,
    make_scorer: MakeScorer,
    verdicts: list[str],
    scale: float,
    expected: float,
) -> None:
    fake_openai.opinions = [f"opinion {index}" for index in range(max(1, len(verdicts)))]
    fake_openai.verdicts = [(verdict, f"reason {index}") for index, verdict in enumerate(verdicts)]

    result = await make_scorer(scale=scale).run(output="Some text with opinions.")

    assert result.score == expected
    assert [verdict.result for verdict in result.analyze_step_result.results] == verdicts
    assert result.scale == scale


def test_result_has_mastra_field_names(fake_openai: FakeOpenAI, make_scorer: MakeScorer) -> None:
    result = make_scorer().run_sync(output="Engineers from the north are lazy.", run_id="run-1")
    dumped = result.model_dump(by_alias=True)

    assert set(dumped) >= MASTRA_FIELDS
    assert dumped["runId"] == "run-1"
    assert dumped["preprocessStepResult"] == {"opinions": ["Engineers from the north are lazy."]}
    # Mastra's shapes, with `categories` added to each verdict.
    assert dumped["analyzeStepResult"] == {
        "results": [
            {"result": "yes", "reason": "Geographical stereotype.", "categories": ["geographical"]}
        ]
    }
    assert dumped["categoryScores"] == {"geographical": 1}
    assert dumped["score"] == 1
    assert dumped["reason"] == fake_openai.reason
    assert set(dumped) - MASTRA_FIELDS == {
        "scale",
        "judgeModel",
        "judgeCalls",
        "durationsMs",
        "usage",
        "callsByStep",
        "usageByStep",
        "pipeline",
        "categoryScores",
        "normalised",
        "tamper",
    }
    assert (dumped["normalised"], dumped["tamper"]) == ([], [])
    assert dumped["judgeModel"] == "judge"
    assert dumped["pipeline"] == "faithful"
    assert dumped["callsByStep"] == {"preprocess": 1, "analyze": 1, "generate_reason": 1}
    assert (
        sum(step["promptTokens"] for step in dumped["usageByStep"].values())
        == (dumped["usage"]["promptTokens"])
    )
    assert set(dumped["durationsMs"]) == {"preprocess", "analyze", "generate_reason"}
    assert dumped["usage"]["promptTokens"] > 0
    assert dumped["usage"]["completionTokens"] > 0
    assert result.run_id == "run-1"  # attributes stay snake_case


def test_run_id_is_generated_when_absent(make_scorer: MakeScorer) -> None:
    first = make_scorer().run_sync(output="x")
    second = make_scorer().run_sync(output="x")
    assert re.fullmatch(r"[0-9a-f-]{36}", first.run_id)
    assert first.run_id != second.run_id


def test_prompts_sent_to_the_judge(fake_openai: FakeOpenAI, make_scorer: MakeScorer) -> None:
    text = 'The {team} from "the south" is {{clearly}} the best.'
    result = make_scorer().run_sync(output=text)

    assert fake_openai.steps() == ["preprocess", "analyze", "reason"]
    for recorded in fake_openai.requests:
        messages = recorded.body["messages"]
        assert messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
        assert text in messages[1]["content"]  # user braces arrive untouched
    assert "balanced" in SYSTEM_PROMPT.lower() or "fairly" in SYSTEM_PROMPT.lower()
    extract = result.preprocess_prompt or ""
    for phrase in ("subjective", "factual claims", "wrong fact", "reports from someone else"):
        assert phrase in extract
    analyze = result.analyze_prompt or ""
    for category in ("Gender bias", "Political bias", "Racial or ethnic bias", "Geographical bias"):
        assert category in analyze
    assert analyze.count("Biased: ") == 4
    assert analyze.count("Neutral: ") == 4
    for check in ("discriminatory language", "stereotypes", "perspective", "loaded"):
        assert check in analyze
    assert "suggests a" in analyze
    assert "required for every verdict" in analyze
    for prompt in (extract, analyze, result.generate_reason_prompt or ""):
        own_text = prompt.replace(text, "")
        assert "{{" not in own_text
        assert "}}" not in own_text
    assert '{"opinions": [' in extract
    assert '{"results": [{"result": "yes"' in analyze


@pytest.mark.parametrize("pipeline", ["faithful", "single"])
def test_a_window_is_judged_with_its_context_after_the_fixed_rules(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer, pipeline: str
) -> None:
    """The part of every prompt that never changes comes first (a provider's prompt
    cache serves it); the context follows, marked as not to be judged, then the TEXT."""
    context, text = "Earlier words of the answer.", "The window's own text."
    windowed = make_scorer(pipeline=pipeline).run_sync(output=text, context=context)
    whole = make_scorer(pipeline=pipeline).run_sync(output=text)
    prompts = [windowed.preprocess_prompt or "", windowed.analyze_prompt or ""]
    plain = [whole.preprocess_prompt or "", whole.analyze_prompt or ""]
    for prompt, without in zip(prompts, plain, strict=True):
        fixed = rules_before(without)
        assert prompt.startswith(fixed)
        marked = prompt.index("The CONTEXT below")
        assert "list no opinion from it" in prompt
        assert unfenced(prompt, "CONTEXT") == context
        assert unfenced(prompt) == text
        assert marked < prompt.index(context) < prompt.index(text)
        assert context not in without


@pytest.mark.parametrize("opinions", [["One view."], ["One view.", "Another.", "A third."], []])
def test_the_verdicts_asked_for_are_exactly_one_per_opinion(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer, opinions: list[str]
) -> None:
    # A server held to the schema (llama.cpp's) must close the list after the last one.
    fake_openai.opinions = opinions
    fake_openai.verdicts = [("no", "Fine.")] * max(1, len(opinions))
    make_scorer().run_sync(output="Some text with views.")
    analyze = next(r for r in fake_openai.requests if r.step == "analyze")
    results = analyze.body["response_format"]["json_schema"]["schema"]["properties"]["results"]
    count = max(1, len(opinions))  # none: the whole text is the one opinion judged
    assert (results["minItems"], results["maxItems"]) == (count, count)


async def test_no_opinions_judges_the_whole_text(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    fake_openai.opinions = []
    fake_openai.verdicts = [("yes", "States a stereotype as fact.")]
    text = "Northerners are lazy."

    result = await make_scorer().run(output=text)

    assert fake_openai.steps() == ["preprocess", "analyze", "reason"]
    assert result.preprocess_step_result.opinions == []
    assert result.analyze_prompt is not None
    assert unfenced(result.analyze_prompt, "OPINIONS") == "1. " + text
    assert result.score == 1


async def test_no_opinions_can_score_zero_without_analyze(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    fake_openai.opinions = []
    fake_openai.reason = "The score is 0 because the text holds no opinions."

    result = await make_scorer(judge_whole_text_when_no_opinions=False).run(output="Water is wet.")

    assert fake_openai.steps() == ["preprocess", "reason"]
    assert result.score == 0
    assert result.analyze_prompt is None
    assert result.analyze_step_result.results == []
    assert result.judge_calls == 2


async def test_include_reason_false_makes_two_calls(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    result = await make_scorer(include_reason=False).run(output="Northerners are lazy.")

    assert fake_openai.judge_calls() == 2
    assert result.reason is None
    assert result.generate_reason_prompt is None
    assert result.judge_calls == 2
    assert result.score == 1


async def test_default_run_makes_three_calls(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    result = await make_scorer().run(output="Northerners are lazy.")
    assert fake_openai.judge_calls() == 3
    assert result.judge_calls == 3


async def test_empty_output_makes_no_calls(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    result = await make_scorer().run(output="   ")
    assert fake_openai.judge_calls() == 0
    assert result.score == 0
    assert result.reason is not None
    assert "empty" in result.reason


@pytest.mark.parametrize(
    "content",
    [
        '```json\n{"opinions": ["fenced opinion"]}\n```',
        'Sure, here they are: {"opinions": ["fenced opinion"], "confidence": "high",}',
    ],
)
async def test_tolerant_parsing(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer, content: str
) -> None:
    fake_openai.fail(Fault(step="preprocess", content=content))
    result = await make_scorer().run(output="text")
    assert result.preprocess_step_result.opinions == ["fenced opinion"]
    assert fake_openai.steps() == ["preprocess", "analyze", "reason"]


@pytest.mark.parametrize(
    "bad", ["this is not json at all", '{"opinion": ["missing the plural key"]}']
)
async def test_bad_json_is_retried_once_with_a_correction(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer, bad: str
) -> None:
    fake_openai.fail(Fault(step="preprocess", content=bad))

    result = await make_scorer().run(output="text")

    assert fake_openai.steps() == ["preprocess", "preprocess", "analyze", "reason"]
    retry = fake_openai.requests[1].body["messages"]
    assert retry[-2] == {"role": "assistant", "content": bad}
    assert "could not be used" in retry[-1]["content"]
    assert result.judge_calls == 4
    assert result.score == 1


async def test_bad_json_twice_raises_with_raw_text_and_step(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    fake_openai.fail(
        Fault(step="analyze", content="garbage one"), Fault(step="analyze", content="garbage two")
    )
    with pytest.raises(JudgeOutputError) as caught:
        await make_scorer().run(output="text")
    assert caught.value.raw == "garbage two"
    assert caught.value.step == "analyze"
    assert "step: analyze" in str(caught.value)


async def test_reason_json_is_unwrapped(fake_openai: FakeOpenAI, make_scorer: MakeScorer) -> None:
    fake_openai.fail(
        Fault(step="reason", content='```json\n{"reason": "The score is 1 because X."}\n```')
    )
    result = await make_scorer().run(output="text")
    assert result.reason == "The score is 1 because X."


async def test_timeout_maps_to_judge_timeout(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    fake_openai.fail(Fault(step="preprocess", delay=2.0))
    with pytest.raises(JudgeTimeout) as caught:
        await make_scorer(timeout=0.2).run(output="text")
    assert caught.value.step == "preprocess"


async def test_server_errors_are_retried(fake_openai: FakeOpenAI, make_scorer: MakeScorer) -> None:
    fake_openai.fail(Fault(step="analyze", status=500), Fault(step="analyze", status=503))
    scorer = make_scorer(max_retries=2)
    scorer.judge.backoff = 0.01  # type: ignore[attr-defined]

    result = await scorer.run(output="text")

    assert fake_openai.steps() == ["preprocess", "analyze", "analyze", "analyze", "reason"]
    assert result.score == 1


async def test_persistent_server_errors_raise_unavailable(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    fake_openai.fail(*[Fault(step="preprocess", status=500) for _ in range(3)])
    scorer = make_scorer(max_retries=1)
    scorer.judge.backoff = 0.01  # type: ignore[attr-defined]
    with pytest.raises(JudgeUnavailable) as caught:
        await scorer.run(output="text")
    assert caught.value.status_code == 500
    assert caught.value.step == "preprocess"
    assert fake_openai.judge_calls() == 2


async def test_unreachable_judge_raises_unavailable() -> None:
    scorer = create_bias_scorer("judge", base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(JudgeUnavailable, match="unreachable"):
        await scorer.run(output="text")


@pytest.mark.parametrize(
    "output",
    [
        "Engineers from the north are lazy.",
        {"text": "Engineers from the north are lazy."},
        [{"role": "assistant", "content": "Engineers from the north are lazy."}],
        {
            "choices": [
                {"message": {"role": "assistant", "content": "Engineers from the north are lazy."}}
            ]
        },
    ],
)
async def test_every_output_shape_is_scored(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer, output: Any
) -> None:
    await make_scorer().run(input="q", output=output)
    user_prompt = fake_openai.requests[0].body["messages"][1]["content"]
    assert unfenced(user_prompt) == "Engineers from the north are lazy."


async def test_shape_without_text_raises_before_any_call(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    with pytest.raises(OutputShapeError):
        await make_scorer().run(output=[{"role": "user", "content": "hi"}])
    assert fake_openai.requests == []


@pytest.mark.parametrize("scale", [0, -2.5])
def test_scale_must_be_positive(scale: float) -> None:
    with pytest.raises(ValueError, match="scale must be > 0"):
        create_bias_scorer("judge", base_url="http://127.0.0.1:9/v1", scale=scale)


async def test_run_sync_refuses_inside_a_loop(make_scorer: MakeScorer) -> None:
    with pytest.raises(RuntimeError, match="await run"):
        make_scorer().run_sync(output="x")


async def test_concurrent_runs_share_one_judge(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    scorer = make_scorer()
    results = await asyncio.gather(*(scorer.run(output=f"text {i}") for i in range(5)))
    assert len({result.run_id for result in results}) == 5
    assert fake_openai.judge_calls() == 15
    json.dumps([result.to_json_dict() for result in results])  # every result serialises


# -- the single-call pipeline and the reason modes ----------------------------------------


async def test_single_pipeline_makes_one_call_before_the_score(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    fake_openai.opinions = ["Engineers from the north are lazy.", "Tea is nice."]
    fake_openai.verdicts = [("yes", "Geographical stereotype."), ("no", "A taste.")]
    scorer = make_scorer(pipeline="single", reason="off")
    result = await scorer.run(output="Engineers from the north are lazy. Tea is nice.")
    assert fake_openai.steps() == ["assess"]
    assert result.score == 0.5
    assert result.preprocess_step_result.opinions == fake_openai.opinions
    assert [v.result for v in result.analyze_step_result.results] == ["yes", "no"]
    assert result.preprocess_prompt == result.analyze_prompt
    assert result.preprocess_prompt is not None
    assert "Tea is nice." in result.preprocess_prompt
    assert result.pipeline == "single"
    assert result.calls_by_step == {"assess": 1}
    assert result.reason is None


async def test_single_pipeline_with_an_inline_reason_makes_two_calls(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    result = await make_scorer(pipeline="single").run(output="Engineers from the north are lazy.")
    assert fake_openai.steps() == ["assess", "reason"]
    assert result.reason == fake_openai.reason
    assert result.judge_calls == 2
    dumped = result.model_dump(by_alias=True)
    assert set(dumped) >= MASTRA_FIELDS


@pytest.mark.parametrize("whole_text", [True, False])
async def test_single_pipeline_asks_for_the_whole_text_rule_as_configured(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer, whole_text: bool
) -> None:
    scorer = make_scorer(pipeline="single", judge_whole_text_when_no_opinions=whole_text)
    await scorer.run(output="Some text.")
    prompt = fake_openai.requests[0].body["messages"][-1]["content"]
    assert ("judge the whole TEXT as one statement" in prompt) is whole_text


async def test_single_pipeline_whole_text_verdict_reports_no_opinions(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    text = "Northerners are lazy."
    fake_openai.opinions = [text]
    fake_openai.verdicts = [("yes", "Stereotype.")]
    result = await make_scorer(pipeline="single", reason="off").run(output=text)
    assert result.preprocess_step_result.opinions == []
    assert result.score == 1


async def test_deferred_reason_comes_from_explain(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    scorer = make_scorer(reason="deferred")
    text = "Engineers from the north are lazy."
    scored = await scorer.run(output=text, run_id="r1")
    assert scored.reason is None
    assert fake_openai.steps() == ["preprocess", "analyze"]
    explained = await scorer.explain(scored, text)
    assert fake_openai.steps() == ["preprocess", "analyze", "reason"]
    assert explained.reason == fake_openai.reason
    assert explained.run_id == "r1"
    assert explained.score == scored.score
    assert explained.judge_calls == 3
    assert explained.calls_by_step == {"preprocess": 1, "analyze": 1, "generate_reason": 1}
    assert explained.usage.prompt_tokens > scored.usage.prompt_tokens
    assert explained.generate_reason_prompt is not None


def test_include_reason_false_means_off(make_scorer: MakeScorer) -> None:
    scorer = make_scorer(include_reason=False, reason="inline")
    assert scorer.reason == "off"
    assert scorer.include_reason is False


@pytest.mark.parametrize(("option", "value"), [("pipeline", "fast"), ("reason", "later")])
def test_bad_pipeline_or_reason_mode_is_refused(
    make_scorer: MakeScorer, option: str, value: str
) -> None:
    with pytest.raises(ValueError, match=option):
        make_scorer(**{option: value})
