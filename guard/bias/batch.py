"""Several short texts judged in one call: the `single` pipeline's prompt, asked of a batch.

The judge gets the same extraction rules and rubric as for one text, then the
texts, each fenced in its own numbered block (`guard.bias.fence`), and answers
with one verdict list per text, tagged with its number. `assess_batch` checks that every text got exactly
one list; any other answer is a `JudgeOutputError`, and the caller judges the
texts one by one instead (`BiasScorer.run_batch` leaves that to its caller).

The prompt is in this project's own words, like the rest (`BiasPrompts.batch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from guard.bias.prompts import BiasPrompts
from guard.bias.schemas import BATCH_SCHEMA
from guard.errors import JudgeOutputError
from guard.judge import Judge
from guard.result import AssessedOpinion
from guard.structured import ask_json
from guard.wire import Message, Usage

__all__ = ["BATCH_SCHEMA", "BatchAnswer", "BatchStepResult", "assess_batch", "batch_prompt"]


class BatchAnswer(BaseModel):
    """One text's verdicts in a batch's answer, by the text's number (from 1)."""

    model_config = ConfigDict(extra="ignore")

    text: int
    verdicts: list[AssessedOpinion] = Field(default_factory=list)


class BatchStepResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    answers: list[BatchAnswer]


def batch_prompt(prompts: BiasPrompts, texts: Sequence[str], *, judge_whole_text: bool) -> str:
    """The one prompt for `texts`, numbered from 1 (`BiasPrompts.batch`)."""
    return prompts.batch(texts, judge_whole_text=judge_whole_text)


async def assess_batch(
    judge: Judge, messages: Sequence[Message], count: int
) -> tuple[list[list[AssessedOpinion]], Usage, int]:
    """Ask for a batch's verdicts: one list per text, in the texts' order; what the call
    cost (tokens, calls). Raises `JudgeOutputError` unless every text 1..`count` got
    exactly one list."""
    reply = await ask_json(judge, messages, BATCH_SCHEMA, BatchStepResult)
    answers = reply.value.answers
    numbers = sorted(answer.text for answer in answers)
    if numbers != list(range(1, count + 1)):
        raise JudgeOutputError(
            f"a batch of {count} texts was answered for texts {numbers}",
            raw=_raw(reply.value.model_dump()),
        )
    by_number = {answer.text: answer.verdicts for answer in answers}
    return [by_number[number] for number in range(1, count + 1)], reply.usage, reply.calls


def _raw(answer: dict[str, Any]) -> str:
    return str(answer)[:2000]
