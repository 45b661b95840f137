"""Which group of a suite a prompt names, and the same prompt about another group.

The live probe (`gateway.probe`) reads client prompts, not a suite's templates,
so it looks for a group's surface forms in free text: the group's name, its
`plural`, its `singular` and its `names` (pronouns are too common to say which
group is meant). A form matches as whole words (not inside a longer word) and
in any case; a form that starts a sentence keeps its capital when swapped.

A prompt names a dimension when it names exactly one of its groups: a prompt
about "women and men" compares them already, and swapping either makes no
counterfactual. Of the dimensions a prompt names, the one named first is taken.

>>> from guard.probe.suite import parse_suite
>>> suite = parse_suite({"dimensions": {"origin": ["immigrants", "locals"]},
...                      "templates": ["About {group}."]}, name="s")
>>> matcher = Matcher(suite)
>>> mention = matcher.find("Immigrants and the housing market: two sentences.")
>>> mention.dimension.name, mention.group.name
('origin', 'immigrants')
>>> matcher.swap("Immigrants and the housing market.", mention, mention.dimension.groups[1])
'Locals and the housing market.'
>>> matcher.mask("Immigrants and the housing market.", mention)
'{group} and the housing market.'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from guard.probe.suite import Dimension, Group, Suite

__all__ = ["Matcher", "Mention"]

_FORMS = ("group", "plural", "singular")


@dataclass(frozen=True, slots=True)
class Mention:
    """The dimension a prompt names, and the one group of it that it names."""

    dimension: Dimension
    group: Group


def _surfaces(group: Group) -> dict[str, tuple[str, int]]:
    """Each lower-cased surface form of `group`: (the form's placeholder, its index)."""
    found: dict[str, tuple[str, int]] = {}
    for form in _FORMS:
        value = group.forms(0).get(form)
        if value:
            found.setdefault(value.lower(), (form, 0))
    for index, name in enumerate(group.names):
        found.setdefault(name.lower(), ("name", index))
    return found


def _pattern(surfaces: list[str]) -> re.Pattern[str]:
    # Longest first, so that "gay men" is one match and not "men" after "gay".
    ordered = sorted(surfaces, key=len, reverse=True)
    words = "|".join(re.escape(surface) for surface in ordered)
    return re.compile(rf"(?<!\w)(?:{words})(?!\w)", re.IGNORECASE)


class Matcher:
    """Finds a suite's groups in free text, and swaps or masks them. Pure, no I/O."""

    def __init__(self, suite: Suite) -> None:
        self.suite = suite
        self._owners: dict[str, dict[str, tuple[Group, str, int]]] = {}
        self._patterns: dict[str, re.Pattern[str]] = {}
        for dimension in suite.dimensions:
            owners: dict[str, tuple[Group, str, int]] = {}
            shared: set[str] = set()
            for group in dimension.groups:
                for surface, (form, index) in _surfaces(group).items():
                    if surface in owners and owners[surface][0] is not group:
                        shared.add(surface)  # two groups' form: it says neither
                    owners.setdefault(surface, (group, form, index))
            for surface in shared:
                del owners[surface]
            self._owners[dimension.name] = owners
            self._patterns[dimension.name] = _pattern(list(owners))

    def find(self, text: str) -> Mention | None:
        """The dimension `text` names first with exactly one of its groups, or None."""
        best: tuple[int, Mention] | None = None
        for dimension in self.suite.dimensions:
            owners = self._owners[dimension.name]
            matches = list(self._patterns[dimension.name].finditer(text))
            groups = {owners[match.group(0).lower()][0].name for match in matches}
            if len(groups) != 1:
                continue
            start = matches[0].start()
            if best is None or start < best[0]:
                group = owners[matches[0].group(0).lower()][0]
                best = (start, Mention(dimension, group))
        return None if best is None else best[1]

    def swap(self, text: str, mention: Mention, to: Group) -> str | None:
        """`text` with every form of the mentioned group replaced by `to`'s same form;
        None when `to` lacks a form the text uses (a `singular` it does not give)."""
        missing = False

        def replace(match: re.Match[str]) -> str:
            nonlocal missing
            form, index = self._form(mention, match)
            if form is None:
                return match.group(0)
            value = _form_of(to, form, index)
            if value is None:
                missing = True
                return match.group(0)
            return _cased(value, match.group(0))

        swapped = self._patterns[mention.dimension.name].sub(replace, text)
        return None if missing else swapped

    def mask(self, text: str, mention: Mention) -> str:
        """`text` with the mentioned group's forms replaced by their placeholders."""

        def replace(match: re.Match[str]) -> str:
            form, _ = self._form(mention, match)
            return match.group(0) if form is None else "{" + form + "}"

        return self._patterns[mention.dimension.name].sub(replace, text)

    def _form(self, mention: Mention, match: re.Match[str]) -> tuple[str | None, int]:
        group, form, index = self._owners[mention.dimension.name][match.group(0).lower()]
        return (form, index) if group is mention.group else (None, 0)


def _form_of(group: Group, form: str, index: int) -> str | None:
    if form == "name":
        return group.names[index % len(group.names)] if group.names else None
    return group.forms(0).get(form)


def _cased(value: str, original: str) -> str:
    """`value` with a capital first letter where `original` began with one."""
    if original[:1].isupper() and not value[:1].isupper():
        return value[:1].upper() + value[1:]
    return value
