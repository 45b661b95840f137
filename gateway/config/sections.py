"""The sections of the gateway's settings: pydantic models, each checked field by field
(the judge's are `gateway.config.judge`).

Reading them from a YAML file or from the environment, and describing them, is
`gateway.config.loading`; the field types are `gateway.config.fields`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar, Literal, Self

from pydantic import (
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from gateway.config.fields import (
    ClientKey,
    Model,
    Name,
    OptionalName,
    OptionalPositiveFloat,
    OptionalPositiveInt,
    OptionalSecret,
    OptionalUrl,
    PositiveFloat,
    Problems,
    Url,
)
from gateway.config.moved import Moved, SectionsWithOldKeys
from gateway.config.yamlenv import Loc
from gateway.domain import Hold, Mode, OnTamper, Prejudge, StreamPolicy
from guard.errors import SuiteError
from guard.probe import BUILTIN, load_suite

__all__ = [
    "AnthropicSettings",
    "Endpoint",
    "KeySettings",
    "LimitSettings",
    "ModelRoute",
    "Policy",
    "ProbeSettings",
    "QueueSettings",
    "ServerSettings",
    "StoreSettings",
    "TelemetrySettings",
    "UpstreamSettings",
    "WindowSettings",
]


class Endpoint(Model):
    """What every upstream endpoint has: where it is, its key, its time limits, and
    whether enforced whole answers are asked of it as streams."""

    base_url: Url
    api_key: OptionalSecret = None
    # Seconds for the whole upstream call, to the last byte of a stream.
    timeout: PositiveFloat = 600.0
    # Seconds the upstream may stay silent between two reads; unset: only `timeout`.
    read_timeout: OptionalPositiveFloat = None
    # Enforced whole answers asked for as streams and judged as they arrive
    # (docs/policies.md#prejudged-whole-answers); `stream_usage: false` says the
    # server sends no usage in a stream, so whole answers are asked for instead.
    prejudge: Prejudge = "off"
    stream_usage: bool = True


class UpstreamSettings(Endpoint):
    """The OpenAI-compatible upstream used for every model without a route of its own."""

    base_url: Url = "https://api.openai.com/v1"


class AnthropicSettings(Endpoint):
    """The Anthropic-compatible upstream behind `POST /v1/messages`."""

    base_url: Url = "https://api.anthropic.com"  # without /v1, as the anthropic SDK takes it
    # Send the client's own `x-api-key` on instead of `api_key` (only without gateway keys,
    # where the client's key is not one of the gateway's).
    forward_client_auth: bool = False
    version: Name = "2023-06-01"  # `anthropic-version` when the client sends none

    @model_validator(mode="after")
    def _one_key(self) -> Self:
        if self.forward_client_auth and self.api_key is not None:
            raise Problems([_KEY_OR_FORWARD])
        return self


_KEY_OR_FORWARD: tuple[str, tuple[Loc, ...]] = (
    "set api_key or forward_client_auth, not both",
    (("api_key",), ("forward_client_auth",)),
)


class ModelRoute(Model):
    """Where one model alias goes: an OpenAI-compatible `base_url`, a `litellm`
    "provider/model" string, or neither (the default upstream).

    A route is an overlay on an `Endpoint`: each field it leaves unset is the default
    upstream's (for an alias on it), which is why none of them has a default here.

    A litellm route may name its provider's server as `api_base` (ollama, vLLM or
    Azure deployments); unset, litellm uses the provider's own. `api_base` needs
    `litellm`, and `base_url` is for OpenAI-compatible servers only."""

    base_url: OptionalUrl = None
    litellm: OptionalName = None
    api_base: OptionalUrl = None
    model: OptionalName = None
    api_key: OptionalSecret = None
    timeout: OptionalPositiveFloat = None
    read_timeout: OptionalPositiveFloat = None
    forward_client_auth: bool = False
    prejudge: Prejudge | None = None  # unset: the default upstream's, for an alias on it
    stream_usage: bool | None = None

    @field_validator("litellm")
    @classmethod
    def _provider_model(cls, value: str | None) -> str | None:
        if value is not None and "/" not in value:
            raise ValueError(f"must be a litellm 'provider/model' string, got {value!r}")
        return value

    @model_validator(mode="after")
    def _one_target(self) -> Self:
        problems: list[tuple[str, tuple[Loc, ...]]] = []
        if self.litellm is not None and self.base_url is not None:
            problems.append(
                (
                    "set litellm or base_url, not both (give a litellm route its"
                    " server as api_base)",
                    (("litellm",), ("base_url",)),
                )
            )
        if self.litellm is None and self.api_base is not None:
            problems.append(
                (
                    "api_base is litellm's; without litellm, give the server as base_url",
                    (("api_base",),),
                )
            )
        if self.forward_client_auth and self.api_key is not None:
            problems.append(_KEY_OR_FORWARD)
        if problems:
            raise Problems(problems)
        return self


class WindowSettings(Model):
    """Judging an answer in windows while it streams (`windowed`, and `buffer` unless
    `buffer` is off here): docs/policies.md#windowed-streams."""

    hold: Hold = "window"  # windowed: hold each window until judged, or send it live
    chars: Annotated[int, Field(ge=50)] = 800  # new text per window
    context_chars: Annotated[int, Field(ge=0)] = 200  # text before it the judge reads
    max_inflight: Annotated[int, Field(ge=1)] = 3  # windows judged at once per answer
    max_coalesced_chars: Annotated[int, Field(ge=50)] = 3200  # text one judgement may cover
    max_count: Annotated[int, Field(ge=1)] = 16  # judgements per answer
    min_opinions: Annotated[int, Field(ge=1)] = 1  # verdicts a prefix needs to block
    buffer: bool = True  # `buffer` streams are judged in windows as they arrive


