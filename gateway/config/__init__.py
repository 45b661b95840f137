"""The gateway's settings: what they hold (`sections`, `judge`, `settings`), the field types
they share (`fields`), and reading them from YAML or the environment (`loading`,
`yamlenv`). Everything public is importable from here.
"""

from gateway.config.judge import (
    Batching,
    CategorySettings,
    Explanations,
    JudgeCache,
    JudgeLimits,
    JudgeSettings,
)
from gateway.config.loading import describe_settings, load_settings, settings_from_env
from gateway.config.moved import OldKey
from gateway.config.sections import (
    AnthropicSettings,
    Endpoint,
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
    WindowSettings,
)
from gateway.config.settings import Settings
from gateway.config.yamlenv import ConfigError, interpolate

__all__ = [
    "AnthropicSettings",
    "Batching",
    "CategorySettings",
    "ConfigError",
    "Endpoint",
    "Explanations",
    "JudgeCache",
    "JudgeLimits",
    "JudgeSettings",
    "KeySettings",
    "LimitSettings",
    "ModelRoute",
    "OldKey",
    "Policy",
    "ProbeSettings",
    "QueueSettings",
    "ReviewSettings",
    "ServerSettings",
    "Settings",
    "StoreSettings",
    "TelemetrySettings",
    "UpstreamSettings",
    "WindowSettings",
    "describe_settings",
    "interpolate",
    "load_settings",
    "settings_from_env",
]
