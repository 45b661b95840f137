"""The judge's section of the settings: the judge LLM, its limits and its rubric."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar, Literal, Self

from pydantic import Field, TypeAdapter, ValidationError, model_validator

from gateway.config.fields import (
    Model,
    Name,
    OptionalPositiveFloat,
    OptionalPositiveInt,
    OptionalSecret,
    OptionalUrl,
    PositiveFloat,
)
from gateway.config.moved import Moved, SectionsWithOldKeys
from gateway.domain import CATEGORY_ID, ReasonMode
from guard.bias.categories import DEFAULT_CATEGORIES, Category, check_categories

__all__ = [
    "Batching",
    "CategorySettings",
    "Explanations",
    "JudgeCache",
    "JudgeLimits",
    "JudgeSettings",
]

LanguageCode = Annotated[str, Field(pattern=r"^(auto|[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*)$")]


class CategorySettings(Model):
    """A kind of bias the rubric names: an id and a one-line description."""

    id: Annotated[str, Field(pattern=f"^{CATEGORY_ID.pattern}$")]
    description: Name


class JudgeLimits(Model):
    """How hard the gateway may call the judge."""

    # Judge calls in flight at once, all lanes together (enforce first, then monitor, then
    # explanations; docs/policies.md). Scoring keeps pace with about max_concurrency /
    # (round trips per score x seconds per call) req/s. `auto` finds what the judge
    # sustains, from concurrency_start up to concurrency_ceiling.
    max_concurrency: Annotated[int, Field(ge=1)] | Literal["auto"] = 512
    concurrency_start: Annotated[int, Field(ge=1)] = 8
    concurrency_ceiling: Annotated[int, Field(ge=1)] = 512
    # The longest a 429 pauses every judge call, whatever the judge asked for; then one
    # probe call finds out whether it is over (docs/policies.md).
    max_pause: Annotated[float, Field(gt=0, le=60)] = 5.0
    # Optional budgets, enforced before calls are sent (a 429 pauses the client anyway).
    max_requests_per_minute: OptionalPositiveFloat = None
    max_tokens_per_minute: OptionalPositiveFloat = None
    # Seconds a monitored scoring may spend rate-limited (429s) before it ends `error`.
    rate_limit_wait: PositiveFloat = 600.0

    @property
    def concurrency_bound(self) -> int:
        """The most judge calls ever in flight: `max_concurrency`, or its ceiling when auto."""
        auto = self.max_concurrency == "auto"
        return self.concurrency_ceiling if auto else int(self.max_concurrency)

    @model_validator(mode="after")
    def _ordered_concurrency(self) -> Self:
        if self.concurrency_start > self.concurrency_ceiling:
            raise ValueError(
                f"judge.limits.concurrency_start ({self.concurrency_start}) must not exceed"
                f" judge.limits.concurrency_ceiling ({self.concurrency_ceiling})"
            )
        return self


class Batching(Model):
    """With `pipeline: single`: up to `size` short monitored answers (at most `max_chars`
    each) judged in one call, waiting at most `linger` seconds to fill a batch; 1 judges
    each alone. Enforced answers never wait for a batch."""

    size: Annotated[int, Field(ge=1, le=64)] = 1
    linger: Annotated[float, Field(gt=0, le=5)] = 0.05
    max_chars: Annotated[int, Field(ge=1)] = 2000


class Explanations(Model):
    """The judge's explanation of a score."""

    # deferred: the score decides at once, the reason lands in the store and the lookup
    # afterwards; inline: before the response; off.
    mode: ReasonMode = "deferred"
    # Whose score is explained: every one (`all`), or only those the policy flags or
    # blocks (`flagged`): a passing answer's record says reason_status `not_needed`.
    scope: Literal["all", "flagged"] = "flagged"
    # The language of reasons and explanations: auto (the judged text's own) or a
    # code such as en, zh, ko. Opinions are always quoted untranslated.
    language: LanguageCode = "auto"