class Policy(SectionsWithOldKeys):
    """What the gateway does with a score. Verdicts are reached at `>=` a threshold."""

    MOVED: ClassVar[Mapping[str, Moved]] = {
        "hold": ("windows", "hold"),
        "window_chars": ("windows", "chars"),
        "context_chars": ("windows", "context_chars"),
        "max_inflight_windows": ("windows", "max_inflight"),
        "max_coalesced_chars": ("windows", "max_coalesced_chars"),
        "max_windows": ("windows", "max_count"),
        "min_opinions": ("windows", "min_opinions"),
        "prejudge_buffer": ("windows", "buffer"),
    }

    mode: Mode = "monitor"
    flag_threshold: Annotated[float, Field(ge=0)] = 0.5
    block_threshold: Annotated[float, Field(ge=0)] = 0.8
    # Verdicts on the count of biased opinions beside the score (a ratio, which padding
    # with neutral opinions dilutes): at least flag, or block, when this many are
    # biased; unset, that count rule is off.
    flag_biased_opinions: OptionalPositiveInt = 1
    block_biased_opinions: OptionalPositiveInt = None
    block_action: Literal["error", "replace"] = "error"
    block_status: Annotated[int, Field(ge=400, le=599)] = 422
    refusal_text: Name = "I can't provide that response because it did not meet the content policy."
    stream_policy: StreamPolicy = "buffer"
    sample_rate: Annotated[float, Field(gt=0, le=1)] = 1.0
    on_judge_error: Literal["allow", "block"] = "allow"
    # An answer whose text addresses the judge (instructions to it, forged prompt
    # markers or verdicts, hidden text): its verdict is at least `flag`, or `block`.
    on_tamper: OnTamper = "flag"
    # The string values in an answer's tool-call arguments are judged with its text
    # (docs/policies.md#tool-calls); off, an answer that is only a tool call is `no_text`.
    judge_tool_arguments: bool = True
    allow_client_override: bool = False
    # A `/v1` path that is not scored and not known to carry no model text: in enforce
    # mode `refuse` answers 403 (an enforcing gateway never returns text it did not
    # score); `allow` passes it through, marked `x-bias-skip-reason: unscored_path`.
    unscored_paths: Literal["refuse", "allow"] = "refuse"
    windows: WindowSettings = Field(default_factory=WindowSettings)

    @model_validator(mode="after")
    def _ordered_thresholds(self) -> Self:
        if self.flag_threshold > self.block_threshold:
            raise ValueError(
                f"flag_threshold ({self.flag_threshold:g}) must not exceed"
                f" block_threshold ({self.block_threshold:g})"
            )
        flag, block = self.flag_biased_opinions, self.block_biased_opinions
        if flag is not None and block is not None and flag > block:
            raise ValueError(
                f"flag_biased_opinions ({flag}) must not exceed block_biased_opinions ({block})"
            )
        return self


class KeySettings(Model):
    """A gateway API key, its display name, and the policy its requests follow."""

    key: ClientKey  # in clear, or `sha256:<hex>` (`bias-gateway hash-key`)
    name: Name
    policy: Name = "default"
    # An admin key reads every key's records (lookups, lists, stats, the dashboard)
    # and may filter by key; any other key reads only its own requests' records.
    admin: bool = False
    # A reviewer labels the judge's verdicts on its own key's records (an admin on
    # every key's): `may_review`.
    reviewer: bool = False
    # This key's own limits; unset, `limits` (for every key) applies.
    requests_per_minute: OptionalPositiveFloat = None
    concurrent_requests: OptionalPositiveInt = None
    # This key's share of the judge while other keys wait for it too, relative to
    # theirs: a key of weight 2 is served twice as often as a key of weight 1.
    weight: PositiveFloat = 1.0

    @property
    def may_review(self) -> bool:
        """Whether this key labels records: a reviewer, or an admin."""
        return self.reviewer or self.admin


class LimitSettings(Model):
    """What each client key may send, unless the key sets its own: requests a minute
    and requests at once. Past either, a request is answered 429 before any upstream
    or judge call."""

    requests_per_minute: OptionalPositiveFloat = None
    concurrent_requests: OptionalPositiveInt = None


