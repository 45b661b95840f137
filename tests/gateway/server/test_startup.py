"""Say what runs: the startup line, and `--version` on the gateway's CLI."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from gateway import __version__
from gateway.cli import main
from gateway.config import Settings
from gateway.server.startup import startup_fields
from tests.support.subprocess_gateway import gateway_command, start_gateway

SECRETS = ("sk-upstream-0123456789", "sk-judge-0123456789", "gw-key-0123456789")


def test_startup_fields_say_what_runs_and_never_a_secret(tmp_path: Path) -> None:
    settings = Settings.model_validate(
        {
            "upstream": {"base_url": "http://127.0.0.1:9/v1", "api_key": SECRETS[0]},
            "judge": {
                "model": "judge-m",
                "base_url": "http://127.0.0.1:8/v1",
                "api_key": SECRETS[1],
            },
            "policies": {"default": {"mode": "enforce"}, "audit": {"mode": "monitor"}},
            "api_keys": [SECRETS[2]],
            "store": {"path": str(tmp_path / "s.db")},
        }
    )
    fields = startup_fields(settings, config=str(tmp_path / "g.yaml"), env={})
    assert fields["version"] == __version__
    assert fields["config"] == str(tmp_path / "g.yaml")
    assert fields["policies"] == {"default": "enforce", "audit": "monitor"}
    assert fields["upstream"] == "http://127.0.0.1:9/v1"
    assert (fields["judge_model"], fields["judge_endpoint"]) == ("judge-m", "http://127.0.0.1:8/v1")
    assert fields["store"] == str(tmp_path / "s.db")
    assert fields["exporter"] == "none"
    assert fields["keys"] == {
        "upstream": "set",
        "anthropic": "not set",
        "judge": "set",
        "gateway": 1,
    }
    assert not any(secret in json.dumps(fields) for secret in SECRETS)


def test_startup_fields_of_an_open_litellm_setup() -> None:
    settings = Settings(judge={"model": "anthropic/claude-x"}, upstream={"api_key": None})  # type: ignore[arg-type]
    fields = startup_fields(settings, config=None, env={"OTEL_TRACES_EXPORTER": "otlp"})
    assert fields["config"] == "environment variables only"
    assert fields["judge_endpoint"] == "litellm's default for the provider"
    assert fields["exporter"] == "otlp"
    assert fields["keys"]["gateway"] == "none: open to anyone who can reach it"
    assert fields["keys"]["judge"] == "not set"


@pytest.mark.slow
def test_serve_logs_one_startup_line(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "upstream:\n  base_url: http://127.0.0.1:9/v1\n  api_key: sk-secret-upstream-key\n"
        "policies:\n  default:\n    mode: enforce\nstore:\n  path: scores.db\n"
    )
    process, _ = start_gateway(config, extra=["--log-level", "info"])
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=20)
    lines = [line for line in output.splitlines() if "bias-gateway starting" in line]
    assert len(lines) == 1, output
    line = lines[0]
    for expected in (
        __version__,
        str(config),
        "enforce",
        "http://127.0.0.1:9/v1",
        str(tmp_path / "scores.db"),
    ):
        assert expected in line, line
    assert "sk-secret-upstream-key" not in output


@pytest.mark.parametrize("argv", [["--version"]])
def test_version(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"bias-gateway {__version__}"


@pytest.mark.slow
def test_version_through_the_installed_command() -> None:
    done = subprocess.run(
        [*gateway_command(), "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == f"bias-gateway {__version__}"
