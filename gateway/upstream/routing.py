"""Model routing: a requested model name to an upstream `Target`."""

from __future__ import annotations

import structlog

from gateway.config import Settings
from gateway.errors import ModelNotFound
from gateway.upstream.client import Target

__all__ = ["Router"]

log = structlog.get_logger("gateway.upstream")


class Router:
    def __init__(self, settings: Settings) -> None:
        upstream = settings.upstream
        default_key = upstream.api_key.get_secret_value() if upstream.api_key else None
        self._default = Target(
            upstream.base_url,
            default_key,
            upstream.timeout,
            read_timeout=upstream.read_timeout,
            prejudge=_prejudges("upstream", upstream.prejudge, upstream.stream_usage),
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
            prejudge=_prejudges("anthropic", anthropic.prejudge, anthropic.stream_usage),
            route="anthropic",
        )
        self._open = settings.route_unknown_models
        self._routes: dict[str, Target] = {}
        # Routes found, answer by answer, to send no usage in their streams; this process
        # asks them for whole answers from then on.
        self._without_usage: set[str] = set()
        for alias, route in settings.models.items():
            key = route.api_key.get_secret_value() if route.api_key else None
            on_default = route.litellm is None and route.base_url is None
            if on_default:
                # An alias on the default upstream inherits its key and its prejudging.
                key = key or default_key
            if route.litellm is not None:
                base_url = route.api_base or ""  # litellm's api_base; empty for its default
            else:
                base_url = route.base_url or upstream.base_url
            prejudge = route.prejudge or (upstream.prejudge if on_default else "off")
            stream_usage = route.stream_usage
            if stream_usage is None:
                stream_usage = upstream.stream_usage if on_default else True
            self._routes[alias] = Target(
                base_url=base_url,
                api_key=key,
                timeout=route.timeout or upstream.timeout,
                read_timeout=route.read_timeout or upstream.read_timeout,
                model=route.model,
                litellm=route.litellm,
                forward_client_auth=route.forward_client_auth,
                prejudge=_prejudges(f"models.{alias}", prejudge, stream_usage),
                route=f"models.{alias}",
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

    def prejudges(self, target: Target) -> bool:
        """Whether an enforced whole answer from `target` is asked for as a stream."""
        return target.prejudge and target.route not in self._without_usage

    def without_stream_usage(self, target: Target) -> None:
        """`target` streamed an answer without its usage: say so once, and ask it for
        whole answers from now on, so that no later answer lacks its usage."""
        if target.route in self._without_usage:
            return
        self._without_usage.add(target.route)
        log.warning(
            "prejudge off: the upstream streams no usage",
            route=target.route,
            hint=f"set stream_usage: false on {target.route} to say so at startup",
        )


def _prejudges(route: str, prejudge: str, stream_usage: bool) -> bool:
    if prejudge != "stream":
        return False
    if not stream_usage:
        log.warning(
            "prejudge off: the upstream streams no usage",
            route=route,
            detail="stream_usage: false, so enforced whole answers are asked for whole",
        )
        return False
    return True
