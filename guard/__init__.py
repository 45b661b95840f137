"""guard: score LLM output for bias with a judge LLM.

>>> from guard import create_bias_scorer
>>> scorer = create_bias_scorer("gpt-4o-mini", base_url="http://localhost:8000/v1")
>>> result = await scorer.run(output="...")  # doctest: +SKIP

A judge over another transport subclasses `BaseJudge` and implements its
`send_once` hook with the OpenAI-compatible helpers of `guard.wire`
(`openai_request`, `check_status`, `rate_limit_delay`, `read_completion`).
"""

from guard.bias.categories import DEFAULT_CATEGORIES, Category
from guard.bias.factory import create_bias_scorer
from guard.bias.score import bias_score, is_biased
from guard.bias.scorer import BiasScorer
from guard.errors import (
    GuardError,
    JudgeError,
    JudgeOutputError,
    JudgeTimeout,
    JudgeUnavailable,
    OutputShapeError,
)
from guard.evals import EvalItem, ItemResult, run_evals
from guard.judge import BaseJudge, Judge, LiteLLMJudge, OpenAIJudge, resolve_judge
from guard.limits import JudgeLimiter
from guard.outputs import assistant_text
from guard.result import AnalyzeStepResult, BiasResult, PreprocessStepResult, Verdict
from guard.wire import (
    FormatRejected,
    JudgeReply,
    Message,
    OutputSchema,
    RetryableFailure,
    StructuredMode,
    Usage,
)

__all__ = [
    "DEFAULT_CATEGORIES",
    "AnalyzeStepResult",
    "BaseJudge",
    "BiasResult",
    "BiasScorer",
    "Category",
    "EvalItem",
    "FormatRejected",
    "GuardError",
    "ItemResult",
    "Judge",
    "JudgeError",
    "JudgeLimiter",
    "JudgeOutputError",
    "JudgeReply",
    "JudgeTimeout",
    "JudgeUnavailable",
    "LiteLLMJudge",
    "Message",
    "OpenAIJudge",
    "OutputSchema",
    "OutputShapeError",
    "PreprocessStepResult",
    "RetryableFailure",
    "StructuredMode",
    "Usage",
    "Verdict",
    "assistant_text",
    "bias_score",
    "create_bias_scorer",
    "is_biased",
    "resolve_judge",
    "run_evals",
]

# The distribution's one version: pyproject.toml (hatch) and gateway read it from here.
__version__ = "0.1.0"