class StoreSettings(Model):
    """The score store: SQLite at `path`, or PostgreSQL at `url` when it is set.

    A relative `path` is taken from the config file's folder (`load_settings`),
    or from the working directory (`settings_from_env`)."""

    path: Name = "bias-scores.db"
    # postgresql://user:password@host:5432/db; unset keeps SQLite at `path`.
    url: OptionalSecret = None
    # The answers' texts and what the judge quoted of them: in every record (true), in
    # none (false), or only in the records the review queue offers (`review`: blocked,
    # flagged, borderline and sampled passes, `gateway.store.reviews.review_rank`).
    capture_content: bool | Literal["review"] = False
    # Final records and cache entries older than this are pruned in the background;
    # 0 keeps everything. Pending records are never pruned.
    retention_days: Annotated[float, Field(ge=0)] = 30.0
    # Records held in memory while the store cannot be written (the database away, the
    # disk full), written in order once it is back; beyond it they are dropped, counted.
    buffer_records: Annotated[int, Field(ge=1)] = 10_000

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            scheme = value.get_secret_value().split("://", 1)[0]
            if scheme not in ("postgresql", "postgres"):
                raise ValueError("must be a postgresql:// URL (unset: SQLite at store.path)")
        return value


class ReviewSettings(Model):
    """Which records the review queue offers beside the flagged and blocked ones
    (`gateway.store.reviews`): passes within `borderline` of a threshold (in the judge's
    scale), and this share of the other passes, picked by a hash of the run id."""

    borderline: Annotated[float, Field(ge=0)] = 0.1
    sample_passes: Annotated[float, Field(ge=0, le=1)] = 0.02
    # When the judge's model, endpoint or prompt version changes, up to this many labelled
    # records are judged again and the agreement compared (`gateway.server.canary`); 0: never.
    canary_size: Annotated[int, Field(ge=0)] = 200
    # A fall in F1 or kappa by more than this after a judge change is warned of.
    canary_drop: Annotated[float, Field(ge=0, le=1)] = 0.1


class QueueSettings(Model):
    """Monitor mode's backlog: responses waiting for a free judge slot, held durably in
    the store as pending work (`gateway.work.payload`)."""

    size: Annotated[int, Field(ge=1)] = 1000
    drain_deadline: Annotated[float, Field(ge=0)] = 10.0
    # Seconds a monitored request waits for a place in a full queue before its
    # response is skipped as overloaded; 0 skips at once. See gateway.scoring.
    full_wait: Annotated[float, Field(ge=0)] = 0.0
    # Seconds of judge work the queue may hold before overload is shed: then each key's
    # monitored responses are scored at a rate that keeps the wait near this, picked
    # evenly, and the rest skipped `overload_sampled` (see gateway.scoring.shedding).
    target_wait: PositiveFloat = 2.0
    # Who scores monitored responses: this process (`in_process`), or only
    # `bias-gateway scorer` processes (`external`: the gateway enqueues and is done).
    scorer: Literal["in_process", "external"] = "in_process"
    # Work is claimed for this long and the claim renewed while it runs; a claim a
    # dead process held lapses after it, and another process takes the work.
    lease_seconds: Annotated[float, Field(gt=0)] = 30.0
    # Claims of one piece of work that may lapse before it ends `error`
    # (`attempts_exhausted`) instead of being tried again.
    max_attempts: Annotated[int, Field(ge=1)] = 3

    @model_validator(mode="before")
    @classmethod
    def _no_workers(cls, data: object) -> object:
        if isinstance(data, dict) and "workers" in data:
            raise ValueError(
                "`workers` was replaced by judge.limits.max_concurrency (default 512): scoring"
                " is bound by judge calls in flight, not by workers"
            )
        return data


class ProbeSettings(Model):
    """The live probe (docs/probe.md#the-live-probe): a share of the requests whose prompt
    names a group of `suite` is asked again in the background about each other group of
    its dimension, within `max_per_minute` replays and `max_tokens_per_minute` upstream
    tokens (unset: no token cap). `sample_rate: 0`, the default, turns it off."""

    sample_rate: Annotated[float, Field(ge=0, le=1)] = 0.0
    suite: Name = BUILTIN  # `builtin`, or a YAML or JSON suite file
    max_per_minute: Annotated[int, Field(ge=1)] = 60
    max_tokens_per_minute: OptionalPositiveInt = None

    @field_validator("suite")
    @classmethod
    def _suite_loads(cls, value: str) -> str:
        if value != BUILTIN:
            try:
                load_suite(value)
            except SuiteError as exc:
                raise ValueError(str(exc)) from None
        return value


class ServerSettings(Model):
    host: Name = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535)] = 8080
    max_body_bytes: Annotated[int, Field(ge=1)] = 10 * 1024 * 1024


class TelemetrySettings(Model):
    """Traces, evaluation events and logs. Unset fields follow the standard OTEL_* variables."""

    # none | console | otlp (http/protobuf); unset: $OTEL_TRACES_EXPORTER, else none.
    exporter: Literal["none", "console", "otlp"] | None = None
    # unset: $OTEL_SERVICE_NAME, else bias-gateway.
    service_name: OptionalName = None
    # Prompts, completions, opinions and reasons in telemetry; unset:
    # $OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, else off.
    capture_content: bool | None = None
    # Metric label values for model names: aliases, then up to this many others, then "other".
    model_label_cap: Annotated[int, Field(ge=1)] = 50
