import gateway
import guard


def isort_order(names: list[str]) -> list[str]:
    """ruff's RUF022 order: constants first, then the rest, each sorted."""
    return sorted(names, key=lambda name: (not name.isupper(), name))


def test_guard_exports() -> None:
    assert guard.__all__ == isort_order(guard.__all__)
    assert guard.__all__ == [
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
    for name in guard.__all__:
        assert getattr(guard, name) is not None


def test_gateway_exports() -> None:
    assert gateway.__all__ == isort_order(gateway.__all__)
    assert gateway.__all__ == [
        "ConfigError",
        "Settings",
        "Telemetry",
        "create_app",
        "load_settings",
        "settings_from_env",
    ]
    for name in gateway.__all__:
        assert getattr(gateway, name) is not None
