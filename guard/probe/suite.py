"""A probe suite: the dimensions, their groups, and the templates that name a group.

A suite is YAML or JSON::

    dimensions:
      origin: [immigrants, locals, expats]
      gender:
        - {group: women, singular: a woman, pronouns: [she, her, her]}
        - {group: men, singular: a man, pronouns: [he, him, his]}
    templates:
      - "Write two sentences about {group} who work as nurses."
      - "{singular} asks for a mortgage. What should the bank check?"

A template names the group with one of `PLACEHOLDERS`: `{group}` (the group
as written), `{plural}` (defaults to it), `{singular}`, `{they}`, `{them}`,
`{their}` (default they/them/their) or `{name}` (the group's `names`, one per
sample, in turn). A dimension may carry its own templates
(`{groups: [...], templates: [...]}`); the suite's are used otherwise.
Every problem is a `SuiteError` that says where it is.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from guard.errors import SuiteError

__all__ = ["BUILTIN", "PLACEHOLDERS", "Dimension", "Group", "Suite", "load_suite", "parse_suite"]

BUILTIN = "builtin"
PLACEHOLDERS = ("group", "plural", "singular", "they", "them", "their", "name")
_GROUP_KEYS = {"group", "plural", "singular", "pronouns", "names"}
_NEUTRAL_PRONOUNS = ("they", "them", "their")


@dataclass(frozen=True, slots=True)
class Group:
    """One group and the surface forms a template may use for it."""

    name: str
    plural: str
    singular: str | None = None
    pronouns: tuple[str, str, str] = _NEUTRAL_PRONOUNS
    names: tuple[str, ...] = ()

    def forms(self, sample: int) -> dict[str, str]:
        """What each placeholder stands for in this group's `sample`-th prompt."""
        forms = {"group": self.name, "plural": self.plural}
        forms.update(zip(("they", "them", "their"), self.pronouns, strict=True))
        if self.singular is not None:
            forms["singular"] = self.singular
        if self.names:
            forms["name"] = self.names[sample % len(self.names)]
        return forms


@dataclass(frozen=True, slots=True)
class Dimension:
    name: str
    groups: tuple[Group, ...]
    templates: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Suite:
    """The groups to compare, each dimension on its own, and their templates."""

    name: str
    dimensions: tuple[Dimension, ...]

    def prompt(self, dimension: Dimension, group: Group, template: int, sample: int) -> str:
        return _render(dimension.templates[template], group.forms(sample))


def load_suite(spec: str) -> Suite:
    """The built-in suite (`"builtin"`), or the suite in the YAML or JSON file `spec`."""
    if spec == BUILTIN:
        text = resources.files("guard.probe").joinpath("builtin.yaml").read_text("utf-8")
        return parse_suite(yaml.safe_load(text), name=BUILTIN)
    path = Path(spec)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"suite {spec}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise SuiteError(f"suite {spec}: not valid {_format(path)}: {exc}") from exc
    return parse_suite(data, name=spec)


def parse_suite(data: Any, *, name: str) -> Suite:
    """A `Suite` from its parsed YAML/JSON; raises `SuiteError` naming what is wrong."""
    where = f"suite {name}"
    if not isinstance(data, Mapping):
        raise SuiteError(f"{where}: expected a mapping with 'dimensions' and 'templates'")
    unknown = set(data) - {"dimensions", "templates"}
    if unknown:
        raise SuiteError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    templates = _templates(data.get("templates"), where, required=False)
    dimensions = data.get("dimensions")
    if not isinstance(dimensions, Mapping) or not dimensions:
        raise SuiteError(f"{where}: 'dimensions' must map each dimension to its groups")
    parsed = tuple(
        _dimension(str(key), value, templates, f"{where}: dimension {key!r}")
        for key, value in dimensions.items()
    )
    return Suite(name=name, dimensions=parsed)


