"""The gateway's configuration: YAML, `${VAR}` interpolation, pydantic validation.

A config file is parsed as YAML first; then `${NAME}` and `${NAME:-default}`
are replaced inside every string value of the loaded tree, so a value taken
from the environment can never add YAML structure. pydantic then coerces the
strings (`"0.5"` to a float, `"true"` to a bool) and checks everything. Every
problem surfaces in one `ConfigError` line naming the file, the field and the
problem, and first the variables behind a value that came from the environment
(a secret's value masked), for example

    config/x.yaml: policies.strict.block_threshold: Input should be greater than or equal to 0
    environment: BIAS_SCALE=ten: judge.scale: Input should be a valid number, ...

A relative `store.path` in a file is taken from the file's folder; from the
environment alone (`settings_from_env`), from the working directory.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from gateway.yamlenv import (
    ConfigError,
    Interpolated,
    Loc,
    format_loc,
    interpolate,
    interpolate_tree,
    parse_yaml,
)

__all__ = [
    "AnthropicSettings",
    "ConfigError",
    "JudgeSettings",
    "KeySettings",
    "ModelRoute",
    "Policy",
    "QueueSettings",
    "ServerSettings",
    "Settings",
    "StoreSettings",
    "TelemetrySettings",
    "UpstreamSettings",
    "describe_settings",
    "interpolate",
    "load_settings",
    "settings_from_env",
]


# --- field types -------------------------------------------------------------


def _blank_to_none(value: object) -> object:
    # `${VAR:-}` yields "", which for an optional field means "not set".
    if isinstance(value, str) and not value.strip():
        return None
    return value


def _redact_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{parts.username}:****@{host}").geturl()


def _check_url(value: str) -> str:
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http:// or https:// URL, got {_redact_url(value)!r}")
    # Upstream paths are appended as base_url + "/chat/completions".
    return parts.geturl().rstrip("/")


def _check_secret(value: SecretStr) -> SecretStr:
    if not value.get_secret_value().strip():
        raise ValueError("must not be empty")
    return value


Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Url = Annotated[str, AfterValidator(_check_url)]
Secret = Annotated[SecretStr, AfterValidator(_check_secret)]
PositiveFloat = Annotated[float, Field(gt=0)]
OptionalName = Annotated[Name | None, BeforeValidator(_blank_to_none)]
OptionalUrl = Annotated[Url | None, BeforeValidator(_blank_to_none)]
OptionalSecret = Annotated[SecretStr | None, BeforeValidator(_blank_to_none)]
OptionalPositiveFloat = Annotated[PositiveFloat | None, BeforeValidator(_blank_to_none)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Problems(ValueError):
    """What a model validator found, each problem with the fields it is about (relative
    to the model), so that the `ConfigError` can name the variables behind them."""

    def __init__(self, problems: list[tuple[str, tuple[Loc, ...]]]) -> None:
        super().__init__("; ".join(text for text, _ in problems))
        self.problems = problems


# --- models ------------------------------------------------------------------


class UpstreamSettings(_Model):
    """The OpenAI-compatible upstream used for every model without a route of its own."""

    base_url: Url = "https://api.openai.com/v1"
    api_key: OptionalSecret = None
    # Seconds for the whole upstream call, to the last byte of a stream.
    timeout: PositiveFloat = 600.0
    # Seconds the upstream may stay silent between two reads; unset: only `timeout`.
    read_timeout: OptionalPositiveFloat = None


class AnthropicSettings(_Model):
    """The Anthropic-compatible upstream behind `POST /v1/messages`."""

    base_url: Url = "https://api.anthropic.com"  # without /v1, as the anthropic SDK takes it
    api_key: OptionalSecret = None
    # Send the client's own `x-api-key` on instead of `api_key` (only without gateway keys,
    # where the client's key is not one of the gateway's).
    forward_client_auth: bool = False
    version: Name = "2023-06-01"  # `anthropic-version` when the client sends none
    timeout: PositiveFloat = 600.0
    read_timeout: OptionalPositiveFloat = None

    @model_validator(mode="after")
    def _one_key(self) -> Self:
        if self.forward_client_auth and self.api_key is not None:
            raise _Problems([_KEY_OR_FORWARD])
        return self


_KEY_OR_FORWARD: tuple[str, tuple[Loc, ...]] = (
    "set api_key or forward_client_auth, not both",
    (("api_key",), ("forward_client_auth",)),
)


class ModelRoute(_Model):
    """Where one model alias goes: an OpenAI-compatible `base_url`, a `litellm`
    "provider/model" string, or neither (the default upstream).

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
            raise _Problems(problems)
        return self