class JudgeCache(Model):
    """Identical response texts are judged once: an LRU of `size` results (0 = off);
    `persist` keeps it in the score store too, so a restart starts with it warm."""

    size: Annotated[int, Field(ge=0)] = 10000
    persist: bool = False


def _include_reason(value: object) -> tuple[str, str, object] | None:
    # The older switch: false meant what `explanations.mode: off` says (whatever `reason`
    # said); true said nothing.
    try:
        included = TypeAdapter(bool).validate_python(value)
    except ValidationError:
        raise ValueError(f"include_reason: must be true or false, got {value!r}") from None
    return None if included else ("explanations", "mode", "off")


class JudgeSettings(SectionsWithOldKeys):
    """The judge LLM; `base_url` and `api_key` default to the upstream's."""

    MOVED: ClassVar[Mapping[str, Moved]] = {
        **{
            name: ("limits", name)
            for name in (
                "max_concurrency",
                "concurrency_start",
                "concurrency_ceiling",
                "max_pause",
                "max_requests_per_minute",
                "max_tokens_per_minute",
                "rate_limit_wait",
            )
        },
        "batch_size": ("batching", "size"),
        "batch_linger": ("batching", "linger"),
        "batch_max_chars": ("batching", "max_chars"),
        "reason": ("explanations", "mode"),
        "include_reason": _include_reason,
        "reason_for": ("explanations", "scope"),
        "reason_language": ("explanations", "language"),
        "cache_size": ("cache", "size"),
        "cache_persist": ("cache", "persist"),
    }

    model: Name = "gpt-4o-mini"
    base_url: OptionalUrl = None
    api_key: OptionalSecret = None
    timeout: PositiveFloat = 30.0  # seconds per judge call
    max_retries: Annotated[int, Field(ge=0)] = 1  # for 5xx and refused connections
    # The longest answer a judge call may get, in tokens; unset, the endpoint's own limit.
    # A small local model held to a schema may otherwise write until its context is full.
    max_tokens: OptionalPositiveInt = None
    scale: PositiveFloat = 1.0
    # Seconds an enforced response waits for its score, rate-limit waits included;
    # then it follows the policy's on_judge_error.
    enforce_deadline: PositiveFloat = 30.0
    # faithful: Mastra's steps (extract, then judge each opinion); single: one call for both.
    pipeline: Literal["faithful", "single"] = "faithful"
    judge_whole_text_when_no_opinions: bool = True
    # The judge sees at most this many characters of a response (per choice); a longer
    # text is cut, and its record says `truncated`. It also bounds what a stream keeps.
    max_text_chars: Annotated[int, Field(ge=1)] = 100_000
    # The kinds of bias the rubric names. Unset: the four defaults (gender, political,
    # racial_ethnic, geographical); a list replaces them; `extra_categories` adds to
    # whichever list is in force. A verdict naming another id counts as `other`.
    categories: list[CategorySettings] | None = None
    extra_categories: list[CategorySettings] = Field(default_factory=list)
    limits: JudgeLimits = Field(default_factory=JudgeLimits)
    batching: Batching = Field(default_factory=Batching)
    explanations: Explanations = Field(default_factory=Explanations)
    cache: JudgeCache = Field(default_factory=JudgeCache)

    def bias_categories(self) -> list[Category]:
        """The categories in force, as the scorer takes them."""
        chosen = (
            list(DEFAULT_CATEGORIES)
            if self.categories is None
            else [Category(item.id, item.description) for item in self.categories]
        )
        return [*chosen, *(Category(item.id, item.description) for item in self.extra_categories)]

    @model_validator(mode="after")
    def _batches_need_one_call(self) -> Self:
        if self.batching.size > 1 and self.pipeline != "single":
            raise ValueError(
                "judge.batching.size above 1 needs pipeline: single (one call judges a batch)"
            )
        return self

    @model_validator(mode="after")
    def _valid_categories(self) -> Self:
        try:
            check_categories(self.bias_categories())
        except ValueError as exc:
            raise ValueError(f"judge.categories: {exc}") from None
        return self
