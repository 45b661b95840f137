"""Errors raised by `guard`.

Every error the library raises derives from `GuardError`; foreign exceptions
(httpx, litellm) are translated in `guard.judge` and chained with `from`.

    GuardError
    ├── OutputShapeError (also ValueError)   the output to score holds no assistant text
    ├── LabelledDataError                    a labelled file for calibration cannot be read
    ├── SuiteError                           a probe suite cannot be read or is not valid
    ├── TargetError                          the model a probe tests gave no usable answer
    └── JudgeError                           the judge LLM gave no usable answer
        ├── JudgeUnavailable                 refused, unreachable, or 429/5xx after retries
        ├── JudgeTimeout                     one judge call passed its timeout
        └── JudgeOutputError                 the judge answered, but not in the shape asked

A `JudgeError` raised from a scorer run names the step that failed in `.step`.
"""

from __future__ import annotations

__all__ = [
    "GuardError",
    "JudgeError",
    "JudgeOutputError",
    "JudgeTimeout",
    "JudgeUnavailable",
    "LabelledDataError",
    "OutputShapeError",
    "SuiteError",
    "TargetError",
]


class GuardError(Exception):
    """Base class of every error `guard` raises."""


class OutputShapeError(GuardError, ValueError):
    """The value passed as `output` holds no assistant text to score."""


class LabelledDataError(GuardError):
    """A labelled file (`guard.calibration`) is missing, unreadable, not in its format, or
    holds no usable item; the message names the file and, where it can, the line."""


class SuiteError(GuardError):
    """A probe suite (`guard.probe`) is missing, unreadable or not valid; the message says
    where."""


class TargetError(GuardError):
    """The model under test (`bias-guard probe`) failed to answer, after retries."""


class JudgeError(GuardError):
    """The judge LLM could not give a usable answer."""

    def __init__(self, message: str, *, step: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.step = step

    def __str__(self) -> str:
        if self.step is None:
            return self.message
        return f"{self.message} (step: {self.step})"


class JudgeUnavailable(JudgeError):
    """The judge could not be reached, refused the call, or kept failing."""

    def __init__(
        self, message: str, *, status_code: int | None = None, step: str | None = None
    ) -> None:
        super().__init__(message, step=step)
        self.status_code = status_code


class JudgeTimeout(JudgeError):
    """A judge call did not finish within its timeout."""


class JudgeOutputError(JudgeError):
    """The judge answered, but its text could not be read as the requested shape."""

    def __init__(self, message: str, *, raw: str, step: str | None = None) -> None:
        super().__init__(message, step=step)
        self.raw = raw
