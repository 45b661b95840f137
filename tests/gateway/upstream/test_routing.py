"""Which routes prejudge (`prejudge: stream`), as the settings and the upstreams say."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from structlog.testing import capture_logs

from gateway.config import Settings
from gateway.upstream.routing import Router

WARNING = "prejudge off: the upstream streams no usage"


def router(**data: Any) -> Router:
    return Router(Settings.model_validate(data))


def prejudging(found: Router) -> dict[str, bool]:
    targets = {"upstream": found.default, "anthropic": found.anthropic}
    targets.update({alias: found.resolve(alias) for alias in found.aliases()})
    return {name: found.prejudges(target) for name, target in targets.items()}


def test_prejudge_is_off_by_default() -> None:
    assert prejudging(router(models={"a": {}, "b": {"base_url": "http://x/v1"}})) == {
        "upstream": False,
        "anthropic": False,
        "a": False,
        "b": False,
    }


def test_an_alias_on_the_default_upstream_inherits_its_prejudge() -> None:
    found = router(
        upstream={"prejudge": "stream"},
        models={
            "same": {"model": "gpt-4o"},
            "own": {"base_url": "http://local/v1"},
            "own-on": {"base_url": "http://local/v1", "prejudge": "stream"},
            "opted-out": {"prejudge": "off"},
            "via-litellm": {"litellm": "ollama/llama3", "prejudge": "stream"},
        },
    )
    assert prejudging(found) == {
        "upstream": True,
        "anthropic": False,
        "same": True,
        "own": False,
        "own-on": True,
        "opted-out": False,
        "via-litellm": True,
    }


def test_a_route_that_streams_no_usage_is_named_at_startup() -> None:
    with capture_logs() as logs:
        found = router(
            upstream={"prejudge": "stream", "stream_usage": False},
            anthropic={"prejudge": "stream"},
            models={
                "local": {"base_url": "http://l/v1", "prejudge": "stream", "stream_usage": False}
            },
        )
    assert prejudging(found) == {"upstream": False, "anthropic": True, "local": False}
    assert [(log["event"], log["route"]) for log in logs] == [
        (WARNING, "upstream"),
        (WARNING, "models.local"),
    ]
    assert {log["log_level"] for log in logs} == {"warning"}


def test_an_alias_inherits_stream_usage_false_from_its_upstream() -> None:
    with capture_logs():
        found = router(upstream={"prejudge": "stream", "stream_usage": False}, models={"a": {}})
    assert prejudging(found)["a"] is False


def test_a_route_found_without_stream_usage_stops_prejudging_once() -> None:
    found = router(upstream={"prejudge": "stream"}, models={"a": {}})
    with capture_logs() as logs:
        found.without_stream_usage(found.default)
        found.without_stream_usage(found.default)
    assert [(log["event"], log["route"]) for log in logs] == [(WARNING, "upstream")]
    assert prejudging(found) == {"upstream": False, "anthropic": False, "a": True}


@pytest.mark.parametrize(
    "data",
    [
        {"upstream": {"prejudge": "always"}},
        {"anthropic": {"prejudge": True}},
        {"models": {"a": {"prejudge": "buffer"}}},
        {"models": {"a": {"stream_usage": "sometimes"}}},
    ],
)
def test_a_bad_prejudge_setting_is_refused(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Settings.model_validate(data)
