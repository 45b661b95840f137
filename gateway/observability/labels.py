"""Label values a metric may take without growing without bound."""

from __future__ import annotations

from collections.abc import Iterable

from guard.outputs import valid_text

__all__ = ["ModelLabels"]


class ModelLabels:
    """Bounded label values for model names: aliases, then up to `cap` others, then "other"."""

    def __init__(self, aliases: Iterable[str], cap: int) -> None:
        self._known = set(aliases)
        self._extra: set[str] = set()
        self._cap = cap

    def add_aliases(self, aliases: Iterable[str]) -> None:
        """Aliases a reloaded config adds are labelled by name, as the first ones are."""
        self._known.update(aliases)

    def __call__(self, model: str | None) -> str:
        if model is None:
            return "none"
        if model in self._known or model in self._extra:
            return model
        if len(self._extra) < self._cap:
            # A label that cannot be encoded would break every later scrape.
            model = valid_text(model)
            self._extra.add(model)
            return model
        return "other"
