from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr

from gateway.config import (
    ConfigError,
    KeySettings,
    ModelRoute,
    Policy,
    Settings,
    describe_settings,
    interpolate,
    load_settings,
    settings_from_env,
)

CONFIG = Path(__file__).parents[2] / "config"
SHIPPED = CONFIG / "gateway.yaml"
MULTI = CONFIG / "examples" / "multi.yaml"

FULL_ENV = {
    "OPENAI_BASE_URL": "http://127.0.0.1:4000/v1",
    "OPENAI_API_KEY": "sk-upstream-0123456789abcdef",
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:6000",
    "ANTHROPIC_API_KEY": "sk-ant-0123456789abcdef",
    "BIAS_JUDGE_MODEL": "judge-model",
    "BIAS_JUDGE_BASE_URL": "http://127.0.0.1:5000/v1/",
    "BIAS_JUDGE_API_KEY": "sk-judge-0123456789abcdef",
    "BIAS_MODE": "enforce",
    "BIAS_FLAG_THRESHOLD": "0.25",
    "BIAS_BLOCK_THRESHOLD": "0.75",
    "BIAS_SCALE": "10",
    "GATEWAY_API_KEYS": "gw-key-one-0123456789, gw-key-two-0123456789",
    "GATEWAY_PORT": "9090",
    "BIAS_STORE_PATH": "/tmp/scores.db",
    "GATEWAY_HOST": "0.0.0.0",
}

MULTI_ENV = {
    "OPENAI_API_KEY": "sk-upstream-0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-0123456789abcdef",
    "RESEARCH_API_KEY": "research-0123456789",
    "SUPPORT_BOT_API_KEY": "support-0123456789",
    "COMPLIANCE_API_KEY": "compliance-0123456789",
}


@pytest.fixture
def write_config(tmp_path: Path):
    """Write YAML text to a file and return its path."""

    def write(text: str, name: str = "x.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


def config_error(path: Path, env: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        load_settings(path, env or {})
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message.removeprefix(f"{path}: ")


# --- interpolation -----------------------------------------------------------

ENV = {"SET": "value", "EMPTY": "", "PORT": "80"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("${SET}", "value"),
        ("${EMPTY}", ""),
        ("${UNSET:-fallback}", "fallback"),
        ("${EMPTY:-fallback}", "fallback"),
        ("${SET:-fallback}", "value"),
        ("${UNSET:-}", ""),
        ("http://${UNSET:-localhost}:${PORT}/v1", "http://localhost:80/v1"),
        ("${UNSET:-${SET}}", "value"),
        ("${UNSET:-${ALSO_UNSET:-deep}}!", "deep!"),
        ("$${SET}", "${SET}"),
        ("cost: $$5", "cost: $5"),
        ("$$$${SET}", "$${SET}"),
        ("a $ b $SET", "a $ b $SET"),
        ("${UNSET:-a:b}", "a:b"),
    ],
)
def test_interpolate(text: str, expected: str) -> None:
    assert interpolate(text, ENV) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("${MISSING}", "environment variable MISSING is not set"),
        ("x ${UNSET:-${MISSING}}", "environment variable MISSING is not set"),
        ("${SET", "unterminated '${'"),
        ("${UNSET:-abc", "unterminated '${'"),
        ("${1BAD}", "invalid reference '${1BAD}'"),
        ("${SET-x}", "invalid reference '${SET-x}'"),
    ],
)
def test_interpolate_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        interpolate(text, ENV)


def test_unused_default_is_not_resolved() -> None:
    assert interpolate("${SET:-${MISSING}}", ENV) == "value"


@pytest.mark.parametrize("value", ["a: b", "[1]", "{mode: enforce}", "x\nmode: enforce", "- item"])
def test_values_cannot_inject_yaml(write_config, value: str) -> None:
    path = write_config("judge:\n  model: ${MODEL}\npolicies:\n  default:\n    mode: monitor\n")
    settings = load_settings(path, {"MODEL": value})
    assert settings.judge.model == value
    assert settings.policies["default"].mode == "monitor"


def test_comments_are_not_interpolated(write_config) -> None:
    path = write_config("# uses ${NOT_SET_ANYWHERE}\nserver:\n  port: 81  # ${NOPE}\n")
    assert load_settings(path, {}).server.port == 81


def test_strings_are_coerced_after_interpolation(write_config) -> None:
    path = write_config(
        "policies:\n  default:\n    flag_threshold: ${F}\n    allow_client_override: ${B}\n"
        "server:\n  port: ${P}\n"
    )
    settings = load_settings(path, {"F": "0.3", "B": "true", "P": "81"})
    assert settings.policies["default"].flag_threshold == 0.3
    assert settings.policies["default"].allow_client_override is True
    assert settings.server.port == 81


