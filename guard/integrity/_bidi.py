"""Bidirectional controls resolved to the order a reader sees, for the judged view.

A right-to-left override shows "head" for the stored "daeh": a reader sees one
sentence while a model reads the characters in stored order, reversed. The judged
view holds what the reader sees, without the controls. This is the part of the
Unicode Bidirectional Algorithm (UAX #9) that overrides need, not all of it:

- The explicit controls are parsed as UAX #9's rules X1..X8 do: LRO, RLO, LRE, RLE
  open a level that PDF closes; LRI, RLI, FSI open an isolate that PDI closes, with
  everything opened inside it; a paragraph separator closes them all. Unmatched
  closers are ignored; past `MAX_DEPTH` open levels, openers and their closers are
  ignored (UAX #9 stops at 125).
- An override's content is laid out in the override's direction, its nested runs
  kept whole as rule L2 keeps them: RLO around left-to-right text shows it reversed,
  LRO around right-to-left text (Arabic, Hebrew) shows it reversed to a reader of
  that script; an override in the text's own direction changes nothing. A run's own
  direction is that of most of its strong characters.
- Embeddings and isolates keep their content in stored order, which is how a model
  reads right-to-left scripts; the implicit levels of mixed text (rules W, N, I) are
  not resolved, since they change where a reader's eye goes, not what it reads.

Implicit marks (LRM, RLM, ALM) are removed too: they move no character.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

__all__ = ["MAX_DEPTH", "resolve"]

MAX_DEPTH = 64

_LRE, _RLE, _PDF, _LRO, _RLO = "\u202a\u202b\u202c\u202d\u202e"
_LRI, _RLI, _FSI, _PDI = "\u2066\u2067\u2068\u2069"
_MARKS = frozenset("\u061c\u200e\u200f")
_OVERRIDES = {_LRO: "L", _RLO: "R"}
_OPENERS = frozenset({_LRE, _RLE, _LRO, _RLO, _LRI, _RLI, _FSI})
_ISOLATES = frozenset({_LRI, _RLI, _FSI})
_CONTROL = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# UAX #9's paragraph separators (class B); a CRLF is one.
_PARAGRAPHS = re.compile("(\r\n|[\n\r\x1c-\x1e\x85\u2029])")


@dataclass
class _Run:
    direction: str | None  # "L" or "R" for an override
    isolate: bool = False
    items: list[str | _Run] = field(default_factory=list)


def _attaches(char: str) -> bool:
    """Whether `char` belongs to the character before it (marks, joiners, tags, modifiers)."""
    return (
        unicodedata.category(char)[0] == "M"
        or char in "\u200c\u200d"
        or 0x1F3FB <= ord(char) <= 0x1F3FF
        or 0xE0000 <= ord(char) <= 0xE007F
    )


def _is_control(text: str) -> bool:
    return text in _OPENERS or text in (_PDF, _PDI) or text in _MARKS


def _clusters(paragraph: str) -> list[str]:
    """The paragraph as controls and clusters, so a reversal moves a mark with its letter."""
    clusters: list[str] = []
    joined = False
    for char in paragraph:
        attached = joined or _attaches(char)
        if attached and clusters and not _is_control(char) and not _is_control(clusters[-1]):
            clusters[-1] += char
        else:
            clusters.append(char)
        joined = char == "\u200d"
    return clusters


def _tree(paragraph: str) -> tuple[_Run, bool]:
    """The paragraph's runs, and whether every run opened in it was closed."""
    root = _Run(direction=None)
    stack = [root]
    ignored = 0  # openers past MAX_DEPTH, whose closers are ignored too
    for cluster in _clusters(paragraph):
        if cluster in _OPENERS:
            if len(stack) > MAX_DEPTH:
                ignored += 1
                continue
            run = _Run(direction=_OVERRIDES.get(cluster), isolate=cluster in _ISOLATES)
            stack[-1].items.append(run)
            stack.append(run)
        elif cluster in (_PDF, _PDI):
            if ignored:
                ignored -= 1
            elif cluster == _PDF and len(stack) > 1 and not stack[-1].isolate:
                stack.pop()
            elif cluster == _PDI and any(run.isolate for run in stack):
                while not stack.pop().isolate:
                    pass
        elif cluster not in _MARKS:
            stack[-1].items.append(cluster)
    return root, len(stack) == 1 and not ignored


def _direction(text: str) -> str:
    """The direction of most of `text`'s strong characters ("L" when tied or none)."""
    rightward = leftward = 0
    for char in text:
        kind = unicodedata.bidirectional(char)
        if kind == "L":
            leftward += 1
        elif kind in ("R", "AL"):
            rightward += 1
    return "R" if rightward > leftward else "L"


def _flat(run: _Run) -> str:
    parts = [item if isinstance(item, str) else _flat(item) for item in run.items]
    if run.direction is not None and run.direction != _direction("".join(parts)):
        parts.reverse()
    return "".join(parts)


def resolve(text: str) -> str:
    """`text` in the order a reader sees it, without bidirectional controls.

    >>> resolve("The \\u202edaeh\\u202c of state")
    'The head of state'
    """
    if _CONTROL.search(text) is None:
        return text
    if _LRO not in text and _RLO not in text:
        # Embeddings, isolates and marks keep their content in stored order.
        return _CONTROL.sub("", text)
    pieces = _PARAGRAPHS.split(text)
    return "".join(_resolved(piece) if _CONTROL.search(piece) else piece for piece in pieces)


def _resolved(paragraph: str) -> str:
    """One paragraph resolved; text outside its controls' reach is left as it is."""
    if _LRO not in paragraph and _RLO not in paragraph:
        return _CONTROL.sub("", paragraph)
    first = _CONTROL.search(paragraph)
    assert first is not None
    last = max(match.end() for match in _CONTROL.finditer(paragraph, first.start()))
    middle, closed = _tree(paragraph[first.start() : last])
    if closed:
        return paragraph[: first.start()] + _flat(middle) + paragraph[last:]
    return paragraph[: first.start()] + _flat(_tree(paragraph[first.start() :])[0])
