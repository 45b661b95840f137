"""The dashboard at `/ui` (`gateway.ui.pages`) and its templates; its SVG charts are guard's."""

from gateway.ui.pages import COOKIE, ui_routes

__all__ = ["COOKIE", "ui_routes"]
