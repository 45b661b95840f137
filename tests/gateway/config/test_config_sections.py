"""Settings grouped in sections (a policy's windows; the judge's limits, batching,
explanations and cache; one base for upstream endpoints), and configs written before
the sections, whose keys are read where they were and named where they now live."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gateway.cli import main
from gateway.config import (
    AnthropicSettings,
    ConfigError,
    Endpoint,
    OldKey,
    Policy,
    Settings,
    UpstreamSettings,
    load_settings,
)

# The judge's limits: flat in the judge section before, under `limits` now.
LIMITS = {
    "max_concurrency": "auto",
    "concurrency_start": 4,
    "concurrency_ceiling": 64,
    "max_pause": 2,
    "max_requests_per_minute": 600,
    "max_tokens_per_minute": 90000,
    "rate_limit_wait": 30,
}

# A config as it was written before the sections, every moved key in its old place.
OLD_SHAPE = {
    "judge": {
        **LIMITS,
        "pipeline": "single",
        "batch_size": 4,
        "batch_linger": 0.02,
        "batch_max_chars": 900,
        "reason": "inline",
        "reason_for": "all",
        "reason_language": "de",
        "cache_size": 50,
        "cache_persist": True,
    },
    "policies": {
        "default": {
            "mode": "enforce",
            "stream_policy": "windowed",
            "hold": "none",
            "window_chars": 400,
            "context_chars": 100,
            "max_inflight_windows": 2,
            "max_coalesced_chars": 1600,
            "max_windows": 8,
            "min_opinions": 3,
            "prejudge_buffer": False,
        }
    },
}

NEW_SHAPE = {
    "judge": {
        "pipeline": "single",
        "limits": LIMITS,
        "batching": {"size": 4, "linger": 0.02, "max_chars": 900},
        "explanations": {"mode": "inline", "scope": "all", "language": "de"},
        "cache": {"size": 50, "persist": True},
    },
    "policies": {
        "default": {
            "mode": "enforce",
            "stream_policy": "windowed",
            "windows": {
                "hold": "none",
                "chars": 400,
                "context_chars": 100,
                "max_inflight": 2,
                "max_coalesced_chars": 1600,
                "max_count": 8,
                "min_opinions": 3,
                "buffer": False,
            },
        }
    },
}


def test_a_config_in_the_old_shape_means_what_the_new_shape_says() -> None:
    old, new = Settings.model_validate(OLD_SHAPE), Settings.model_validate(NEW_SHAPE)
    assert old == new
    assert old.model_dump() == new.model_dump()
    assert new.old_keys() == []


def test_every_old_key_is_named_with_the_key_to_write_instead() -> None:
    found = dict(Settings.model_validate(OLD_SHAPE).old_keys())
    assert found["judge.max_concurrency"] == "judge.limits.max_concurrency"
    assert found["judge.batch_linger"] == "judge.batching.linger"
    assert found["judge.reason"] == "judge.explanations.mode"
    assert found["judge.reason_for"] == "judge.explanations.scope"
    assert found["judge.cache_persist"] == "judge.cache.persist"
    assert found["policies.default.window_chars"] == "policies.default.windows.chars"
    assert found["policies.default.max_windows"] == "policies.default.windows.max_count"
    assert found["policies.default.prejudge_buffer"] == "policies.default.windows.buffer"
    assert len(found) == 15 + 8  # all but pipeline, mode and stream_policy moved


def test_the_older_include_reason_switch_still_turns_explanations_off() -> None:
    settings = Settings.model_validate({"judge": {"reason": "inline", "include_reason": "false"}})
    assert settings.judge.explanations.mode == "off"
    kept = Settings.model_validate({"judge": {"reason": "inline", "include_reason": True}})
    assert kept.judge.explanations.mode == "inline"
    assert OldKey("judge.include_reason", "") in kept.old_keys()
    with pytest.raises(ValueError, match="include_reason: must be true or false"):
        Settings.model_validate({"judge": {"include_reason": "sometimes"}})


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"policies": {"default": {"window_chars": 400, "windows": {"chars": 300}}}},
         "window_chars and windows.chars are one setting: give only windows.chars"),
        ({"judge": {"cache_size": 5, "cache": {"size": 6}}},
         "cache_size and cache.size are one setting: give only cache.size"),
    ],
)  # fmt: skip
def test_a_setting_under_both_names_is_refused(given: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Settings.model_validate(given)


def test_check_config_names_the_new_key_for_each_old_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(OLD_SHAPE), encoding="utf-8")
    assert main(["check-config", str(path)]) == 0
    out, err = capsys.readouterr()
    assert (
        "warning: policies.default.window_chars is an old key;"
        " write policies.default.windows.chars instead" in err
    )
    assert "warning: judge.cache_size is an old key; write judge.cache.size instead" in err
    described = yaml.safe_load(out)
    assert described["judge"]["limits"]["max_concurrency"] == "auto"
    assert described["policies"]["default"]["windows"]["chars"] == 400
    assert "window_chars" not in described["policies"]["default"]
    path.write_text(yaml.safe_dump(NEW_SHAPE), encoding="utf-8")
    assert main(["check-config", str(path)]) == 0
    assert "old key" not in capsys.readouterr().err


def test_a_policy_takes_the_window_settings_with_defaults() -> None:
    windows = Policy().windows
    assert (windows.hold, windows.chars, windows.context_chars) == ("window", 800, 200)
    assert (windows.max_inflight, windows.max_count, windows.min_opinions) == (3, 16, 1)
    assert (windows.max_coalesced_chars, windows.buffer) == (3200, True)


@pytest.mark.parametrize(
    ("windows", "field"),
    [
        ({"hold": "later"}, "hold"),
        ({"chars": 10}, "chars"),
        ({"context_chars": -1}, "context_chars"),
        ({"max_inflight": 0}, "max_inflight"),
        ({"max_count": 0}, "max_count"),
        ({"min_opinions": 0}, "min_opinions"),
    ],
)
def test_bad_window_settings_are_refused_by_their_new_names(
    tmp_path: Path, windows: dict[str, object], field: str
) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump({"policies": {"default": {"windows": windows}}}), "utf-8")
    with pytest.raises(ConfigError, match=rf"policies\.default\.windows\.{field}: "):
        load_settings(path, {})


def test_the_upstream_endpoints_share_one_base() -> None:
    assert issubclass(UpstreamSettings, Endpoint)
    assert issubclass(AnthropicSettings, Endpoint)
    shared = set(Endpoint.model_fields)
    assert shared <= set(UpstreamSettings.model_fields) & set(AnthropicSettings.model_fields)
    assert {"base_url", "api_key", "timeout", "read_timeout", "prejudge", "stream_usage"} <= shared
    assert UpstreamSettings().base_url != AnthropicSettings().base_url
