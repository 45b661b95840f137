"""Reading settings: a YAML file with `${VAR}` interpolation, or the environment alone.

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
from typing import Any

from pydantic import SecretStr, ValidationError

from gateway.config.fields import Problems, redact_url
from gateway.config.settings import Settings
from gateway.config.yamlenv import (
    ConfigError,
    Interpolated,
    Loc,
    format_loc,
    interpolate_tree,
    parse_yaml,
)
from guard.probe import BUILTIN

__all__ = ["describe_settings", "load_settings", "settings_from_env"]


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
    _anchor_suite(tree, Path(path).parent)
    settings = _build(tree, str(path), os.environ if env is None else env)
    store = Path(settings.store.path)
    if store.is_absolute():
        return settings
    anchored = os.path.abspath(Path(path).parent / store)
    return settings.model_copy(
        update={"store": settings.store.model_copy(update={"path": anchored})}
    )


def _anchor_suite(tree: dict[str, Any], folder: Path) -> None:
    """A relative `probe.suite` file is the config file's neighbour, as `store.path` is."""
    probe = tree.get("probe")
    suite = probe.get("suite") if isinstance(probe, dict) else None
    if not isinstance(suite, str) or suite == BUILTIN or "${" in suite:
        return
    if not Path(suite).is_absolute():
        assert isinstance(probe, dict)
        probe["suite"] = os.path.abspath(folder / suite)


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
        "timeout": "${BIAS_JUDGE_TIMEOUT:-30}",
        "max_tokens": "${BIAS_JUDGE_MAX_TOKENS:-}",
        "max_text_chars": "${BIAS_JUDGE_MAX_TEXT_CHARS:-100000}",
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
    "queue": {"scorer": "${BIAS_QUEUE_SCORER:-in_process}"},
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
        if isinstance(cause, Problems):
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
        value = redact_url(value)  # a URL's password, when a variable holds a whole URL
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
        return redact_url(node)
    if isinstance(node, dict):
        return {name: _mask_tree(value, name) for name, value in node.items()}
    if isinstance(node, list):
        return [_mask_tree(item, key) for item in node]
    return node


def _mask(secret: str) -> str:
    if len(secret) < 12:
        return "****"
    return f"{secret[:3]}…{secret[-4:]}"
