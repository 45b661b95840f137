"""gateway: an OpenAI-compatible proxy that scores responses for bias.

>>> from gateway import create_app, load_settings
>>> app = create_app(load_settings("config/gateway.yaml"))  # doctest: +SKIP
"""

# One version for the distribution: guard's (pyproject.toml reads it from there).
from guard import __version__ as __version__

try:
    from gateway.config import ConfigError, Settings, load_settings, settings_from_env
    from gateway.observability.traces import Telemetry
    from gateway.server.app import create_app
except ModuleNotFoundError as exc:  # a base install has guard's dependencies only
    raise ModuleNotFoundError(
        f"{exc}; the gateway needs its extra: pip install 'bias-gateway[gateway]'", name=exc.name
    ) from exc

__all__ = [
    "ConfigError",
    "Settings",
    "Telemetry",
    "create_app",
    "load_settings",
    "settings_from_env",
]