class JudgeSettings(_Model):
    """The judge LLM; `base_url` and `api_key` default to the upstream's."""

    model: Name = "gpt-4o-mini"
    base_url: OptionalUrl = None
    api_key: OptionalSecret = None
    timeout: PositiveFloat = 30.0  # seconds per judge call
    max_retries: Annotated[int, Field(ge=0)] = 1  # for 5xx and refused connections
    scale: PositiveFloat = 1.0
    # Judge calls in flight at once, monitor and enforce together. Scoring keeps pace
    # with about max_concurrency / (round trips per score x seconds per call) req/s.
    max_concurrency: Annotated[int, Field(ge=1)] = 512
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
    # The explanation: deferred (the score decides at once, the reason lands in the
    # store and the lookup afterwards), inline (before the response), or off.
    reason: Literal["inline", "deferred", "off"] = "deferred"
    include_reason: bool | None = None  # the older switch: false means reason: off
    judge_whole_text_when_no_opinions: bool = True
    # Identical response texts are judged once: an LRU of this many results (0 = off).
    cache_size: Annotated[int, Field(ge=0)] = 10000
    # Keep the cache in the score store too, so a restart starts with it warm.
    cache_persist: bool = False
    # The judge sees at most this many characters of a response (per choice); a longer
    # text is cut, and its record says `truncated`. It also bounds what a stream keeps.
    max_text_chars: Annotated[int, Field(ge=1)] = 100_000

    @property
    def reason_mode(self) -> Literal["inline", "deferred", "off"]:
        return "off" if self.include_reason is False else self.reason


class Policy(_Model):
    """What the gateway does with a score. Verdicts are reached at `>=` a threshold."""

    mode: Literal["off", "monitor", "enforce"] = "monitor"
    flag_threshold: Annotated[float, Field(ge=0)] = 0.5
    block_threshold: Annotated[float, Field(ge=0)] = 0.8
    block_action: Literal["error", "replace"] = "error"
    block_status: Annotated[int, Field(ge=400, le=599)] = 422
    refusal_text: Name = "I can't provide that response because it did not meet the content policy."
    stream_policy: Literal["buffer", "passthrough"] = "buffer"
    sample_rate: Annotated[float, Field(gt=0, le=1)] = 1.0
    on_judge_error: Literal["allow", "block"] = "allow"
    allow_client_override: bool = False
    # A `/v1` path that is not scored and not known to carry no model text: in enforce
    # mode `refuse` answers 403 (an enforcing gateway never returns text it did not
    # score); `allow` passes it through, marked `x-bias-skip-reason: unscored_path`.
    unscored_paths: Literal["refuse", "allow"] = "refuse"

    @model_validator(mode="after")
    def _ordered_thresholds(self) -> Self:
        if self.flag_threshold > self.block_threshold:
            raise ValueError(
                f"flag_threshold ({self.flag_threshold:g}) must not exceed"
                f" block_threshold ({self.block_threshold:g})"
            )
        return self


class KeySettings(_Model):
    """A gateway API key, its display name, and the policy its requests follow."""

    key: Secret
    name: Name
    policy: Name = "default"