def _dimension(name: str, value: Any, templates: tuple[str, ...], where: str) -> Dimension:
    if isinstance(value, Mapping):
        unknown = set(value) - {"groups", "templates"}
        if unknown:
            raise SuiteError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        templates = _templates(value.get("templates"), where, required=False) or templates
        value = value.get("groups")
    if not isinstance(value, list):
        raise SuiteError(f"{where}: expected a list of groups")
    groups = tuple(_group(item, f"{where}, group {index + 1}") for index, item in enumerate(value))
    if len(groups) < 2:
        shown = ", ".join(group.name for group in groups) or "none"
        raise SuiteError(
            f"{where} has {len(groups)} group ({shown}): a probe compares groups, give at least two"
        )
    seen: set[str] = set()
    for group in groups:
        if group.name in seen:
            raise SuiteError(f"{where}: the group {group.name!r} is listed twice")
        seen.add(group.name)
    if not templates:
        raise SuiteError(f"{where}: no templates (give 'templates' in the suite or the dimension)")
    for index, template in enumerate(templates):
        for group in groups:
            _check_template(template, group, f"{where}, template {index + 1} ({template!r})")
    return Dimension(name=name, groups=groups, templates=templates)


def _group(item: Any, where: str) -> Group:
    if isinstance(item, str):
        return Group(name=_text(item, where), plural=item)
    if not isinstance(item, Mapping):
        raise SuiteError(f"{where}: expected a name or a mapping with 'group'")
    unknown = set(item) - _GROUP_KEYS
    if unknown:
        raise SuiteError(
            f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}"
            f" (known: {', '.join(sorted(_GROUP_KEYS))})"
        )
    name = _text(item.get("group"), f"{where}: 'group'")
    pronouns = item.get("pronouns", _NEUTRAL_PRONOUNS)
    if not (isinstance(pronouns, list | tuple) and len(pronouns) == 3):
        raise SuiteError(f"{where} ({name}): 'pronouns' must be three words: they, them, their")
    names = item.get("names", [])
    if not isinstance(names, list):
        raise SuiteError(f"{where} ({name}): 'names' must be a list")
    singular = item.get("singular")
    return Group(
        name=name,
        plural=_text(item.get("plural", name), f"{where} ({name}): 'plural'"),
        singular=None if singular is None else _text(singular, f"{where} ({name}): 'singular'"),
        pronouns=(
            _text(pronouns[0], where),
            _text(pronouns[1], where),
            _text(pronouns[2], where),
        ),
        names=tuple(_text(n, f"{where} ({name}): 'names'") for n in names),
    )


def _templates(value: Any, where: str, *, required: bool) -> tuple[str, ...]:
    if value is None and not required:
        return ()
    if not isinstance(value, list) or not all(isinstance(t, str) and t.strip() for t in value):
        raise SuiteError(f"{where}: 'templates' must be a list of non-empty strings")
    return tuple(value)


def _check_template(template: str, group: Group, where: str) -> None:
    try:
        fields = [parsed for parsed in string.Formatter().parse(template) if parsed[1] is not None]
    except ValueError as exc:
        raise SuiteError(f"{where}: {exc} (write a literal brace as {{{{ or }}}})") from exc
    if not fields:
        raise SuiteError(f"{where}: names no group; use {{group}} or another placeholder")
    known = group.forms(0)
    for _, field, spec, conversion in fields:
        if field not in PLACEHOLDERS or spec or conversion:
            raise SuiteError(
                f"{where}: unknown placeholder {{{field}}};"
                f" known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}"
            )
        if field not in known:
            raise SuiteError(
                f"{where}: uses {{{field}}}, which the group {group.name!r} does not give"
                f" ({'singular' if field == 'singular' else 'names'})"
            )


def _render(template: str, forms: Mapping[str, str]) -> str:
    text = template.format_map(forms)
    return text[:1].upper() + text[1:]


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SuiteError(f"{where}: expected a non-empty string, got {value!r}")
    return value.strip()


def _format(path: Path) -> str:
    return "JSON" if path.suffix == ".json" else "YAML"
