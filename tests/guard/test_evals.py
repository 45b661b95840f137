from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from guard import BiasScorer, ItemResult, Message, OutputSchema, run_evals
from guard.bias.fence import unfenced
from guard.evals import CategorySummary, category_breakdown
from guard.result import AnalyzeStepResult, BiasResult, PreprocessStepResult
from guard.testing import FunctionJudge, scripted_bias_judge
from testkit.fake_openai import FakeOpenAI


def verdict_judge() -> FunctionJudge:
    """Opinions are the output's sentences; a sentence with "lazy" is biased; "boom" fails."""

    def answer(messages: Sequence[Message], schema: OutputSchema | None) -> str | dict[str, Any]:
        prompt = messages[1]["content"]  # the original prompt, also on the corrective retry
        text = unfenced(prompt) or ""
        if "boom" in text:
            return "not json"
        if schema is None:
            return "explained"
        if schema.name == "opinions":
            return {"opinions": [s for s in text.split(". ") if s]}
        opinions = (unfenced(prompt, "OPINIONS") or "").splitlines()
        return {
            "results": [
                {"result": "yes" if "lazy" in line else "no", "reason": "r"} for line in opinions
            ]
        }

    return FunctionJudge(answer)


async def test_mean_scores_and_one_failure_does_not_abort() -> None:
    data = [
        {"input": "a", "output": "They are lazy. I like tea"},  # 0.5
        {"input": "b", "output": "They are lazy"},  # 1
        {"input": "c", "output": "boom"},  # judge returns garbage twice: fails
        {"input": "d", "output": "Tea is nice"},  # 0
    ]
    completed: list[ItemResult] = []

    report = await run_evals(
        data=data,
        scorers=[BiasScorer(verdict_judge())],
        on_item_complete=completed.append,
        concurrency=2,
    )

    assert report["scores"] == {"bias-scorer": 0.5}
    assert report["summary"] == {"totalItems": 4, "failedItems": 1}
    # Biased verdicts that name no category count as "other": (0.5 + 1 + 0) / 3.
    assert report["categories"] == {
        "bias-scorer": [{"category": "other", "items": 2, "meanScore": 0.5}]
    }
    assert report["errors"][0]["index"] == 2
    assert "JudgeOutputError" in report["errors"][0]["error"]
    assert sorted(item.index for item in completed) == [0, 1, 2, 3]
    assert next(item for item in completed if item.index == 2).failed


async def test_async_target_produces_outputs() -> None:
    async def target(question: str) -> str:
        if question == "explode":
            raise RuntimeError("target down")
        return f"They are lazy. {question}"

    seen: list[int] = []

    async def on_item(item: ItemResult) -> None:
        seen.append(item.index)

    report = await run_evals(
        data=[{"input": "Tea is nice"}, {"input": "explode"}],
        scorers=[BiasScorer(verdict_judge())],
        target=target,
        on_item_complete=on_item,
    )
    assert report["scores"]["bias-scorer"] == 0.5
    assert report["summary"]["failedItems"] == 1
    assert report["errors"][0] == {
        "index": 1,
        "source": "target",
        "error": "RuntimeError: target down",
    }
    assert sorted(seen) == [0, 1]


async def test_model_spec_target_is_called_over_http(fake_openai: FakeOpenAI) -> None:
    from guard import OpenAIJudge

    fake_openai.reply = "Engineers from the north are lazy."
    target = OpenAIJudge(base_url=fake_openai.base_url, model="chat-model")
    report = await run_evals(
        data=[{"input": "Tell me about engineers"}],
        scorers=[BiasScorer(scripted_bias_judge(opinions=["x"], verdicts=[("yes", "r")]))],
        target=target,
    )
    assert report["scores"]["bias-scorer"] == 1
    assert fake_openai.requests[0].body["messages"] == [
        {"role": "user", "content": "Tell me about engineers"}
    ]


async def test_all_failed_gives_no_mean() -> None:
    report = await run_evals(
        data=[{"input": "x", "output": "boom"}], scorers=[BiasScorer(verdict_judge())]
    )
    assert report["scores"] == {"bias-scorer": None}
    assert report["summary"] == {"totalItems": 1, "failedItems": 1}


async def test_item_without_output_or_target_fails_alone() -> None:
    report = await run_evals(
        data=[{"input": "x"}, {"input": "y", "output": "Tea"}],
        scorers=[BiasScorer(verdict_judge())],
    )
    assert report["summary"] == {"totalItems": 2, "failedItems": 1}
    assert "no target" in report["errors"][0]["error"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"concurrency": 0}, "concurrency"),
        ({"scorers": []}, "at least one scorer"),
        ({"data": [{"output": "no input"}]}, "input"),
        ({"target": 42}, "target must be"),
    ],
)
async def test_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {
        "data": [{"input": "x"}],
        "scorers": [BiasScorer(verdict_judge())],
    }
    arguments.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=message):
        await run_evals(**arguments)


# -- the per-category breakdown -------------------------------------------------------


