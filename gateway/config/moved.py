"""Keys that moved into a section: a config written before the move keeps working.

A section that gathered keys which used to sit flat beside it (a policy's window
settings in `windows`, the judge's limits, batching, explanations and cache)
reads each old key where it was, puts it where it now lives, and remembers the
move, so that `check-config` and the startup log can name the key to write
instead. Giving a setting under both its names is an error: the config would
say two things.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple

from pydantic import BaseModel, PrivateAttr, ValidatorFunctionWrapHandler, model_validator

from gateway.config.fields import Model

__all__ = ["Moved", "OldKey", "SectionsWithOldKeys"]

# An old key's new place: (section, key), or a function of the old value that returns
# the (section, key, value) to set, or None when the old value says nothing any more
# (an older switch: what it sets wins over the section's own value, as it did).
Moved = tuple[str, str] | Callable[[Any], tuple[str, str, Any] | None]


class OldKey(NamedTuple):
    """An old key and the one to write instead (dotted, from the section that moved it;
    empty when the old key says nothing any more and can go)."""

    old: str
    new: str


class SectionsWithOldKeys(Model):
    """A section that still reads the keys its sub-sections took over (`MOVED`)."""

    MOVED: ClassVar[Mapping[str, Moved]] = {}
    _old_keys: list[OldKey] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _read_old_keys(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        found: list[OldKey] = []
        if isinstance(data, Mapping) and any(name in data for name in cls.MOVED):
            data, found = _moved(dict(data), cls.MOVED)
        model = handler(data)
        if found and isinstance(model, SectionsWithOldKeys):
            model._old_keys = found
        return model

    def __eq__(self, other: object) -> bool:
        # The same settings, whichever names they were given under: a config read again
        # with its keys renamed has not changed.
        if not isinstance(other, SectionsWithOldKeys):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # as pydantic's models: mutable, unhashable

    def old_keys(self) -> list[OldKey]:
        """The old keys this section was given, with the names to use instead, its own
        sub-sections' included."""
        found = list(self._old_keys)
        for name in type(self).model_fields:
            section = getattr(self, name)
            if isinstance(section, SectionsWithOldKeys):
                found += [OldKey(f"{name}.{o}", n and f"{name}.{n}") for o, n in section.old_keys()]
        return found


def _moved(data: dict[str, Any], moves: Mapping[str, Moved]) -> tuple[dict[str, Any], list[OldKey]]:
    found: list[OldKey] = []
    problems: list[str] = []
    for old, place in moves.items():
        if old not in data:
            continue
        value = data.pop(old)
        target = place(value) if callable(place) else (*place, value)
        if target is None:
            found.append(OldKey(old, ""))
            continue
        section, key, new_value = target
        found.append(OldKey(old, f"{section}.{key}"))
        inner = data.get(section)
        if inner is None:
            inner = {}
        elif isinstance(inner, BaseModel):
            inner = inner.model_dump(exclude_unset=True)
        elif not isinstance(inner, Mapping):
            continue  # the section itself is wrong: its own check says so
        inner = dict(inner)
        if key in inner and not callable(place):  # an older switch overrides what it turns off
            problems.append(f"{old} and {section}.{key} are one setting: give only {section}.{key}")
            continue
        inner[key] = new_value
        data[section] = inner
    if problems:
        raise ValueError("; ".join(problems))
    return data, found
