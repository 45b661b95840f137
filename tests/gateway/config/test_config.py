from __future__ import annotations

import json
import os
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
    StoreSettings,
    describe_settings,
    interpolate,
    load_settings,
    settings_from_env,
)
from gateway.upstream.routing import Router

CONFIG = Path(__file__).parents[3] / "config"
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
    "BIAS_JUDGE_TIMEOUT": "300",
    "BIAS_JUDGE_MAX_TOKENS": "512",
    "BIAS_JUDGE_MAX_TEXT_CHARS": "6000",
    "BIAS_MODE": "enforce",
    "BIAS_FLAG_THRESHOLD": "0.25",
    "BIAS_BLOCK_THRESHOLD": "0.75",
    "BIAS_SCALE": "10",
    "GATEWAY_API_KEYS": "gw-key-one-0123456789, gw-key-two-0123456789",
    "GATEWAY_PORT": "9090",
    "BIAS_STORE_PATH": "/tmp/scores.db",
    "BIAS_STORE_URL": "postgresql://gw:pw-0123456789@127.0.0.1:5432/scores",
    "BIAS_QUEUE_SCORER": "external",
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


def with_default_store(settings: Settings) -> Settings:
    return settings.model_copy(update={"store": StoreSettings()})


def test_shipped_config_with_empty_env() -> None:
    settings = load_settings(SHIPPED, {})
    # The file's relative default is taken from its folder; from the environment, it stays.
    assert settings.store.path == os.path.abspath(CONFIG / "bias-scores.db")
    assert settings_from_env({}).store.path == "bias-scores.db"
    assert with_default_store(settings) == settings_from_env({})
    assert with_default_store(settings) == Settings()
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
    assert (settings.judge.timeout, settings.judge.max_tokens) == (300, 512)
    assert settings.judge.max_text_chars == 6000
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
    assert settings.store.url == SecretStr(FULL_ENV["BIAS_STORE_URL"])
    assert settings.queue.scorer == "external"
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


def env_error(env: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as info:
        settings_from_env(env)
    return str(info.value)


def test_settings_from_env_errors_name_the_variable_and_the_field() -> None:
    assert env_error({"BIAS_FLAG_THRESHOLD": "high"}) == (
        "environment: BIAS_FLAG_THRESHOLD=high: policies.default.flag_threshold: Input should"
        " be a valid number, unable to parse string as a number"
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
    native = settings.models["llama-native"]
    assert (native.litellm, native.api_base, native.base_url) == (
        "ollama_chat/llama3.1",
        "http://127.0.0.1:11434",
        None,
    )
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
    assert config_error(MULTI, env) == (
        "models.claude-haiku.api_key: environment variable ANTHROPIC_API_KEY is not set"
        " (write ${ANTHROPIC_API_KEY:-} to make it optional)"
    )


def test_every_missing_variable_is_reported_at_once() -> None:
    assert config_error(MULTI, {}) == (
        "upstream.api_key: environment variable OPENAI_API_KEY is not set;"
        " models.claude-haiku.api_key: environment variable ANTHROPIC_API_KEY is not set;"
        " keys[0].key: environment variable RESEARCH_API_KEY is not set;"
        " keys[1].key: environment variable SUPPORT_BOT_API_KEY is not set;"
        " keys[2].key: environment variable COMPLIANCE_API_KEY is not set"
        " (write ${NAME:-} to make one optional)"
    )


def test_missing_variables_in_one_value_and_bad_references_are_reported_together(
    write_config,
) -> None:
    path = write_config(
        "upstream:\n  base_url: http://${HOST}:${PORT}/v1\njudge:\n  model: ${oops\n"
    )
    assert config_error(path) == (
        "upstream.base_url: environment variable HOST is not set;"
        " upstream.base_url: environment variable PORT is not set;"
        " judge.model: unterminated '${' (write $$ for a literal $)"
        " (write ${NAME:-} to make one optional)"
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
            "policies:\n  default:\n    flag_biased_opinions: 3\n    block_biased_opinions: 2\n",
            "policies.default: flag_biased_opinions (3) must not exceed block_biased_opinions (2)",
        ),
        (
            "policies:\n  default:\n    flag_biased_opinions: 0\n",
            "policies.default.flag_biased_opinions: Input should be greater than or equal to 1",
        ),
        (
            "policies:\n  default:\n    block_biased_opinions: 1.5\n",
            "policies.default.block_biased_opinions: Input should be a valid integer",
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
            "queue: `workers` was replaced by judge.limits.max_concurrency (default 512): scoring"
            " is bound by judge calls in flight, not by workers",
        ),
        (
            "upstream:\n  api_key: ${OPENAI_API_KEY}\n",
            "upstream.api_key: environment variable OPENAI_API_KEY is not set",
        ),
        (
            "policies:\n  default:\n    block_threshold: 1.5\n",
            "policies.default.block_threshold (1.5) is above judge.scale (1):"
            " a score can never reach it",
        ),
        (
            "judge:\n  scale: 10\npolicies:\n  default: {}\n"
            "  strict: {flag_threshold: 11, block_threshold: 12}\n",
            "policies.strict.flag_threshold (11) is above judge.scale (10):"
            " a score can never reach it; policies.strict.block_threshold (12) is above"
            " judge.scale (10): a score can never reach it",
        ),
        (
            # The defaults count too: 0.8 is out of reach at scale 0.5.
            "judge:\n  scale: 0.5\n",
            "policies.default.block_threshold (0.8) is above judge.scale (0.5):"
            " a score can never reach it",
        ),
        (
            "models:\n  m:\n    litellm: openai/m\n    base_url: http://127.0.0.1:9/v1\n",
            "models.m: set litellm or base_url, not both (give a litellm route its server"
            " as api_base)",
        ),
        (
            "models:\n  m:\n    api_base: http://127.0.0.1:9/v1\n",
            "models.m: api_base is litellm's; without litellm, give the server as base_url",
        ),
        (
            "models:\n  m:\n    litellm: openai/m\n    api_base: 127.0.0.1:9\n",
            "models.m.api_base: must be an http:// or https:// URL, got '127.0.0.1:9'",
        ),
    ],
)
def test_errors_name_file_field_and_problem(write_config, text: str, message: str) -> None:
    assert config_error(write_config(text)).startswith(message)


