"""A reloaded config against the running one: what keeps its running value until a
restart, and what changed, said without a secret. Pure; the swap itself is tested
through a served gateway in tests/gateway/server/test_reload.py."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config import Settings
from gateway.runtime.reconfigure import RESTART_ONLY, changes, keep_running

BASE: dict[str, Any] = {
    "upstream": {"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-upstream-0001"},
    "keys": [
        {"key": "sk-key-a-0001", "name": "a"},
        {"key": "sk-key-b-0002", "name": "b", "policy": "default"},
    ],
    "store": {"path": "/tmp/x.db"},
}


def settings(**overrides: Any) -> Settings:
    data = {**BASE}
    for name, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(name), dict):
            data[name] = {**data[name], **value}
        else:
            data[name] = value
    return Settings.model_validate(data)


def test_the_same_config_changes_nothing() -> None:
    effective, restart = keep_running(settings(), settings())
    assert (effective, restart) == (settings(), [])
    assert changes(settings(), settings()) == {}


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"server": {"port": 9}}, ["server.port"]),
        ({"store": {"url": "postgresql://u:secret@127.0.0.1/db"}}, ["store.url"]),
        ({"queue": {"size": 5, "scorer": "external"}}, ["queue.size", "queue.scorer"]),
        ({"telemetry": {"exporter": "console"}}, ["telemetry.exporter"]),
        ({"judge": {"limits": {"max_concurrency": 2}, "cache": {"size": 0}}},
         ["judge.limits.max_concurrency", "judge.cache.size"]),
        ({"judge": {"max_concurrency": 2}}, ["judge.limits.max_concurrency"]),  # an old key
    ],
)  # fmt: skip
def test_settings_that_need_a_restart_keep_their_running_values(
    overrides: dict[str, Any], named: list[str]
) -> None:
    running = settings()
    effective, restart = keep_running(running, settings(**overrides))
    assert restart == named
    assert effective == running
    assert changes(running, effective) == {}


def test_live_settings_pass_while_restart_ones_beside_them_are_kept() -> None:
    running = settings()
    judge = {"model": "other", "limits": {"max_concurrency": 2}}
    loaded = settings(judge=judge, server={"max_body_bytes": 5})
    effective, restart = keep_running(running, loaded)
    assert restart == ["judge.limits.max_concurrency"]
    assert (effective.judge.model, effective.judge.limits.max_concurrency) == ("other", 512)
    assert effective.server.max_body_bytes == 5
    assert changes(running, effective) == {"judge": "model", "server": "max_body_bytes"}


def test_every_restart_only_name_is_a_setting() -> None:
    for dotted in RESTART_ONLY:
        value: Any = Settings()
        for name in dotted.split("."):
            assert name in type(value).model_fields, dotted
            value = getattr(value, name)


def test_changes_say_names_and_counts_never_a_secret() -> None:
    running = settings()
    new = settings(
        keys=[
            {"key": "sk-key-a-rotated", "name": "a"},
            {"key": "sk-key-c-0003", "name": "c", "admin": True},
        ],
        api_keys=["sk-plain-0004"],
        upstream={"api_key": "sk-upstream-rotated"},
        policies={
            "default": {"mode": "enforce"},
            "strict": {"flag_threshold": 0.2, "block_threshold": 0.3},
        },
        default_policy="strict",
        route_unknown_models=False,
    )
    said = changes(running, new)
    assert said == {
        "upstream": "api_key",
        "route_unknown_models": "True -> False",
        "policies": "1 -> 2 (added: strict; changed: default)",
        "default_policy": "'default' -> 'strict'",
        "keys": "2 -> 3 (added: c, key-1; removed: b; changed: a)",
    }
    assert "sk-" not in repr(said)
