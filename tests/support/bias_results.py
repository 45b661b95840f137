"""A judge's `BiasResult` built by hand from its opinions and verdicts, for the tests of
what the gateway makes of results (merging windows, the tamper policy)."""

from __future__ import annotations

from guard import BiasResult, Usage, Verdict, bias_score
from guard.result import AnalyzeStepResult, PreprocessStepResult


def judged(
    opinions: list[str], results: list[str], *, calls: int = 2, tokens: int = 10
) -> BiasResult:
    verdicts = [
        Verdict(result=r, reason="why", categories=["gender"] if r == "yes" else [])
        for r in results
    ]
    return BiasResult(
        run_id="r",
        preprocess_step_result=PreprocessStepResult(opinions=opinions),
        preprocess_prompt="p",
        analyze_step_result=AnalyzeStepResult(results=verdicts),
        analyze_prompt="a",
        score=bias_score(results),
        reason=None,
        generate_reason_prompt=None,
        scale=1,
        judge_model="judge",
        judge_calls=calls,
        durations_ms={"preprocess": 5.0, "analyze": 7.0},
        usage=Usage(prompt_tokens=tokens, completion_tokens=1),
        calls_by_step={"preprocess": 1, "analyze": calls - 1},
        usage_by_step={"analyze": Usage(prompt_tokens=tokens)},
    )
