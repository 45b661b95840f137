"""The whole gateway configuration: `Settings`, its sections checked across each other."""

from __future__ import annotations

from typing import Self

from pydantic import Field, SecretStr, field_validator, model_validator

from gateway.config.fields import ClientKey, Model, Name, Problems
from gateway.config.judge import JudgeSettings
from gateway.config.keyhash import is_hashed, stored_digest
from gateway.config.moved import OldKey
from gateway.config.sections import (
    AnthropicSettings,
    KeySettings,
    LimitSettings,
    ModelRoute,
    Policy,
    ProbeSettings,
    QueueSettings,
    ReviewSettings,
    ServerSettings,
    StoreSettings,
    TelemetrySettings,
    UpstreamSettings,
)
from gateway.config.yamlenv import Loc, format_loc

__all__ = ["Settings"]


def _default_policies() -> dict[str, Policy]:
    return {"default": Policy()}


class Settings(Model):
    """The whole gateway configuration. `Settings()` alone is a valid monitor-mode setup."""

    upstream: UpstreamSettings = Field(default_factory=UpstreamSettings)
    anthropic: AnthropicSettings = Field(default_factory=AnthropicSettings)
    models: dict[str, ModelRoute] = Field(default_factory=dict)
    route_unknown_models: bool = True
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    policies: dict[str, Policy] = Field(default_factory=_default_policies)
    default_policy: Name = "default"
    keys: list[KeySettings] = Field(default_factory=list)
    api_keys: list[ClientKey] = Field(default_factory=list)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    queue: QueueSettings = Field(default_factory=QueueSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    probe: ProbeSettings = Field(default_factory=ProbeSettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)

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
        values: dict[bytes, str] = {}
        for key in self.all_keys():
            if key.name in names:
                problems.append((f"keys: name {key.name!r} is used twice", ()))
            names.add(key.name)
            secret = stored_digest(key.key.get_secret_value())  # a key and its hash are one key
            if secret in values:
                # Never echo the key itself: name the two entries sharing it.
                text = f"keys: {values[secret]!r} and {key.name!r} have the same key"
                problems.append((text, ()))
            values.setdefault(secret, key.name)
        if problems:
            raise Problems(problems)
        return self

    def all_keys(self) -> list[KeySettings]:
        """`keys`, then one key per `api_keys` entry, named `key-1`, `key-2`, ..."""
        generated = [
            KeySettings(key=key, name=f"key-{number}", policy=self.default_policy)
            for number, key in enumerate(self.api_keys, start=1)
        ]
        return [*self.keys, *generated]

    def policy_for(self, key: KeySettings | None) -> tuple[str, Policy]:
        """The name and policy a request follows: its key's, else `default_policy` (open
        mode, no key).

        >>> Settings().policy_for(None)[0]
        'default'
        """
        name = key.policy if key is not None else self.default_policy
        return name, self.policies[name]

    def key_weight(self, name: str | None) -> float:
        """A key's share of the judge beside other keys (`keys[].weight`); 1 for a key of
        `api_keys`, an unknown name, or none (open mode)."""
        for key in self.keys:
            if key.name == name:
                return key.weight
        return 1.0

    def old_keys(self) -> list[OldKey]:
        """The keys this config gave in their old places, with the names to write instead."""
        found = [
            OldKey(f"judge.{old}", new and f"judge.{new}") for old, new in self.judge.old_keys()
        ]
        for name, policy in self.policies.items():
            where = f"policies.{name}"
            found += [
                OldKey(f"{where}.{old}", new and f"{where}.{new}") for old, new in policy.old_keys()
            ]
        return found

    def keys_in_clear(self) -> list[str]:
        """The names of the client keys given in clear, not as their hash."""
        return [key.name for key in self.all_keys() if not is_hashed(key.key.get_secret_value())]

    def warnings(self) -> list[str]:
        """What `check-config` points out in a config it accepts."""
        notes = [
            f"{old} is an old key; "
            + (f"write {new} instead" if new else "it says nothing now: drop it")
            for old, new in self.old_keys()
        ]
        notes += [
            f"key {name!r} is kept in clear; give its hash instead (bias-gateway hash-key)"
            for name in self.keys_in_clear()
        ]
        reviewers = [key.name for key in self.all_keys() if key.reviewer]
        if reviewers and not self.store.capture_content:
            notes.append(
                f"reviewer keys ({', '.join(reviewers)}) will see records without their"
                " text: store.capture_content is off (`review` keeps the text of the"
                " records the review queue offers, and of no others)"
            )
        return notes

    def judge_base_url(self) -> str:
        return self.judge.base_url or self.upstream.base_url

    def judge_api_key(self) -> SecretStr | None:
        return self.judge.api_key or self.upstream.api_key
