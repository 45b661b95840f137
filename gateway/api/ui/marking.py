"""An answer's text with the judge's opinions marked in it, for the review page. Pure.

>>> str(marked("Tea is <b>. Cats rule.", ["Cats rule."]))
'Tea is &lt;b&gt;. <mark class="opinion" data-index="0">Cats rule.</mark>'
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

__all__ = ["marked"]


def marked(text: str, opinions: Sequence[str]) -> Markup:
    """`text`, escaped, each opinion found in it wrapped in a `<mark>` naming its index.

    An opinion is looked for as it is, then without regard to case, at its first place
    that no earlier opinion took; one the judge reworded is not found and not marked.
    """
    spans: list[tuple[int, int, int]] = []  # (start, end, index), not overlapping
    # Lower-cased only where that keeps every character's place (it does, but for a few
    # letters such as "İ").
    folded = text.lower() if len(text.lower()) == len(text) else text
    for index, opinion in enumerate(opinions):
        needle = opinion.strip()
        if not needle:
            continue
        for haystack, sought in ((text, needle), (folded, needle.lower())):
            place = _free(haystack, sought, spans)
            if place is not None:
                spans.append((place, place + len(sought), index))
                break
    parts: list[str] = []
    at = 0
    for start, end, index in sorted(spans):
        parts.append(escape(text[at:start]))
        parts.append(f'<mark class="opinion" data-index="{index}">{escape(text[start:end])}</mark>')
        at = end
    parts.append(escape(text[at:]))
    return Markup("".join(parts))


def _free(haystack: str, needle: str, taken: Sequence[tuple[int, int, int]]) -> int | None:
    """The first place of `needle` in `haystack` that overlaps nothing `taken`."""
    place = haystack.find(needle)
    while place != -1:
        end = place + len(needle)
        if all(end <= start or place >= stop for start, stop, _ in taken):
            return place
        place = haystack.find(needle, place + 1)
    return None