class StoreSettings(_Model):
    """The score store: SQLite at `path`, or PostgreSQL at `url` when it is set.

    A relative `path` is taken from the config file's folder (`load_settings`),
    or from the working directory (`settings_from_env`)."""

    path: Name = "bias-scores.db"
    # postgresql://user:password@host:5432/db; unset keeps SQLite at `path`.
    url: OptionalSecret = None
    capture_content: bool = False
    # Final records and cache entries older than this are pruned in the background;
    # 0 keeps everything. Pending records are never pruned.
    retention_days: Annotated[float, Field(ge=0)] = 30.0

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            scheme = value.get_secret_value().split("://", 1)[0]
            if scheme not in ("postgresql", "postgres"):
                raise ValueError("must be a postgresql:// URL (unset: SQLite at store.path)")
        return value


class QueueSettings(_Model):
    """Monitor mode's backlog: responses waiting for a free judge slot."""

    size: Annotated[int, Field(ge=1)] = 1000
    drain_deadline: Annotated[float, Field(ge=0)] = 10.0
    # Seconds a monitored request waits for a place in a full queue before its
    # response is skipped as overloaded; 0 skips at once. See gateway.scoring.
    full_wait: Annotated[float, Field(ge=0)] = 0.0

    @model_validator(mode="before")
    @classmethod
    def _no_workers(cls, data: object) -> object:
        if isinstance(data, dict) and "workers" in data:
            raise ValueError(
                "`workers` was replaced by judge.max_concurrency (default 512): scoring"
                " is bound by judge calls in flight, not by workers"
            )
        return data


class ServerSettings(_Model):
    host: Name = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535)] = 8080
    max_body_bytes: Annotated[int, Field(ge=1)] = 10 * 1024 * 1024


class TelemetrySettings(_Model):
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


def _default_policies() -> dict[str, Policy]:
    return {"default": Policy()}


class Settings(_Model):
    """The whole gateway configuration. `Settings()` alone is a valid monitor-mode setup."""

    upstream: UpstreamSettings = Field(default_factory=UpstreamSettings)
    anthropic: AnthropicSettings = Field(default_factory=AnthropicSettings)
    models: dict[str, ModelRoute] = Field(default_factory=dict)
    route_unknown_models: bool = True
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    policies: dict[str, Policy] = Field(default_factory=_default_policies)
    default_policy: Name = "default"
    keys: list[KeySettings] = Field(default_factory=list)
    api_keys: list[Secret] = Field(default_factory=list)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    queue: QueueSettings = Field(default_factory=QueueSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)

    @field_validator("api_keys", mode="before")
    @classmethod
    def _split_api_keys(cls, value: object) -> object:
        # `${GATEWAY_API_KEYS:-}` arrives as one comma-separated string.
        if value is None:
            return []
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list):
            stripped = (item.strip() if isinstance(item, str) else item for item in value)
            return [item for item in stripped if item != ""]
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        known = ", ".join(sorted(self.policies))
        problems: list[tuple[str, tuple[Loc, ...]]] = []
        if self.default_policy not in self.policies:
            problems.append(
                (
                    f"default_policy: no policy named {self.default_policy!r} (defined: {known})",
                    (("default_policy",),),
                )
            )
        scale = self.judge.scale
        for name, policy in self.policies.items():
            # A threshold above the scale is never reached: enforce would never block.
            for field in ("flag_threshold", "block_threshold"):
                threshold: float = getattr(policy, field)
                if threshold > scale:
                    where = ("policies", name, field)
                    problems.append(
                        (
                            f"{format_loc(where)} ({threshold:g}) is above judge.scale"
                            f" ({scale:g}): a score can never reach it",
                            (where, ("judge", "scale")),
                        )
                    )
        for index, key in enumerate(self.keys):
            if key.policy not in self.policies:
                problems.append(
                    (
                        f"keys[{index}].policy: no policy named {key.policy!r} (defined: {known})",
                        (("keys", index, "policy"),),
                    )
                )
        names: set[str] = set()
        values: dict[str, str] = {}
        for key in self.all_keys():
            if key.name in names:
                problems.append((f"keys: name {key.name!r} is used twice", ()))
            names.add(key.name)
            secret = key.key.get_secret_value()
            if secret in values:
                # Never echo the key itself: name the two entries sharing it.
                text = f"keys: {values[secret]!r} and {key.name!r} have the same key"
                problems.append((text, ()))
            values.setdefault(secret, key.name)
        if problems:
            raise _Problems(problems)
        return self

    def all_keys(self) -> list[KeySettings]:
        """`keys`, then one key per `api_keys` entry, named `key-1`, `key-2`, ..."""
        generated = [
            KeySettings(key=key, name=f"key-{number}", policy=self.default_policy)
            for number, key in enumerate(self.api_keys, start=1)
        ]
        return [*self.keys, *generated]

    def judge_base_url(self) -> str:
        return self.judge.base_url or self.upstream.base_url

    def judge_api_key(self) -> SecretStr | None:
        return self.judge.api_key or self.upstream.api_key


