"""The packages' public names: `__all__` is pinned, in ruff's order, without repeats, and
says exactly what each package's namespace offers, each name the package's own."""

from __future__ import annotations

import inspect
import types

import pytest

import gateway
import guard

GUARD = [
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

GATEWAY = [
    "ConfigError",
    "Settings",
    "Telemetry",
    "create_app",
    "load_settings",
    "settings_from_env",
]

PACKAGES = pytest.mark.parametrize("package", [guard, gateway], ids=["guard", "gateway"])


def isort_order(names: list[str]) -> list[str]:
    """ruff's RUF022 order: constants first, then the rest, each sorted."""
    return sorted(names, key=lambda name: (not name.isupper(), name))


def public_names(package: types.ModuleType) -> set[str]:
    """The public names bound in a package's namespace, bar its submodules (which
    importing them binds there as a side effect)."""
    return {
        name
        for name, value in vars(package).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }


@pytest.mark.parametrize(
    ("package", "pinned"), [(guard, GUARD), (gateway, GATEWAY)], ids=["guard", "gateway"]
)
def test_all_is_the_pinned_list_in_order_without_repeats(
    package: types.ModuleType, pinned: list[str]
) -> None:
    exported = list(package.__all__)
    assert exported == pinned
    assert exported == isort_order(exported)
    assert len(set(exported)) == len(exported)


@PACKAGES
def test_all_names_exactly_the_public_names_of_the_package(package: types.ModuleType) -> None:
    # Every exported name is bound, and nothing public is bound that `__all__` leaves out.
    assert public_names(package) == set(package.__all__)


@PACKAGES
def test_each_exported_class_or_function_is_the_packages_own_under_its_own_name(
    package: types.ModuleType,
) -> None:
    for name in package.__all__:
        value = vars(package)[name]
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue  # a constant, e.g. DEFAULT_CATEGORIES
        assert value.__module__.split(".")[0] == package.__name__, (name, value.__module__)
        assert value.__name__ == name  # not an alias of something else
