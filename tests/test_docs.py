"""The docs name only what exists: relative links (and their headings), config keys and
the `BIAS_*`/`GATEWAY_*` variables, in README.md, docs/*.md and bench's two READMEs."""

from __future__ import annotations

import re
import typing
from collections.abc import Iterator
from pathlib import Path

import yaml

from gateway.config import Settings

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "bench" / "README.md",
    ROOT / "bench" / "results" / "README.md",
]
# Where a variable the docs name must be read or set.
SOURCES = ["gateway", "guard", "scripts", "tests", "bench", "config", ".ci", "Dockerfile"]
SOURCE_SUFFIXES = {"", ".py", ".yaml", ".yml", ".toml"}
# OpenTelemetry attributes that start like a config section.
NOT_KEYS = {"server.address"}

FENCE = re.compile(r"^ *```.*?^ *```[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#* *$", re.MULTILINE)
KEY = re.compile(r"`([a-z_]+(?:\.(?:[a-z0-9_]+|<[a-z-]+>))+)(?::[^`]*)?`")
YAML_BLOCK = re.compile(r"^ *```ya?ml\n(.*?)^ *```", re.MULTILINE | re.DOTALL)
ENV = re.compile(r"\b(?:BIAS|GATEWAY)_[A-Z0-9_]+\b")


def _blank(match: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", match.group())  # newlines kept: offsets still give lines


def prose(path: Path) -> str:
    return FENCE.sub(_blank, path.read_text(encoding="utf-8"))  # without code blocks


def where(path: Path, text: str, offset: int, lines_on: int = 0) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, offset) + 1 + lines_on}"


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower-cased, without punctuation."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    slugs = [slug(match.group(1)) for match in HEADING.finditer(prose(path))]
    # A repeated heading's anchor takes -1, -2, ... after the first.
    return {f"{s}-{slugs[:i].count(s)}" if s in slugs[:i] else s for i, s in enumerate(slugs)}


def test_relative_links_point_to_files_and_headings() -> None:
    problems, checked = [], 0
    for doc in DOCS:
        text = CODE_SPAN.sub(_blank, prose(doc))
        for match in LINK.finditer(text):
            target = match.group(1)
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not relative
            checked += 1
            path_part, _, fragment = target.partition("#")
            linked = (doc.parent / path_part).resolve() if path_part else doc
            if not linked.exists():
                problems.append(f"{where(doc, text, match.start())}: no file {target}")
            elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                problems.append(f"{where(doc, text, match.start())}: no heading #{fragment}")
    assert not problems, "\n".join(problems)
    assert checked > 50  # the scan found the docs' links at all


def _inner(annotation: object) -> object:
    """The type a field holds, without Annotated, Optional or list around it."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated or origin is list:
            annotation = typing.get_args(annotation)[0]
        elif type(None) in typing.get_args(annotation):  # Optional
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        else:
            return annotation


def is_setting(parts: list[str]) -> bool:
    annotation: object = Settings
    for part in parts:
        annotation = _inner(annotation)
        if typing.get_origin(annotation) is dict:
            annotation = typing.get_args(annotation)[1]  # `part` names an entry
        elif (field := getattr(annotation, "model_fields", {}).get(part)) is not None:
            annotation = field.annotation
        else:
            # No such field, or a plain value; or a key that moved into a section, which
            # is still read where it was.
            return part in getattr(annotation, "MOVED", {})
    return True


def yaml_problems(node: yaml.Node, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, int]]:
    """The keys of a YAML config that are not settings, each with its line in the block."""
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from yaml_problems(item, prefix)
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            parts = (*prefix, str(key.value))
            if is_setting(list(parts)):
                yield from yaml_problems(value, parts)
            else:
                yield ".".join(parts), key.start_mark.line


def test_config_keys_named_in_the_docs_exist() -> None:
    problems, checked = [], 0
    for doc in DOCS:
        text = prose(doc)
        for match in KEY.finditer(text):
            name = match.group(1)
            if name.split(".")[0] not in Settings.model_fields or name in NOT_KEYS:
                continue
            checked += 1
            if not is_setting(name.split(".")):
                problems.append(f"{where(doc, text, match.start())}: no setting {name}")
        raw = doc.read_text(encoding="utf-8")
        for block in YAML_BLOCK.finditer(raw):
            root = yaml.compose(block.group(1))
            if not isinstance(root, yaml.MappingNode) or any(
                key.value not in Settings.model_fields for key, _ in root.value
            ):
                continue  # not a gateway config
            for name, line in yaml_problems(root):
                problems.append(f"{where(doc, raw, block.start(), 1 + line)}: no setting {name}")
    assert not problems, "\n".join(problems)
    assert checked > 50  # the scan found the docs' keys at all


def test_environment_variables_named_in_the_docs_are_used() -> None:
    files = [path for top in SOURCES for path in [ROOT / top, *(ROOT / top).rglob("*")]]
    used = {
        name
        for path in files
        if path.is_file() and path.suffix in SOURCE_SUFFIXES and path != HERE
        for name in ENV.findall(path.read_text(encoding="utf-8", errors="replace"))
    }
    problems, checked = [], 0
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in ENV.finditer(text):
            checked += 1
            if match.group() not in used:
                problems.append(f"{where(doc, text, match.start())}: {match.group()} is not used")
    assert not problems, "\n".join(problems)
    assert checked > 10  # the scan found the docs' variables at all