def test_thresholds_may_reach_the_scale_exactly(write_config) -> None:
    path = write_config(
        "judge:\n  scale: 10\npolicies:\n  default: {flag_threshold: 10, block_threshold: 10}\n"
    )
    default = load_settings(path, {}).policies["default"]
    assert (default.flag_threshold, default.block_threshold) == (10, 10)


@pytest.mark.parametrize(
    ("yaml", "expected"),
    [
        pytest.param("{}", (1, None), id="shipped: any biased opinion flags"),
        pytest.param("{flag_biased_opinions: null}", (None, None), id="count flag off"),
        pytest.param("{flag_biased_opinions: ''}", (None, None), id="blank is unset"),
        pytest.param("{block_biased_opinions: 1}", (1, 1), id="equal counts"),
        pytest.param("{flag_biased_opinions: 2, block_biased_opinions: 5}", (2, 5), id="both"),
        pytest.param(
            "{flag_biased_opinions: null, block_biased_opinions: 1}", (None, 1), id="block"
        ),
    ],
)
def test_biased_opinion_counts(write_config, yaml: str, expected: tuple[int | None, ...]) -> None:
    default = load_settings(write_config(f"policies:\n  default: {yaml}\n"), {}).policies["default"]
    assert (default.flag_biased_opinions, default.block_biased_opinions) == expected


def test_litellm_route_takes_its_server_as_api_base(write_config) -> None:
    path = write_config(
        "models:\n  lite:\n    litellm: ollama_chat/llama3.1\n"
        "    api_base: http://127.0.0.1:11434/\n"
    )
    route = Router(load_settings(path, {})).resolve("lite")
    assert (route.litellm, route.base_url) == ("ollama_chat/llama3.1", "http://127.0.0.1:11434")


# --- errors in values from the environment -----------------------------------------


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"BIAS_BLOCK_THRESHOLD": "abc"},
            "BIAS_BLOCK_THRESHOLD=abc: policies.default.block_threshold: Input should be a"
            " valid number, unable to parse string as a number",
        ),
        (
            {"BIAS_BLOCK_THRESHOLD": "1.5"},
            "BIAS_BLOCK_THRESHOLD=1.5: policies.default.block_threshold (1.5) is above"
            " judge.scale (1): a score can never reach it",
        ),
        (
            # The threshold is the file's default, the scale is the variable.
            {"BIAS_SCALE": "0.6"},
            "BIAS_SCALE=0.6: policies.default.block_threshold (0.8) is above judge.scale"
            " (0.6): a score can never reach it",
        ),
        (
            {"BIAS_MODE": "loud mode"},
            "BIAS_MODE='loud mode': policies.default.mode: Input should be 'off', 'monitor'"
            " or 'enforce'",
        ),
        (
            {"GATEWAY_PORT": "http", "GATEWAY_HOST": "  "},
            "GATEWAY_HOST='  ': server.host: String should have at least 1 character;"
            " GATEWAY_PORT=http: server.port: Input should be a valid integer, unable to"
            " parse string as an integer",
        ),
        (
            {"OPENAI_BASE_URL": "ftp://user:p4ssw0rd@example.com"},
            "OPENAI_BASE_URL='ftp://user:****@example.com': upstream.base_url: must be an"
            " http:// or https:// URL, got 'ftp://user:****@example.com'",
        ),
    ],
)
def test_errors_name_the_variable_then_the_field(env: dict[str, str], message: str) -> None:
    assert env_error(env) == f"environment: {message}"
    # The same variables through the shipped file.
    assert config_error(SHIPPED, env) == message