def test_yaml_off_stays_a_mode(write_config) -> None:
    # YAML 1.1 would read `off` as false.
    path = write_config("policies:\n  default:\n    mode: off\n")
    assert load_settings(path, {}).policies["default"].mode == "off"


def test_empty_optional_values_are_none(write_config) -> None:
    path = write_config(
        "models:\n  m:\n    base_url: ${X:-}\n    model: ${X:-}\n    timeout: ${X:-}\n"
        "judge:\n  api_key: ${X:-}\n"
    )
    settings = load_settings(path, {})
    assert settings.models["m"] == ModelRoute()
    assert settings.judge.api_key is None


# --- the shipped config --------------------------------------------------------


def variables(node: object) -> set[str]:
    if isinstance(node, str):
        return set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", node))
    if isinstance(node, dict):
        node = list(node.values())
    if isinstance(node, list):
        return set().union(*map(variables, node))
    return set()


def test_shipped_config_uses_the_documented_variables() -> None:
    # Comments mention ${NAME}; only values count.
    assert variables(yaml.safe_load(SHIPPED.read_text())) == set(FULL_ENV)


def test_shipped_config_with_empty_env() -> None:
    settings = load_settings(SHIPPED, {})
    assert settings == settings_from_env({})
    assert settings == Settings()
    assert settings.upstream.base_url == "https://api.openai.com/v1"
    assert settings.upstream.api_key is None
    assert settings.anthropic.base_url == "https://api.anthropic.com"
    assert settings.anthropic.api_key is None
    assert settings.judge.model == "gpt-4o-mini"
    assert settings.policies == {"default": Policy()}
    assert settings.all_keys() == []
    assert settings.server.port == 8080


def test_shipped_config_with_full_env() -> None:
    settings = load_settings(SHIPPED, FULL_ENV)
    assert settings == settings_from_env(FULL_ENV)
    assert settings.upstream.base_url == "http://127.0.0.1:4000/v1"
    assert settings.upstream.api_key == SecretStr(FULL_ENV["OPENAI_API_KEY"])
    assert settings.anthropic.base_url == "http://127.0.0.1:6000"
    assert settings.anthropic.api_key == SecretStr(FULL_ENV["ANTHROPIC_API_KEY"])
    assert settings.judge.model == "judge-model"
    assert settings.judge_base_url() == "http://127.0.0.1:5000/v1"
    assert settings.judge_api_key() == SecretStr(FULL_ENV["BIAS_JUDGE_API_KEY"])
    assert settings.judge.scale == 10
    default = settings.policies["default"]
    assert (default.mode, default.flag_threshold, default.block_threshold) == (
        "enforce",
        0.25,
        0.75,
    )
    assert [(k.name, k.key.get_secret_value(), k.policy) for k in settings.all_keys()] == [
        ("key-1", "gw-key-one-0123456789", "default"),
        ("key-2", "gw-key-two-0123456789", "default"),
    ]
    assert settings.store.path == "/tmp/scores.db"
    assert (settings.server.host, settings.server.port) == ("0.0.0.0", 9090)


def test_judge_falls_back_to_the_upstream() -> None:
    env = {k: v for k, v in FULL_ENV.items() if not k.startswith("BIAS_JUDGE_")}
    settings = load_settings(SHIPPED, env)
    assert settings == settings_from_env(env)
    assert settings.judge.base_url is None
    assert settings.judge.api_key is None
    assert settings.judge_base_url() == FULL_ENV["OPENAI_BASE_URL"]
    assert settings.judge_api_key() == SecretStr(FULL_ENV["OPENAI_API_KEY"])


def test_environment_is_the_default_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIAS_MODE", "enforce")
    monkeypatch.setenv("GATEWAY_PORT", "9191")
    assert settings_from_env().policies["default"].mode == "enforce"
    assert load_settings(SHIPPED).server.port == 9191


def test_settings_from_env_errors_name_the_field() -> None:
    with pytest.raises(ConfigError) as info:
        settings_from_env({"BIAS_FLAG_THRESHOLD": "high"})
    assert str(info.value) == (
        "environment: policies.default.flag_threshold: Input should be a valid number,"
        " unable to parse string as a number, got 'high'"
    )


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ("a,b,,c", ["a", "b", "c"]),
        (" a , ,b ", ["a", "b"]),
        ("", []),
        (",", []),
    ],
)
def test_gateway_api_keys(keys: str, expected: list[str]) -> None:
    settings = settings_from_env({"GATEWAY_API_KEYS": keys})
    assert [(k.name, k.key.get_secret_value(), k.policy) for k in settings.all_keys()] == [
        (f"key-{n}", key, "default") for n, key in enumerate(expected, start=1)
    ]


