"""Categories (`guard.bias.categories`) and the language of reasons, in the prompts
and the result. Pure, plus the scorer against a scripted judge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from guard import (
    DEFAULT_CATEGORIES,
    BiasScorer,
    Category,
    Message,
    OutputSchema,
    create_bias_scorer,
)
from guard.bias.categories import (
    OTHER,
    category_ids,
    category_scores,
    check_categories,
    normalise_categories,
)
from guard.bias.prompts import PROMPT_VERSION, BiasPrompts, language_phrase
from guard.testing import FunctionJudge

KNOWN = category_ids(DEFAULT_CATEGORIES)
AGE = Category("age", "Age bias: judging people by how old they are.")


@pytest.mark.parametrize(
    ("named", "biased", "expected"),
    [
        (["gender"], True, ["gender"]),
        ([" Gender ", "POLITICAL"], True, ["gender", "political"]),
        (["racial-ethnic", "racial ethnic"], True, ["racial_ethnic"]),
        (["age"], True, [OTHER]),  # not in the list: kept, as other
        (["age", "gender", "religion"], True, [OTHER, "gender"]),
        ([], True, [OTHER]),  # biased but naming none: still counted
        (["", 3, None], True, [OTHER]),
        (["gender"], False, []),  # an unbiased verdict names none
        (["gender", "gender"], True, ["gender"]),
    ],
)
def test_verdict_categories_are_normalised(
    named: list[Any], biased: bool, expected: list[str]
) -> None:
    assert normalise_categories(named, KNOWN, biased=biased) == expected


@pytest.mark.parametrize(
    ("verdicts", "total", "scale", "expected"),
    [
        ([], 0, 1, {}),
        ([["gender"], []], 2, 1, {"gender": 0.5}),
        ([["gender", "political"], ["gender"], [], []], 4, 1, {"gender": 0.5, "political": 0.25}),
        ([["geographical"], ["age"], ["age"]], 3, 10, {"age": 6.67, "geographical": 3.33}),
        ([["b"], ["a"]], 2, 1, {"a": 0.5, "b": 0.5}),  # ties by id
    ],
)
def test_category_scores_use_the_score_formula(
    verdicts: list[list[str]], total: int, scale: float, expected: dict[str, float]
) -> None:
    scores = category_scores(verdicts, total, scale)
    assert scores == expected
    assert list(scores) == list(expected)  # most frequent first


@pytest.mark.parametrize(
    ("categories", "message"),
    [
        ([], "at least one"),
        ([Category("Gender", "x")], "lower-case"),
        ([Category("1st", "x")], "lower-case"),
        ([Category("other", "x")], "reserved"),
        ([AGE, AGE], "twice"),
        ([Category("age", " ")], "one non-empty line"),
        ([Category("age", "two\nlines")], "one non-empty line"),
    ],
)
def test_bad_category_lists_are_refused(categories: list[Category], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_categories(categories)


def test_the_rubric_lists_the_categories_and_the_version_follows_them() -> None:
    default, extended, replaced = (
        BiasPrompts(),
        BiasPrompts([*DEFAULT_CATEGORIES, AGE]),
        BiasPrompts([AGE]),
    )
    prompt = extended.analyze("TEXT", ["an opinion"])
    for category in [*DEFAULT_CATEGORIES, AGE]:
        assert f"[{category.id}] {category.description}" in prompt
    assert "[gender]" not in replaced.analyze("TEXT", ["x"])
    assert '"categories": ["age"]' in replaced.analyze("TEXT", ["x"])
    assert "[age]" in replaced.assess("TEXT")
    assert default.version == PROMPT_VERSION
    versions = {
        default.version,
        extended.version,
        replaced.version,
        BiasPrompts(reason_language="ko").version,
    }
    assert len(versions) == 4
    assert BiasPrompts().version == default.version  # stable for equal settings


@pytest.mark.parametrize(
    ("code", "phrase"),
    [
        ("auto", "the language the TEXT is written in"),
        ("en", "English (language code en)"),
        ("zh", "Chinese (language code zh)"),
        ("ko", "Korean (language code ko)"),
        ("pt-BR", "Portuguese (language code pt-BR)"),
        ("tlh", "the language with the code 'tlh'"),
    ],
)
def test_the_language_of_reasons_is_named_in_every_prompt_that_writes_one(
    code: str, phrase: str
) -> None:
    prompts = BiasPrompts(reason_language=code)
    assert language_phrase(code) == phrase

    def flat(text: str) -> str:
        return " ".join(text.split())

    assert f"Write every reason in {phrase}." in flat(prompts.analyze("T", ["o"]))
    assert f"Write in {phrase}." in flat(prompts.reason("T", 0.5, 1, ["r"]))
    assert f"why, in {phrase};" in flat(prompts.assess("T"))
    # Opinions are never translated, whatever the language of reasons.
    assert "Never translate an opinion." in prompts.extract("T")


def answering(verdicts: Sequence[dict[str, Any]], opinions: Sequence[str]) -> FunctionJudge:
    def answer(messages: Sequence[Message], schema: OutputSchema | None) -> Any:
        if schema is None:
            return "The score is 0.67 because of the quoted words."
        if schema.name == "opinions":
            return {"opinions": list(opinions)}
        return {"results": list(verdicts)}

    return FunctionJudge(answer)


async def test_the_result_carries_categories_and_their_scores() -> None:
    judge = answering(
        [
            {"result": "yes", "categories": ["gender", "political"], "reason": "r1"},
            {"result": "Yes.", "categories": ["Age"], "reason": "r2"},
            {"result": "no", "categories": ["gender"], "reason": "r3"},
        ],
        ["o1", "o2", "o3"],
    )
    result = await BiasScorer(judge, categories=[*DEFAULT_CATEGORIES, AGE]).run(output="text")
    assert [v.categories for v in result.analyze_step_result.results] == [
        ["gender", "political"],
        ["age"],
        [],
    ]
    assert result.score == 0.67
    assert result.category_scores == {"age": 0.33, "gender": 0.33, "political": 0.33}
    assert result.to_json_dict()["categoryScores"] == result.category_scores
    assert result.categories == ["age", "gender", "political"]


async def test_a_judge_that_ignores_categories_still_gets_every_biased_opinion_counted() -> None:
    judge = answering(
        [{"result": "yes", "reason": "r"}, {"result": "no", "reason": "r"}], ["o1", "o2"]
    )
    result = await create_bias_scorer(judge).run(output="text")
    assert result.category_scores == {OTHER: 0.5}
    assert result.analyze_step_result.results[1].categories == []


def test_create_bias_scorer_takes_categories_and_a_language() -> None:
    judge = answering([], [])
    scorer = create_bias_scorer(judge, categories=[AGE], reason_language="zh")
    assert scorer.categories == (AGE,)
    assert scorer.prompts.reason_language == "zh"
    assert scorer.prompt_version != create_bias_scorer(judge).prompt_version
