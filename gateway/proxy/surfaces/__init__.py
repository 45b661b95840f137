"""The model APIs the gateway scores, one adapter each (`base.Surface`)."""

from __future__ import annotations

from gateway.proxy.surfaces.base import Facts, StreamReader, Surface, SurfaceRequest
from gateway.proxy.surfaces.chat import ChatCompletions, Completions
from gateway.proxy.surfaces.messages import Messages
from gateway.proxy.surfaces.responses import Responses

__all__ = [
    "SURFACES",
    "ChatCompletions",
    "Completions",
    "Facts",
    "Messages",
    "Responses",
    "StreamReader",
    "Surface",
    "SurfaceRequest",
]

SURFACES: tuple[Surface, ...] = (ChatCompletions(), Completions(), Responses(), Messages())
