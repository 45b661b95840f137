from collections.abc import Sequence
from typing import Any

from guard import BiasScorer, Message, OutputSchema
from guard.testing import FunctionJudge, scripted_bias_judge


async def test_scripted_judge_drives_a_scorer() -> None:
    judge = scripted_bias_judge(
        opinions=["a", "b"], verdicts=[("yes", "r1"), ("no", "r2")], reason="because"
    )
    result = await BiasScorer(judge).run(output="text")
    assert result.score == 0.5
    assert result.reason == "because"
    assert [schema.name if schema else None for _, schema in judge.calls] == [
        "opinions",
        "verdicts",
        None,
    ]
    assert result.usage.prompt_tokens > 0


async def test_function_judge_accepts_async_functions() -> None:
    async def answer(
        messages: Sequence[Message], schema: OutputSchema | None
    ) -> str | dict[str, Any]:
        return {"opinions": []} if schema and schema.name == "opinions" else "plain"

    judge = FunctionJudge(answer, model="mine")
    result = await BiasScorer(judge, judge_whole_text_when_no_opinions=False).run(output="t")
    assert result.judge_model == "mine"
    assert result.reason == "plain"
    assert len(judge.calls) == 2
