"""Several texts in one judge call (`BiasScorer.run_batch`), against the fake judge."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from guard import BiasScorer, JudgeOutputError
from guard.bias.batch import batch_prompt
from guard.bias.fence import rules_before, unfenced_batch
from guard.bias.prompts import BiasPrompts
from testkit.fake_openai import FakeOpenAI, Fault
from tests.support.texts import TEXTS, script

MakeScorer = Callable[..., BiasScorer]


def verdicts_of(result: object) -> tuple[object, ...]:
    return (
        result.score,  # type: ignore[attr-defined]
        result.preprocess_step_result.opinions,  # type: ignore[attr-defined]
        [v.model_dump() for v in result.analyze_step_result.results],  # type: ignore[attr-defined]
        result.category_scores,  # type: ignore[attr-defined]
    )


async def test_a_batch_gives_each_text_the_verdicts_it_gets_alone(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    script(fake_openai)
    scorer = make_scorer(pipeline="single", reason="off")
    alone = [await scorer.run(output=text) for text in TEXTS]
    fake_openai.requests.clear()
    batched = await scorer.run_batch(TEXTS, ["r1", "r2", "r3"])
    assert fake_openai.steps() == ["assess_batch"]
    assert [verdicts_of(result) for result in batched] == [verdicts_of(r) for r in alone]
    assert [result.run_id for result in batched] == ["r1", "r2", "r3"]
    assert [result.score for result in batched] == [1.0, 0.0, 0.5]
    # The one call is on the first result, so the batch's records add up to what it cost.
    assert [result.judge_calls for result in batched] == [1, 0, 0]
    assert batched[0].calls_by_step == {"assess_batch": 1}
    assert all(result.analyze_prompt is None for result in batched)


async def test_empty_texts_are_not_sent_and_score_zero(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer
) -> None:
    script(fake_openai)
    batched = await make_scorer(pipeline="single", reason="off").run_batch(["", TEXTS[0], " "])
    assert [result.score for result in batched] == [0.0, 1.0, 0.0]
    (call,) = fake_openai.requests
    prompt = call.body["messages"][-1]["content"]
    assert unfenced_batch(prompt)[0].startswith("Engineers from Quuxland")
    assert len(unfenced_batch(prompt)) == 1
    assert batched[1].judge_calls == 1


@pytest.mark.parametrize(
    "answer",
    [
        {"answers": [{"text": 1, "verdicts": []}]},  # one text short
        {"answers": [{"text": 1, "verdicts": []}, {"text": 1, "verdicts": []}]},  # twice
        {"answers": [{"text": 1, "verdicts": []}, {"text": 3, "verdicts": []}]},  # wrong number
    ],
)
async def test_an_answer_that_does_not_fit_the_batch_is_an_output_error(
    fake_openai: FakeOpenAI, make_scorer: MakeScorer, answer: dict[str, object]
) -> None:
    fake_openai.fail(Fault(step="assess_batch", content=json.dumps(answer)))
    scorer = make_scorer(pipeline="single", reason="off")
    with pytest.raises(JudgeOutputError) as caught:
        await scorer.run_batch(TEXTS[:2])
    assert "a batch of 2 texts" in str(caught.value)
    assert caught.value.step == "assess_batch"


async def test_batches_need_the_single_pipeline(make_scorer: MakeScorer) -> None:
    with pytest.raises(ValueError, match="single"):
        await make_scorer(reason="off").run_batch(TEXTS)


def test_the_prompt_numbers_each_text_between_its_markers_and_keeps_the_rules() -> None:
    prompts = BiasPrompts()
    prompt = batch_prompt(prompts, ["first {text}", "second"], judge_whole_text=True)
    assert unfenced_batch(prompt) == ["first {text}", "second"]
    code = re.findall(r"<<<TEXT 1 ([0-9a-f]{16})>>>\nfirst \{text\}\n<<<END TEXT 1 \1>>>", prompt)
    assert code
    assert f"<<<TEXT 2 {code[0]}>>>\nsecond\n<<<END TEXT 2 {code[0]}>>>" in prompt
    single_rules = rules_before(prompts.assess("x")).split("Answer with one JSON")[0]
    assert single_rules.split("Task:", 2)[1] in prompt  # the single call's rules, less its task
    assert "judge the whole TEXT as one statement" in prompt
    without = batch_prompt(prompts, ["x"], judge_whole_text=False)
    assert "judge the whole TEXT as one statement" not in without
