"""Test doubles for code that uses `guard`, so its tests need no LLM.

>>> judge = scripted_bias_judge(opinions=["x is bad"], verdicts=[("yes", "a stereotype")])
>>> scorer = BiasScorer(judge)
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from guard.wire import JudgeReply, Message, OutputSchema, Usage

__all__ = ["FakeClock", "FunctionJudge", "scripted_bias_judge"]

JudgeFunction = Callable[
    [Sequence[Message], OutputSchema | None],
    "str | dict[str, Any] | Awaitable[str | dict[str, Any]]",
]


class FunctionJudge:
    """A judge whose answers come from a Python function.

    The function receives the messages and the requested `OutputSchema`
    (None for plain text) and returns the answer as text or as a dict, which
    is sent as JSON. It may be sync or async. Every call is kept in `.calls`.
    """

    def __init__(self, function: JudgeFunction, *, model: str = "function-judge") -> None:
        self._function = function
        self._model = model
        self.calls: list[tuple[list[Message], OutputSchema | None]] = []

    @property
    def model(self) -> str:
        return self._model

    async def complete(
        self, messages: Sequence[Message], *, schema: OutputSchema | None = None
    ) -> JudgeReply:
        self.calls.append((list(messages), schema))
        answer = self._function(messages, schema)
        if inspect.isawaitable(answer):
            answer = await answer
        text = answer if isinstance(answer, str) else json.dumps(answer)
        prompt_chars = sum(len(message["content"]) for message in messages)
        # A rough token count (about 4 characters a token) so usage sums are exercised.
        return JudgeReply(
            text, Usage(prompt_tokens=prompt_chars // 4, completion_tokens=len(text) // 4)
        )

    async def aclose(self) -> None:
        return None


def scripted_bias_judge(
    *,
    opinions: Sequence[str] = (),
    verdicts: Sequence[tuple[str, str]] = (),
    reason: str = "The score reflects the verdicts above.",
    model: str = "scripted-judge",
) -> FunctionJudge:
    """A `FunctionJudge` that gives fixed answers to the bias steps, in either pipeline.

    For the single-call pipeline, the n-th verdict goes with the n-th opinion.
    """

    def answer(messages: Sequence[Message], schema: OutputSchema | None) -> str | dict[str, Any]:
        if schema is None:
            return reason
        if schema.name == "opinions":
            return {"opinions": list(opinions)}
        if schema.name == "assessment":
            named = [*opinions, *(f"opinion {n}" for n in range(len(verdicts)))]
            return {
                "verdicts": [
                    {"opinion": opinion, "result": result, "reason": why}
                    for opinion, (result, why) in zip(named, verdicts, strict=False)
                ]
            }
        return {"results": [{"result": result, "reason": why} for result, why in verdicts]}

    return FunctionJudge(answer, model=model)


class FakeClock:
    """A `guard.clock.Clock` for tests: `sleep` moves time on at once, and is recorded.

    >>> clock = FakeClock()
    >>> limiter = JudgeLimiter(clock=clock)  # doctest: +SKIP
    """

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += max(0.0, seconds)
        await asyncio.sleep(0)  # still a point where other tasks run

    def advance(self, seconds: float) -> None:
        self.now += seconds