def test_a_file_default_is_not_blamed_on_a_variable(write_config) -> None:
    path = write_config("policies:\n  default:\n    block_threshold: ${UNSET:-abc}\n")
    assert config_error(path) == (
        "policies.default.block_threshold: Input should be a valid number, unable to parse"
        " string as a number, got 'abc'"
    )


def test_every_variable_of_a_value_is_named(write_config) -> None:
    path = write_config("server:\n  port: ${PORT_HIGH}${PORT_LOW:-${PORT_FALLBACK}}\n")
    env = {"PORT_HIGH": "80", "PORT_LOW": "", "PORT_FALLBACK": "x"}
    assert config_error(path, env) == (
        "PORT_HIGH=80, PORT_FALLBACK=x: server.port: Input should be a valid integer,"
        " unable to parse string as an integer"
    )


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        (
            "models:\n  m:\n    api_key: ${ROUTE_KEY}\n    forward_client_auth: ${FORWARD}\n",
            {"ROUTE_KEY": "sk-route-secret-0123456789", "FORWARD": "true"},
            "ROUTE_KEY=****, FORWARD=true: models.m: set api_key or forward_client_auth, not both",
        ),
        (
            "anthropic:\n  api_key: ${ANTHROPIC_API_KEY}\n  forward_client_auth: true\n",
            {"ANTHROPIC_API_KEY": "sk-ant-secret-0123456789"},
            "ANTHROPIC_API_KEY=****: anthropic: set api_key or forward_client_auth, not both",
        ),
        (
            "keys:\n  - {name: a, key: '${TEAM_KEY}'}\n",
            {"TEAM_KEY": " "},
            "TEAM_KEY=' ': keys[0].key: must not be empty",
        ),
    ],
)
def test_secret_values_from_variables_are_masked(
    write_config, text: str, env: dict[str, str], message: str
) -> None:
    assert config_error(write_config(text), env) == message


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


# --- the store's location ----------------------------------------------------------


@pytest.fixture
def config_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp_path/conf, while the working directory is tmp_path/elsewhere."""
    folder = tmp_path / "conf"
    folder.mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    return folder


@pytest.mark.parametrize(
    ("text", "env"),
    [
        ("store:\n  path: data/scores.db\n", {}),
        ("store:\n  path: ${BIAS_STORE_PATH:-x.db}\n", {"BIAS_STORE_PATH": "data/scores.db"}),
        ("store:\n  path: ./data/../data/scores.db\n", {}),
    ],
)
def test_a_relative_store_path_is_taken_from_the_config_folder(
    config_folder: Path, text: str, env: dict[str, str]
) -> None:
    (config_folder / "g.yaml").write_text(text)
    expected = str(config_folder / "data" / "scores.db")
    assert load_settings(config_folder / "g.yaml", env).store.path == expected
    # Named relative to the working directory, the file still anchors its store.
    assert load_settings(Path("../conf/g.yaml"), env).store.path == expected
    # Loading creates nothing: neither the store nor its folder.
    assert [path.name for path in config_folder.iterdir()] == ["g.yaml"]
    assert list(Path.cwd().iterdir()) == []


def test_an_absolute_store_path_is_kept(config_folder: Path, tmp_path: Path) -> None:
    (config_folder / "g.yaml").write_text(f"store:\n  path: {tmp_path / 'abs.db'}\n")
    assert load_settings(config_folder / "g.yaml", {}).store.path == str(tmp_path / "abs.db")


def test_from_the_environment_the_store_is_taken_from_the_working_directory(
    config_folder: Path,
) -> None:
    settings = settings_from_env({"BIAS_STORE_PATH": "data/scores.db"})
    assert settings.store.path == "data/scores.db"
    described = describe_settings(settings)["store"]["path"]
    assert described == str(config_folder.parent / "elsewhere" / "data" / "scores.db")
    assert describe_settings(Settings())["store"]["path"] == str(Path.cwd() / "bias-scores.db")


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


# --- judge batches, key weights -------------------------------------------------------


def test_judge_batches_need_the_single_pipeline(write_config) -> None:
    message = config_error(write_config("judge:\n  batching: {size: 8}\n"))
    assert "judge.batching.size above 1 needs pipeline: single" in message
    text = "judge:\n  batching: {size: 8}\n  pipeline: single\n"
    assert load_settings(write_config(text), {}).judge.batching.size == 8


def test_a_key_weight_must_be_positive(write_config) -> None:
    text = "keys:\n  - name: a\n    key: sk-a-0123456789\n    weight: {}\n"
    assert "weight" in config_error(write_config(text.format(0)))
    settings = load_settings(write_config(text.format(2.5)), {})
    assert settings.keys[0].weight == 2.5
