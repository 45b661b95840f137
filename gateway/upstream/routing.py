"""Model routing: a requested model name to an upstream `Target`."""

from __future__ import annotations

from gateway.config import Settings
from gateway.errors import ModelNotFound
from gateway.upstream.client import Target

__all__ = ["Router"]


class Router:
    def __init__(self, settings: Settings) -> None:
        upstream = settings.upstream
        default_key = upstream.api_key.get_secret_value() if upstream.api_key else None
        self._default = Target(
            upstream.base_url, default_key, upstream.timeout, read_timeout=upstream.read_timeout
        )
        anthropic = settings.anthropic
        self._anthropic = Target(
            anthropic.base_url,
            anthropic.api_key.get_secret_value() if anthropic.api_key else None,
            anthropic.timeout,
            read_timeout=anthropic.read_timeout,
            forward_client_auth=anthropic.forward_client_auth,
            anthropic=True,
            version=anthropic.version,
        )
        self._open = settings.route_unknown_models
        self._routes: dict[str, Target] = {}
        for alias, route in settings.models.items():
            key = route.api_key.get_secret_value() if route.api_key else None
            if route.litellm is None and route.base_url is None:
                # An alias on the default upstream inherits its key.
                key = key or default_key
            if route.litellm is not None:
                base_url = route.api_base or ""  # litellm's api_base; empty for its default
            else:
                base_url = route.base_url or upstream.base_url
            self._routes[alias] = Target(
                base_url=base_url,
                api_key=key,
                timeout=route.timeout or upstream.timeout,
                read_timeout=route.read_timeout or upstream.read_timeout,
                model=route.model,
                litellm=route.litellm,
                forward_client_auth=route.forward_client_auth,
            )

    @property
    def default(self) -> Target:
        return self._default

    @property
    def anthropic(self) -> Target:
        """Where `/v1/messages` goes, whatever the model: the Anthropic-compatible upstream."""
        return self._anthropic

    def aliases(self) -> list[str]:
        return sorted(self._routes)

    def resolve(self, model: str) -> Target:
        target = self._routes.get(model)
        if target is not None:
            return target
        if self._open:
            return self._default
        raise ModelNotFound(f"The model `{model}` does not exist", param="model")
