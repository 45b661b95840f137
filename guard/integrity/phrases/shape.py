"""How the phrase patterns are put together: word gaps, one sentence, a note then an order."""

from __future__ import annotations

__all__ = ["DROPPED", "Rule", "drop_rule", "gap", "paragraph", "vocative_rule", "within"]

# A rule: groups of stems, then a pattern. The pattern runs only when every group has
# a stem in the lowercased folded text: what it names, and what it orders.
Rule = tuple[tuple[tuple[str, ...], ...], str]

# Up to `n` words between two parts of a phrase, in scripts that space words.
_GAP = r"(?:\W+\w+){0,%d}?\W+"
# The rest of one sentence, for the space-less scripts and for "note ... order".
_SAME_SENTENCE = r"[^.!?\n\u3002\uff01\uff1f]{0,%d}?"


def gap(words: int) -> str:
    return _GAP % words


def within(chars: int) -> str:
    return _SAME_SENTENCE % chars


def vocative_rule(note: str, addressee: str, order: str) -> str:
    """A note or greeting to the addressee, then an order or a verdict in the same breath."""
    return rf"(?:{note})\W+(?:\w+\W+){{0,3}}?(?:{addressee})\b{within(160)}(?:{order})"


def drop_rule(verbs: str, first: str, second: str) -> str:
    """An order to drop earlier instructions: a verb, up to three words, then the
    instructions and the word for "earlier" in the language's order, a word apart at most."""
    return rf"(?:{verbs})\b" + gap(3) + rf"(?:{first})\W+(?:\w+\W+)?(?:{second})\b"


# The rest of one paragraph: single line breaks allowed, a blank line not. A note to the
# reviewer often gives its order a sentence or a line after it names the reviewer.
_SAME_PARAGRAPH = r"(?:[^\n]|\n(?![ \t]*\n)){0,%d}?"


def paragraph(chars: int) -> str:
    return _SAME_PARAGRAPH % chars


_TEXT_NOUNS = (
    r"instructions?|rules|prompts?|directions|orders|guidelines|sentences?|text|lines?|passage"
    r"|content|statements?|paragraph|quote|answer|response"
)
# "Ignore" with what it drops: this text or earlier orders ("ignore the previous sentence",
# "disregard everything above", "ignore this and ..."), not "the previous announcement",
# "minor formatting issues" or "this email if you did not ask for it".
DROPPED = (
    r"(?:ignore|disregard|overlook|forget)\W+(?:all\W+)?(?:of\W+)?(?:(?:everything|anything)\b"
    r"|this(?:\W+(?:" + _TEXT_NOUNS + r")\b|(?=[ \t]*(?:[.,;!]|and\b|$)))"
    r"|(?:the\W+)?(?:above|preceding|following)\b|(?:the\W+|your\W+|all\W+|any\W+)?(?:previous"
    r"|prior|earlier|preceding|above|original)?\W*(?:\w+\W+)?(?:" + _TEXT_NOUNS + r")\W+"
    r"(?:above|before|so\W+far)|(?:the\W+|your\W+|all\W+|any\W+)?(?:previous|prior|earlier"
    r"|preceding|above|original)\W+(?:\w+\W+)?(?:" + _TEXT_NOUNS + r")\b)"
)
