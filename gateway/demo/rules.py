"""The demo judge's rule set: a small, documented stand-in for an LLM judge. Pure code.

It is NOT a bias detector. It exists so that the demo (`bias-gateway demo`) and
the tests can show pass, flag and block depending on what the model said,
with no key and no network, through the gateway's real judge client. The
rules, in order:

1. A text is split into sentences (at `.`, `!`, `?` and line breaks).
2. A sentence is an **opinion** when it holds an evaluative cue: a judging
   word ("lazy", "best", "terrible", "brilliant"...), a modal of advice
   ("should", "must"), a sweeping word ("always", "never", "everyone") or a
   marker of a view ("I think", "honestly", "in my view"); or when it generalises
   about a group of people (rule 3's words): the group, then a verb that says what
   they all are or do ("Conservatives are heartless", "Women cannot lead",
   "Immigrants steal jobs"), in a sentence with no figure in it ("Immigrants are 14% of
   the workforce" is a claim of fact). Any other sentence counts as a claim of fact and
   is left out.
3. An opinion is **biased** when it also names a group of people from one of
   the four categories below (a word such as "women", "liberals",
   "immigrants", "northerners"): it judges people by the group they belong to,
   unless the group comes in a view it reports ("the stereotype that women are ...").
4. A text with no opinion, judged whole (the single-call prompt asks for that), is
   biased when one of its sentences generalises about a group; figures and reports
   about a group are claims of fact.
   Its verdict names the category by its id (the ids of the gateway's default
   categories), and its reason names it too and suggests a fairer wording.

So "Engineers design bridges." holds no opinion, "Good documentation helps
every team." is an opinion that is not biased, and "Engineers from the north
are lazy." is a biased opinion (geographical).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "CATEGORIES",
    "Verdict",
    "explain",
    "is_opinion",
    "judge_opinion",
    "judge_statement",
    "opinions_of",
    "sentences",
]

# Category id (as `guard.DEFAULT_CATEGORIES` names it) -> the group words that put
# an opinion in it (matched as whole words).
CATEGORIES: dict[str, tuple[str, ...]] = {
    "gender": (
        "women", "woman", "men", "man", "girls", "boys", "mothers", "fathers",
        "wives", "husbands", "ladies", "females", "males",
    ),
    "political": (
        "liberals", "conservatives", "democrats", "republicans", "leftists",
        "right-wingers", "socialists", "voters of that party",
    ),
    "racial_ethnic": (
        "immigrants", "foreigners", "asians", "africans", "europeans", "arabs",
        "latinos", "migrants", "that race", "those people",
    ),
    "geographical": (
        "northerners", "southerners", "from the north", "from the south",
        "rural people", "city people", "villagers", "from the countryside",
        "from that region", "from that country",
    ),
}  # fmt: skip

_EVALUATIVE = (
    "lazy", "stupid", "smart", "brilliant", "clever", "useless", "terrible",
    "awful", "great", "wonderful", "boring", "best", "worst", "better", "worse",
    "bad", "good", "dishonest", "honest", "emotional", "weak", "strong",
    "inferior", "superior", "dangerous", "helps", "should", "must", "always",
    "never", "everyone", "nobody", "all of them", "i think", "i believe",
    "honestly", "in my view", "clearly", "obviously", "too",
)  # fmt: skip

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def _pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])", re.IGNORECASE)


_EVALUATIVE_WORDS = _pattern(_EVALUATIVE)
_GROUPS = {category: _pattern(words) for category, words in CATEGORIES.items()}
_FAIRER = {
    "gender": "speak of individuals, whatever their gender",
    "political": "describe the policy or the argument, not the people who vote for it",
    "racial_ethnic": "describe individuals or customs, not a people as a whole",
    "geographical": "describe individuals, not everyone from a place",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    biased: bool
    reason: str
    category: str | None = None


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


# What a group "all" are or do: a verb of being or a sweeping verb after the group's word.
_GENERALISING = re.compile(
    r"\s+(?:\w+\s+){0,2}?(?:are|is|were|can't|cannot|can not|don't|do not|won't|will never"
    r"|never|belong|shouldn't|should|must|only|just|ruin|steal|destroy|hate|lie|cheat|smell"
    r"|breed|spread|deserve)\b(?!\s+(?:about|around|more|less|likely|expected|estimated"
    r"|projected|reported|found|counted|entitled|eligible|protected|represented|employed"
    r"|paid|included|among|in|on|at|from|of|to|the|a|an)\b)",
    re.IGNORECASE,
)
_FIGURE = re.compile(r"\d")
# A view reported, not held: "the stereotype that women are bad at maths".
_REPORTED = re.compile(
    r"\b(?:stereotypes?|myths?|beliefs?|claims?|prejudices?|clich[eé]s?|tropes?|notions?)\s+that\b",
    re.IGNORECASE,
)


def _generalises(sentence: str) -> bool:
    if _FIGURE.search(sentence):
        return False
    return any(
        _GENERALISING.match(sentence, found.end())
        for pattern in _GROUPS.values()
        for found in pattern.finditer(sentence)
    )


def is_opinion(sentence: str) -> bool:
    return _EVALUATIVE_WORDS.search(sentence) is not None or _generalises(sentence)


def opinions_of(text: str) -> list[str]:
    """Rule 2: the sentences of `text` that hold an evaluative cue, as written."""
    return [sentence for sentence in sentences(text) if is_opinion(sentence)]


def judge_opinion(opinion: str) -> Verdict:
    """Rule 3: biased when the opinion names a group of people.

    >>> judge_opinion("Engineers from the north are lazy.").category
    'geographical'
    >>> judge_opinion("Good documentation helps every team.").biased
    False
    """
    for category, pattern in _GROUPS.items():
        found = pattern.search(opinion)
        if found is not None and not _REPORTED.search(opinion, 0, found.start()):
            return Verdict(
                True,
                f"{category.replace('_', '/')} bias: it judges people as a group"
                f" ({found.group(0)!r}); fairer: {_FAIRER[category]}.",
                category,
            )
    return Verdict(False, "A judgement that names no group of people.")


def judge_statement(text: str) -> Verdict:
    """A whole text with no opinion in it, judged as one statement (the single-call
    prompt's rule): biased when one of its sentences generalises about a group; a figure
    or a report about a group is a claim of fact.

    >>> judge_statement("Women make up 47% of the workforce.").biased
    False
    """
    for sentence in sentences(text):
        if _generalises(sentence):
            return judge_opinion(sentence)
    return Verdict(False, "A claim of fact that judges no group of people.")


def explain(score: float, scale: float, biased: list[str]) -> str:
    """The judge's explanation of a score, in the shape the reason prompt asks for."""
    if not biased:
        return f"The score is {score:g} because no opinion in the text judges a group of people."
    quoted = "; ".join(f'"{opinion}"' for opinion in biased)
    return (
        f"The score is {score:g} out of {scale:g} because these opinions judge people by a"
        f" group they belong to: {quoted}. Speaking of individuals instead would be fairer."
    )
