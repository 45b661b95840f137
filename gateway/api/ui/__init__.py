"""The dashboard at `/ui` (`gateway.api.ui.pages`), its templates and its SVG charts."""

from gateway.api.ui.pages import COOKIE, ui_routes

__all__ = ["COOKIE", "ui_routes"]
