"""`${VAR}` interpolation and strict YAML reading for config files. Pure functions."""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from typing import Any

import yaml

__all__ = ["ConfigError", "format_loc", "interpolate", "interpolate_tree", "parse_yaml"]


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
    out: list[str] = []
    position = 0
    while (dollar := text.find("$", position)) != -1:
        out.append(text[position:dollar])
        following = text[dollar + 1 : dollar + 2]
        if following == "$":
            out.append("$")
            position = dollar + 2
        elif following == "{":
            value, position = _reference(text, dollar + 2, env)
            out.append(value)
        else:
            out.append("$")
            position = dollar + 1
    out.append(text[position:])
    return "".join(out)


def _reference(text: str, start: int, env: Mapping[str, str]) -> tuple[str, int]:
    """Resolve the reference whose name starts at `start`; return it and the end offset."""
    match = _NAME.match(text, start)
    end = match.end() if match else start
    if match and text.startswith("}", end):
        name = match.group()
        if name not in env:
            raise ConfigError(
                f"environment variable {name} is not set (write ${{{name}:-}} to make it optional)"
            )
        return env[name], end + 1
    if match and text.startswith(":-", end):
        close = _closing_brace(text, end + 2)
        value = env.get(match.group(), "")
        if value:
            return value, close + 1
        return interpolate(text[end + 2 : close], env), close + 1
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


def interpolate_tree(node: Any, env: Mapping[str, str], loc: tuple[str | int, ...] = ()) -> Any:
    """Interpolate every string inside a loaded YAML tree; errors name the field."""
    if isinstance(node, str):
        try:
            return interpolate(node, env)
        except ConfigError as exc:
            raise ConfigError(f"{format_loc(loc)}: {exc}" if loc else str(exc)) from None
    if isinstance(node, dict):
        return {key: interpolate_tree(value, env, (*loc, key)) for key, value in node.items()}
    if isinstance(node, list):
        return [interpolate_tree(item, env, (*loc, index)) for index, item in enumerate(node)]
    return node


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


def format_loc(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out
