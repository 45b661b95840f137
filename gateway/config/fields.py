"""The field types every settings model shares, and the problem a model validator reports."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
)

from gateway.config.keyhash import check_hashed
from gateway.config.yamlenv import Loc

__all__ = [
    "ClientKey",
    "Model",
    "Name",
    "OptionalName",
    "OptionalPositiveFloat",
    "OptionalPositiveInt",
    "OptionalSecret",
    "OptionalUrl",
    "PositiveFloat",
    "Problems",
    "Secret",
    "Url",
    "redact_url",
]


def _blank_to_none(value: object) -> object:
    # `${VAR:-}` yields "", which for an optional field means "not set".
    if isinstance(value, str) and not value.strip():
        return None
    return value


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{parts.username}:****@{host}").geturl()


def _check_url(value: str) -> str:
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http:// or https:// URL, got {redact_url(value)!r}")
    # Upstream paths are appended as base_url + "/chat/completions".
    return parts.geturl().rstrip("/")


def _check_secret(value: SecretStr) -> SecretStr:
    if not value.get_secret_value().strip():
        raise ValueError("must not be empty")
    return value


Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Url = Annotated[str, AfterValidator(_check_url)]
Secret = Annotated[SecretStr, AfterValidator(_check_secret)]


def _check_client_key(value: SecretStr) -> SecretStr:
    check_hashed(value.get_secret_value())
    return value


# A client key, in clear or as `sha256:<hex>` (`gateway.config.keyhash`).
ClientKey = Annotated[SecretStr, AfterValidator(_check_secret), AfterValidator(_check_client_key)]
PositiveFloat = Annotated[float, Field(gt=0)]
OptionalName = Annotated[Name | None, BeforeValidator(_blank_to_none)]
OptionalUrl = Annotated[Url | None, BeforeValidator(_blank_to_none)]
OptionalSecret = Annotated[SecretStr | None, BeforeValidator(_blank_to_none)]
OptionalPositiveFloat = Annotated[PositiveFloat | None, BeforeValidator(_blank_to_none)]
OptionalPositiveInt = Annotated[Annotated[int, Field(ge=1)] | None, BeforeValidator(_blank_to_none)]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Problems(ValueError):
    """What a model validator found, each problem with the fields it is about (relative
    to the model), so that the `ConfigError` can name the variables behind them."""

    def __init__(self, problems: list[tuple[str, tuple[Loc, ...]]]) -> None:
        super().__init__("; ".join(text for text, _ in problems))
        self.problems = problems
