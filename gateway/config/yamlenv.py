"""`${VAR}` interpolation and strict YAML reading for config files. Pure functions."""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = [
    "ConfigError",
    "Interpolated",
    "Loc",
    "format_loc",
    "interpolate",
    "interpolate_tree",
    "parse_yaml",
]

# A place in a loaded tree, as pydantic's error `loc`: ("keys", 0, "key").
Loc = tuple[str | int, ...]


class ConfigError(Exception):
    """The configuration cannot be used. The message is one line, fit for a terminal."""


# --- interpolation -----------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """Replace `${NAME}` and `${NAME:-default}` in `text`; `$$` is a literal `$`.

    The default applies when NAME is unset or empty, as in the shell, and may
    itself hold references: `${JUDGE_KEY:-${OPENAI_API_KEY}}`.

    >>> interpolate("${HOST:-localhost}:${PORT}", {"PORT": "80"})
    'localhost:80'
    """
    missing: list[str] = []
    value = _expand(text, env, [], missing)
    if missing:
        raise ConfigError(_not_set(missing[:1]))
    return value


def _expand(text: str, env: Mapping[str, str], used: list[str], missing: list[str]) -> str:
    """`interpolate`, noting the variables whose values went in (`used`) and the unset
    ones (`missing`, replaced by ""), so that a caller can report them all at once."""
    out: list[str] = []
    position = 0
    while (dollar := text.find("$", position)) != -1:
        out.append(text[position:dollar])
        following = text[dollar + 1 : dollar + 2]
        if following == "$":
            out.append("$")
            position = dollar + 2
        elif following == "{":
            value, position = _reference(text, dollar + 2, env, used, missing)
            out.append(value)
        else:
            out.append("$")
            position = dollar + 1
    out.append(text[position:])
    return "".join(out)


def _reference(
    text: str, start: int, env: Mapping[str, str], used: list[str], missing: list[str]
) -> tuple[str, int]:
    """Resolve the reference whose name starts at `start`; return it and the end offset."""
    match = _NAME.match(text, start)
    end = match.end() if match else start
    if match and text.startswith("}", end):
        name = match.group()
        if name not in env:
            missing.append(name)
            return "", end + 1
        used.append(name)
        return env[name], end + 1
    if match and text.startswith(":-", end):
        close = _closing_brace(text, end + 2)
        value = env.get(match.group(), "")
        if value:
            used.append(match.group())
            return value, close + 1
        return _expand(text[end + 2 : close], env, used, missing), close + 1
    if "}" not in text[start:]:
        raise ConfigError("unterminated '${' (write $$ for a literal $)")
    reference = text[start - 2 : text.index("}", start) + 1]
    raise ConfigError(f"invalid reference {reference!r}: expected ${{NAME}} or ${{NAME:-default}}")


def _closing_brace(text: str, start: int) -> int:
    depth = 0
    index = start
    while index < len(text):
        if text.startswith("$$", index):
            index += 2
            continue
        if text.startswith("${", index):
            depth += 1
            index += 2
            continue
        if text[index] == "}":
            if depth == 0:
                return index
            depth -= 1
        index += 1
    raise ConfigError("unterminated '${' (write $$ for a literal $)")


def _not_set(names: list[str]) -> str:
    return f"environment variable {names[0]} is not set {_optional_hint(names)}"


def _optional_hint(names: list[str]) -> str:
    if len(names) == 1:
        return f"(write ${{{names[0]}:-}} to make it optional)"
    return "(write ${NAME:-} to make one optional)"


@dataclass(frozen=True, slots=True)
class Interpolated:
    """A loaded tree after interpolation, and where the environment went into it."""

    tree: Any
    # The variables whose values make up each string that took any, in order of use:
    # {("server", "port"): ("GATEWAY_PORT",)}. Strings from the file alone are absent.
    sources: dict[Loc, tuple[str, ...]]


def interpolate_tree(node: Any, env: Mapping[str, str]) -> Interpolated:
    """Interpolate every string inside a loaded YAML tree.

    Every problem is reported at once, each naming its field:
    `upstream.api_key: environment variable A is not set; keys[0].key: ...`.
    """
    sources: dict[Loc, tuple[str, ...]] = {}
    problems: list[str] = []
    unset: list[str] = []

    def walk(node: Any, loc: Loc) -> Any:
        if isinstance(node, str):
            used: list[str] = []
            missing: list[str] = []
            try:
                value = _expand(node, env, used, missing)
            except ConfigError as exc:
                problems.append(_at(loc, str(exc)))
                return node
            for name in missing:
                problems.append(_at(loc, f"environment variable {name} is not set"))
                unset.append(name)
            if used:
                sources[loc] = tuple(dict.fromkeys(used))
            return value
        if isinstance(node, dict):
            return {key: walk(value, (*loc, key)) for key, value in node.items()}
        if isinstance(node, list):
            return [walk(item, (*loc, index)) for index, item in enumerate(node)]
        return node

    tree = walk(node, ())
    if problems:
        names = list(dict.fromkeys(unset))
        hint = f" {_optional_hint(names)}" if names else ""
        raise ConfigError("; ".join(problems) + hint)
    return Interpolated(tree, sources)


def _at(loc: Loc, message: str) -> str:
    return f"{format_loc(loc)}: {message}" if loc else message


class _Loader(yaml.SafeLoader):
    """YAML 1.2 booleans (so `mode: off` stays a string) and no silent duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(
                key_node, yaml.ScalarNode
            ):
                continue
            if key_node.value in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key_node.value!r}", key_node.start_mark
                )
            seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)


_BOOL = "tag:yaml.org,2002:bool"
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _BOOL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def parse_yaml(text: str) -> Any:
    """Load YAML with `_Loader`; a syntax error becomes a `ConfigError` with its line."""
    try:
        return yaml.load(text, Loader=_Loader)  # _Loader derives from SafeLoader
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(_yaml_problem(exc)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}") from None


def _yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "invalid YAML"
    if mark is None:
        return f"invalid YAML: {problem}"
    return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


def format_loc(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out
