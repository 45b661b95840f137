"""gateway: an OpenAI-compatible proxy that scores responses for bias.

>>> from gateway import create_app, load_settings
>>> app = create_app(load_settings("config/gateway.yaml"))  # doctest: +SKIP
"""

from gateway.app import create_app
from gateway.config import ConfigError, Settings, load_settings, settings_from_env
from gateway.telemetry import Telemetry

__all__ = [
    "ConfigError",
    "Settings",
    "Telemetry",
    "create_app",
    "load_settings",
    "settings_from_env",
]

__version__ = "0.1.0"
