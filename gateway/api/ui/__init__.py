"""The dashboard at `/ui` (`gateway.api.ui.pages`) and its templates; its SVG charts are guard's."""

from gateway.api.ui.pages import COOKIE, ui_routes

__all__ = ["COOKIE", "ui_routes"]