def test_api_keys_follow_the_default_policy_after_explicit_keys(write_config) -> None:
    path = write_config(
        "default_policy: main\npolicies:\n  main: {}\n  strict: {mode: enforce}\n"
        "keys:\n  - {name: ops, key: k-ops, policy: strict}\napi_keys: [k-one, '']\n"
    )
    keys = load_settings(path, {}).all_keys()
    assert [(k.name, k.policy) for k in keys] == [("ops", "strict"), ("key-1", "main")]


# --- the multi example ---------------------------------------------------------


def test_multi_example_validates() -> None:
    settings = load_settings(MULTI, MULTI_ENV)
    assert settings.route_unknown_models is False
    assert settings.models["fast"] == ModelRoute(model="gpt-4o-mini")
    assert settings.models["llama"].base_url == "http://127.0.0.1:8000/v1"
    claude = settings.models["claude-haiku"]
    assert claude.litellm == "anthropic/claude-3-5-haiku-latest"
    assert claude.api_key == SecretStr(MULTI_ENV["ANTHROPIC_API_KEY"])
    assert settings.policies["default"].mode == "monitor"
    strict = settings.policies["strict"]
    assert (strict.mode, strict.block_action, strict.stream_policy, strict.on_judge_error) == (
        "enforce",
        "error",
        "buffer",
        "block",
    )
    friendly = settings.policies["friendly"]
    assert (friendly.mode, friendly.block_action, friendly.stream_policy) == (
        "enforce",
        "replace",
        "passthrough",
    )
    assert friendly.sample_rate == 0.5
    assert friendly.refusal_text != Policy().refusal_text
    assert {k.name: (k.key.get_secret_value(), k.policy) for k in settings.all_keys()} == {
        "research": (MULTI_ENV["RESEARCH_API_KEY"], "default"),
        "support-bot": (MULTI_ENV["SUPPORT_BOT_API_KEY"], "friendly"),
        "compliance": (MULTI_ENV["COMPLIANCE_API_KEY"], "strict"),
    }


def test_multi_example_names_a_missing_variable() -> None:
    env = {k: v for k, v in MULTI_ENV.items() if k != "ANTHROPIC_API_KEY"}
    assert config_error(MULTI, env).startswith(
        "models.claude-haiku.api_key: environment variable ANTHROPIC_API_KEY is not set"
    )


# --- errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "policies:\n  default: {}\n  strict:\n    flag_threshold: 0.9\n"
            "    block_threshold: 0.8\n",
            "policies.strict: flag_threshold (0.9) must not exceed block_threshold (0.8)",
        ),
        (
            "policies:\n  default: {}\n  strict:\n    flag_threshold: 0\n    block_threshold: -1\n",
            "policies.strict.block_threshold: Input should be greater than or equal to 0",
        ),
        (
            "keys:\n  - {name: a, key: k1, policy: strct}\n",
            "keys[0].policy: no policy named 'strct' (defined: default)",
        ),
        (
            "policies:\n  default:\n    block_treshold: 0.9\n",
            "policies.default.block_treshold: Extra inputs are not permitted",
        ),
        ("upstrem:\n  base_url: http://x\n", "upstrem: Extra inputs are not permitted"),
        (
            "policies:\n  default:\n    mode: enforced\n",
            "policies.default.mode: Input should be 'off', 'monitor' or 'enforce', got 'enforced'",
        ),
        (
            "policies:\n  default:\n    sample_rate: 0\n",
            "policies.default.sample_rate: Input should be greater than 0",
        ),
        (
            "policies:\n  default:\n    block_status: 200\n",
            "policies.default.block_status: Input should be greater than or equal to 400",
        ),
        ("server:\n  port: 0\n", "server.port: Input should be greater than or equal to 1"),
        (
            "policies:\n  main: {}\n",
            "default_policy: no policy named 'default' (defined: main)",
        ),
        (
            "models:\n  m:\n    litellm: anthropic\n",
            "models.m.litellm: must be a litellm 'provider/model' string, got 'anthropic'",
        ),
        (
            "models:\n  gpt-4.1:\n    base_url: localhost:8000\n",
            "models['gpt-4.1'].base_url: must be an http:// or https:// URL, got 'localhost:8000'",
        ),
        ("keys:\n  - {name: a}\n", "keys[0].key: Field required"),
        ("keys:\n  - {name: a, key: ''}\n", "keys[0].key: must not be empty"),
        (
            "keys:\n  - {name: key-1, key: k1}\napi_keys: k2\n",
            "keys: name 'key-1' is used twice",
        ),
        (
            "server:\n  port: 0\nqueue:\n  size: 0\n",
            "queue.size: Input should be greater than or equal to 1;"
            " server.port: Input should be greater than or equal to 1",
        ),
        (
            "queue:\n  workers: 4\n",
            "queue: `workers` was replaced by judge.max_concurrency (default 512): scoring"
            " is bound by judge calls in flight, not by workers",
        ),
        (
            "upstream:\n  api_key: ${OPENAI_API_KEY}\n",
            "upstream.api_key: environment variable OPENAI_API_KEY is not set",
        ),
    ],
)
def test_errors_name_file_field_and_problem(write_config, text: str, message: str) -> None:
    assert config_error(write_config(text)).startswith(message)