def load_settings(path: str | Path, env: Mapping[str, str] | None = None) -> Settings:
    """Read, interpolate and validate a YAML config file.

    `env` defaults to `os.environ`. Raises `ConfigError` with one line naming
    the file, the field and the problem. A relative `store.path` is resolved
    against the file's folder, so the store does not move with the working directory.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        tree = parse_yaml(text)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if not isinstance(tree, dict):
        found = "an empty document" if tree is None else type(tree).__name__
        raise ConfigError(f"{path}: the top level must be a mapping, not {found}")
    settings = _build(tree, str(path), os.environ if env is None else env)
    store = Path(settings.store.path)
    if store.is_absolute():
        return settings
    anchored = os.path.abspath(Path(path).parent / store)
    return settings.model_copy(
        update={"store": settings.store.model_copy(update={"path": anchored})}
    )


def settings_from_env(env: Mapping[str, str] | None = None) -> Settings:
    """The settings the shipped `config/gateway.yaml` gives, from the environment alone.

    The wheel does not carry `config/`, so the file's shape is mirrored here;
    a test keeps the two equal. A relative `store.path` stays relative: the
    store opens it from the working directory.
    """
    return _build(_ENV_TEMPLATE, "environment", os.environ if env is None else env)


# Mirrors config/gateway.yaml; values equal to the model defaults are left out.
_ENV_TEMPLATE: dict[str, Any] = {
    "upstream": {
        "base_url": "${OPENAI_BASE_URL:-https://api.openai.com/v1}",
        "api_key": "${OPENAI_API_KEY:-}",
    },
    "anthropic": {
        "base_url": "${ANTHROPIC_BASE_URL:-https://api.anthropic.com}",
        "api_key": "${ANTHROPIC_API_KEY:-}",
    },
    "judge": {
        "model": "${BIAS_JUDGE_MODEL:-gpt-4o-mini}",
        "base_url": "${BIAS_JUDGE_BASE_URL:-}",
        "api_key": "${BIAS_JUDGE_API_KEY:-}",
        "scale": "${BIAS_SCALE:-1}",
    },
    "policies": {
        "default": {
            "mode": "${BIAS_MODE:-monitor}",
            "flag_threshold": "${BIAS_FLAG_THRESHOLD:-0.5}",
            "block_threshold": "${BIAS_BLOCK_THRESHOLD:-0.8}",
        },
    },
    "api_keys": "${GATEWAY_API_KEYS:-}",
    "store": {"path": "${BIAS_STORE_PATH:-bias-scores.db}", "url": "${BIAS_STORE_URL:-}"},
    "server": {
        "host": "${GATEWAY_HOST:-127.0.0.1}",
        "port": "${GATEWAY_PORT:-8080}",
    },
}


def _build(tree: dict[str, Any], source: str, env: Mapping[str, str]) -> Settings:
    try:
        interpolated = interpolate_tree(tree, env)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    try:
        return Settings.model_validate(interpolated.tree)
    except ValidationError as exc:
        # `from None`: pydantic's own message would print the inputs, secrets included.
        raise ConfigError(f"{source}: {_format_errors(exc, interpolated, env)}") from None


# Errors where the offending value helps, e.g. when it came from the environment.
_SHOW_INPUT = frozenset({"bool_parsing", "float_parsing", "int_parsing", "literal_error"})
# The fields holding secrets (SecretStr): their variables are named, their values never.
_SECRET_FIELDS = frozenset({"api_key", "api_keys", "key"})


def _format_errors(exc: ValidationError, interpolated: Interpolated, env: Mapping[str, str]) -> str:
    parts: list[str] = []
    for error in exc.errors(include_url=False):
        loc: Loc = tuple(error["loc"])
        location = format_loc(loc)
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, _Problems):
            for text, about in cause.problems:
                origin = _origin([(*loc, *field) for field in about], interpolated, env)
                parts.append(origin + (f"{location}: {text}" if location else text))
            continue
        message = error["msg"].removeprefix("Value error, ")
        origin = _origin([loc], interpolated, env)
        shown = isinstance(error["input"], str) and not _is_secret(loc)
        if error["type"] in _SHOW_INPUT and shown and not origin:
            message += f", got {error['input']!r}"
        parts.append(origin + (f"{location}: {message}" if location else message))
    return "; ".join(parts).replace("\n", " ")


def _origin(locs: list[Loc], interpolated: Interpolated, env: Mapping[str, str]) -> str:
    """`NAME=value, ...: ` for the variables behind the values at `locs`, or ""."""
    secret: dict[str, bool] = {}
    for loc in locs:
        for name in _variables_at(loc, interpolated.sources):
            secret[name] = secret.get(name, False) or _is_secret(loc)
    shown = [f"{name}={_show_value(env.get(name, ''), masked)}" for name, masked in secret.items()]
    return f"{', '.join(shown)}: " if shown else ""


def _variables_at(loc: Loc, sources: dict[Loc, tuple[str, ...]]) -> tuple[str, ...]:
    # An error may sit below the string that held the variable: api_keys[1] in "a,b".
    for end in range(len(loc), 0, -1):
        if loc[:end] in sources:
            return sources[loc[:end]]
    return ()


def _is_secret(loc: Loc) -> bool:
    names = [part for part in loc if isinstance(part, str)]
    return bool(names) and names[-1] in _SECRET_FIELDS


def _show_value(value: str, masked: bool) -> str:
    if masked and value.strip():
        return "****"
    with contextlib.suppress(ValueError):  # not a URL
        value = _redact_url(value)  # a URL's password, when a variable holds a whole URL
    return shlex.quote(value)


# --- describing --------------------------------------------------------------


def describe_settings(settings: Settings) -> dict[str, Any]:
    """The effective settings as JSON-ready data, every secret masked (`sk-…abcd`).

    `keys` lists every key, the ones generated from `api_keys` included, and
    the judge's `base_url`/`api_key` show what the judge will actually use, and
    `store.path` is the absolute path of the file the store opens.
    """
    data = settings.model_dump(exclude={"api_keys"})
    data["store"]["path"] = os.path.abspath(settings.store.path)
    data["keys"] = [key.model_dump() for key in settings.all_keys()]
    data["judge"]["base_url"] = settings.judge_base_url()
    data["judge"]["api_key"] = settings.judge_api_key()
    masked: dict[str, Any] = _mask_tree(data, None)
    return masked


def _mask_tree(node: Any, key: object) -> Any:
    if isinstance(node, SecretStr):
        return _mask(node.get_secret_value())
    if isinstance(node, str) and key == "base_url":
        return _redact_url(node)
    if isinstance(node, dict):
        return {name: _mask_tree(value, name) for name, value in node.items()}
    if isinstance(node, list):
        return [_mask_tree(item, key) for item in node]
    return node


def _mask(secret: str) -> str:
    if len(secret) < 12:
        return "****"
    return f"{secret[:3]}…{secret[-4:]}"
