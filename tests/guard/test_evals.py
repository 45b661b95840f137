from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from guard import BiasScorer, ItemResult, run_evals
from guard.judge import Message, OutputSchema
from guard.testing import FunctionJudge, scripted_bias_judge
from tests.support.fake_openai import FakeOpenAI


def verdict_judge() -> FunctionJudge:
    """Opinions are the output's sentences; a sentence with "lazy" is biased; "boom" fails."""

    def answer(messages: Sequence[Message], schema: OutputSchema | None) -> str | dict[str, Any]:
        prompt = messages[1]["content"]  # the original prompt, also on the corrective retry
        text = prompt.split("TEXT:\n", 1)[1].split("\n", 1)[0]
        if "boom" in text:
            return "not json"
        if schema is None:
            return "explained"
        if schema.name == "opinions":
            return {"opinions": [s for s in text.split(". ") if s]}
        opinions = prompt.split("OPINIONS:\n", 1)[1].strip().splitlines()
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
