"""The judge's section of the settings: the judge LLM, its limits and its rubric."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from gateway.config.fields import (
    Model,
    Name,
    OptionalPositiveFloat,
    OptionalPositiveInt,
    OptionalSecret,
    OptionalUrl,
    PositiveFloat,
)
from gateway.domain import CATEGORY_ID, ReasonMode
from guard.bias.categories import DEFAULT_CATEGORIES, Category, check_categories

__all__ = ["CategorySettings", "JudgeSettings"]

LanguageCode = Annotated[str, Field(pattern=r"^(auto|[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*)$")]


class CategorySettings(Model):
    """A kind of bias the rubric names: an id and a one-line description."""

    id: Annotated[str, Field(pattern=f"^{CATEGORY_ID.pattern}$")]
    description: Name


class JudgeSettings(Model):
    """The judge LLM; `base_url` and `api_key` default to the upstream's."""

    model: Name = "gpt-4o-mini"
    base_url: OptionalUrl = None
    api_key: OptionalSecret = None
    timeout: PositiveFloat = 30.0  # seconds per judge call
    max_retries: Annotated[int, Field(ge=0)] = 1  # for 5xx and refused connections
    # The longest answer a judge call may get, in tokens; unset, the endpoint's own limit.
    # A small local model held to a schema may otherwise write until its context is full.
    max_tokens: OptionalPositiveInt = None
    scale: PositiveFloat = 1.0
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
    # Seconds an enforced response waits for its score, rate-limit waits included;
    # then it follows the policy's on_judge_error.
    enforce_deadline: PositiveFloat = 30.0
    # faithful: Mastra's steps (extract, then judge each opinion); single: one call for both.
    pipeline: Literal["faithful", "single"] = "faithful"
    # With `single`: judge up to this many short monitored answers (at most
    # batch_max_chars each) in one call, waiting at most batch_linger seconds to fill
    # a batch; 1 judges each alone. Enforced answers never wait for a batch.
    batch_size: Annotated[int, Field(ge=1, le=64)] = 1
    batch_linger: Annotated[float, Field(gt=0, le=5)] = 0.05
    batch_max_chars: Annotated[int, Field(ge=1)] = 2000
    # The explanation: deferred (the score decides at once, the reason lands in the
    # store and the lookup afterwards), inline (before the response), or off.
    reason: ReasonMode = "deferred"
    include_reason: bool | None = None  # the older switch: false means reason: off
    # Whose score is explained: every one (`all`), or only those the policy flags or
    # blocks (`flagged`): a passing answer's record says reason_status `not_needed`.
    reason_for: Literal["all", "flagged"] = "flagged"
    judge_whole_text_when_no_opinions: bool = True
    # Identical response texts are judged once: an LRU of this many results (0 = off).
    cache_size: Annotated[int, Field(ge=0)] = 10000
    # Keep the cache in the score store too, so a restart starts with it warm.
    cache_persist: bool = False
    # The judge sees at most this many characters of a response (per choice); a longer
    # text is cut, and its record says `truncated`. It also bounds what a stream keeps.
    max_text_chars: Annotated[int, Field(ge=1)] = 100_000
    # The kinds of bias the rubric names. Unset: the four defaults (gender, political,
    # racial_ethnic, geographical); a list replaces them; `extra_categories` adds to
    # whichever list is in force. A verdict naming another id counts as `other`.
    categories: list[CategorySettings] | None = None
    extra_categories: list[CategorySettings] = Field(default_factory=list)
    # The language of reasons and explanations: auto (the judged text's own) or a
    # code such as en, zh, ko. Opinions are always quoted untranslated.
    reason_language: LanguageCode = "auto"

    @property
    def reason_mode(self) -> ReasonMode:
        return "off" if self.include_reason is False else self.reason

    @property
    def concurrency_bound(self) -> int:
        """The most judge calls ever in flight: `max_concurrency`, or its ceiling when auto."""
        auto = self.max_concurrency == "auto"
        return self.concurrency_ceiling if auto else int(self.max_concurrency)

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
        if self.batch_size > 1 and self.pipeline != "single":
            raise ValueError(
                "judge.batch_size above 1 needs pipeline: single (one call judges a batch)"
            )
        return self

    @model_validator(mode="after")
    def _ordered_concurrency(self) -> Self:
        if self.concurrency_start > self.concurrency_ceiling:
            raise ValueError(
                f"judge.concurrency_start ({self.concurrency_start}) must not exceed"
                f" judge.concurrency_ceiling ({self.concurrency_ceiling})"
            )
        return self

    @model_validator(mode="after")
    def _valid_categories(self) -> Self:
        try:
            check_categories(self.bias_categories())
        except ValueError as exc:
            raise ValueError(f"judge.categories: {exc}") from None
        return self