def scored(category_scores: dict[str, float], *, scale: float = 1) -> BiasResult:
    """A result that only carries what `category_breakdown` reads."""
    return BiasResult(
        run_id="r",
        preprocess_step_result=PreprocessStepResult(opinions=[]),
        preprocess_prompt=None,
        analyze_step_result=AnalyzeStepResult(results=[]),
        analyze_prompt=None,
        score=max(category_scores.values(), default=0),
        reason=None,
        generate_reason_prompt=None,
        scale=scale,
        judge_model="j",
        judge_calls=0,
        category_scores=category_scores,
    )


def breakdown(*scores: dict[str, float]) -> list[tuple[str, int, float]]:
    return [
        (summary.category, summary.items, summary.mean_score)
        for summary in category_breakdown(scored(one) for one in scores)
    ]


def test_breakdown_of_nothing_is_empty() -> None:
    assert category_breakdown([]) == []


def test_breakdown_without_any_category_is_empty() -> None:
    assert breakdown({}, {}, {}) == []


def test_breakdown_counts_items_and_averages_over_every_scored_item() -> None:
    # gender in 2 of 4 items: (0.5 + 1) / 4; an item without it counts 0.
    assert breakdown({"gender": 0.5}, {"gender": 1, "political": 0.25}, {}, {}) == [
        ("gender", 2, 0.375),
        ("political", 1, 0.0625),
    ]


def test_breakdown_is_sorted_by_items_then_mean_then_id() -> None:
    assert breakdown(
        {"b": 0.1, "a": 0.1, "c": 0.9, "d": 0.2},
        {"d": 0.2},
        {"e": 0.5, "f": 0.5},
    ) == [
        ("d", 2, round(0.4 / 3, 4)),  # most items
        ("c", 1, 0.3),  # then the higher mean
        ("e", 1, round(0.5 / 3, 4)),  # then the id
        ("f", 1, round(0.5 / 3, 4)),
        ("a", 1, round(0.1 / 3, 4)),
        ("b", 1, round(0.1 / 3, 4)),
    ]


def test_breakdown_rounds_means_to_four_places() -> None:
    assert breakdown({"gender": 1}, {}, {}) == [("gender", 1, 0.3333)]


def test_breakdown_counts_an_item_whose_category_score_rounds_to_zero() -> None:
    # One biased opinion of 300 scores round(1 / 300, 2) = 0: the item still has one.
    assert breakdown({"gender": 0.0}, {}) == [("gender", 1, 0.0)]


def test_breakdown_keeps_the_results_scale() -> None:
    results = [scored({"gender": 5}, scale=10), scored({"gender": 10}, scale=10)]
    [summary] = category_breakdown(results)
    assert summary == CategorySummary("gender", 2, 7.5)


def test_breakdown_reads_any_iterable_once() -> None:
    results = iter([scored({"gender": 1}), scored({})])
    assert category_breakdown(results) == [CategorySummary("gender", 1, 0.5)]


def test_category_summary_json() -> None:
    assert CategorySummary("gender", 2, 0.25).to_json() == {
        "category": "gender",
        "items": 2,
        "meanScore": 0.25,
    }


def category_judge() -> FunctionJudge:
    """One opinion per sentence; "lazy" is geographical bias, "women" gender bias."""

    def answer(messages: Sequence[Message], schema: OutputSchema | None) -> str | dict[str, Any]:
        prompt = messages[1]["content"]
        text = unfenced(prompt) or ""
        if schema is None:
            return "explained"
        if schema.name == "opinions":
            return {"opinions": [s for s in text.split(". ") if s]}
        opinions = (unfenced(prompt, "OPINIONS") or "").splitlines()
        results = []
        for line in opinions:
            named = [
                name
                for word, name in (("lazy", "geographical"), ("women", "gender"))
                if word in line
            ]
            results.append({"result": "yes" if named else "no", "reason": "r", "categories": named})
        return {"results": results}

    return FunctionJudge(answer)


async def test_run_evals_reports_the_breakdown_per_scorer() -> None:
    report = await run_evals(
        data=[
            {"input": "a", "output": "Northerners are lazy. I like tea"},  # geographical 0.5
            {"input": "b", "output": "Lazy women, lazy men"},  # one opinion: both at 1
            {"input": "c", "output": "Tea is nice"},  # none
            {"input": "d"},  # fails: no output, no target; not scored, so not averaged
        ],
        scorers=[BiasScorer(category_judge())],
    )
    assert report["categories"] == {
        "bias-scorer": [
            {"category": "geographical", "items": 2, "meanScore": 0.5},
            {"category": "gender", "items": 1, "meanScore": 0.3333},
        ]
    }
    # The existing fields are as they were.
    assert report["summary"] == {"totalItems": 4, "failedItems": 1}
    assert report["scores"] == {"bias-scorer": 0.5}


async def test_run_evals_breakdown_when_nothing_was_scored() -> None:
    report = await run_evals(data=[{"input": "x"}], scorers=[BiasScorer(verdict_judge())])
    assert report["categories"] == {"bias-scorer": []}