def test_duplicate_key_values_are_not_echoed(write_config) -> None:
    secret = "sk-shared-0123456789"
    path = write_config(f"keys:\n  - {{name: a, key: {secret}}}\n  - {{name: b, key: {secret}}}\n")
    message = config_error(path)
    assert message == "keys: 'a' and 'b' have the same key"
    assert "0123456789" not in message


def test_missing_file(tmp_path: Path) -> None:
    assert config_error(tmp_path / "nope.yaml") == "no such file"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("server:\n  port: 8080\n   host: x\n", "invalid YAML at line 3"),
        ("policies:\n  default: {mode: monitor\n", "invalid YAML at line 3"),
        ("server:\n  port: 1\nserver:\n  port: 2\n", "line 3, column 1: duplicate key 'server'"),
    ],
)
def test_invalid_yaml_names_the_line(write_config, text: str, fragment: str) -> None:
    assert fragment in config_error(write_config(text))


@pytest.mark.parametrize(("text", "found"), [("- a\n", "list"), ("", "an empty document")])
def test_top_level_must_be_a_mapping(write_config, text: str, found: str) -> None:
    assert config_error(write_config(text)) == f"the top level must be a mapping, not {found}"


def test_merge_keys_may_override(write_config) -> None:
    path = write_config(
        "policies:\n  default: &base {mode: enforce, block_threshold: 0.9}\n"
        "  strict:\n    <<: *base\n    block_threshold: 0.6\n"
    )
    strict = load_settings(path, {}).policies["strict"]
    assert (strict.mode, strict.block_threshold) == ("enforce", 0.6)


# --- describe_settings -----------------------------------------------------------

SECRETS = {
    "OPENAI_API_KEY": "sk-upstream-secret-aaaa",
    "BIAS_JUDGE_API_KEY": "sk-judge-secret-bbbb",
    "GATEWAY_API_KEYS": "gw-long-secret-cccc,short",
    "BIAS_JUDGE_BASE_URL": "https://judge:p4ssw0rd@judge.example/v1",
}


def test_describe_settings_masks_every_secret() -> None:
    settings = settings_from_env(SECRETS).model_copy(
        update={
            "models": {"m": ModelRoute(api_key=SecretStr("sk-route-secret-dddd"))},
            "keys": [KeySettings(key=SecretStr("sk-named-secret-eeee"), name="named")],
        }
    )
    described = describe_settings(settings)
    text = json.dumps(described, ensure_ascii=False)
    for secret in [
        "sk-upstream-secret-aaaa",
        "sk-judge-secret-bbbb",
        "gw-long-secret-cccc",
        "short",
        "sk-route-secret-dddd",
        "sk-named-secret-eeee",
        "p4ssw0rd",
    ]:
        assert secret not in text
    assert described["upstream"]["api_key"] == "sk-…aaaa"
    assert described["judge"]["api_key"] == "sk-…bbbb"
    assert described["judge"]["base_url"] == "https://judge:****@judge.example/v1"
    assert described["models"]["m"]["api_key"] == "sk-…dddd"
    assert [(k["name"], k["key"]) for k in described["keys"]] == [
        ("named", "sk-…eeee"),
        ("key-1", "gw-…cccc"),
        ("key-2", "****"),
    ]
    assert "api_keys" not in described


def test_describe_settings_resolves_the_judge() -> None:
    described = describe_settings(settings_from_env({"OPENAI_API_KEY": "sk-upstream-secret-aaaa"}))
    assert described["judge"]["base_url"] == "https://api.openai.com/v1"
    assert described["judge"]["api_key"] == "sk-…aaaa"
    assert described["policies"]["default"]["mode"] == "monitor"
