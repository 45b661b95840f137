"""The dashboard at `/ui` (`gateway.ui.pages`), its templates and its SVG charts."""

from gateway.ui.pages import COOKIE, ui_routes

__all__ = ["COOKIE", "ui_routes"]
