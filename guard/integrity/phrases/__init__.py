"""What text that addresses the judge says, in nine languages and Dutch: the detector's phrase set.

Each rule is (stem groups, pattern). The pattern is written in lower case and runs
on the lowercased folded copy (`guard.integrity.tamper_fold`), and only when every
group has a stem in that copy, so ordinary text pays for a set intersection. In
`SPACED_RULES` a stem is matched by a word's first four letters (a shorter stem
is a whole word); in `CJK_RULES`, written without spaces, anywhere in the text.

A rule fires on a sentence that does a judge's job for it, not on one that talks
about judging: an order to drop earlier instructions, a note or vocative to the
reviewer (or an AI system) with an order or a verdict after it, a claim that
"this text" holds no opinions or must not be judged, an order to return an empty
list or a zero score, a check declared switched off. "Reviewers should weigh the
context" and "the grader gave me a zero" say nothing of the kind.
"""

from __future__ import annotations

from guard.integrity.phrases.addressed import ADDRESSED
from guard.integrity.phrases.cjk import CJK
from guard.integrity.phrases.claims import CLAIMS, SCRIPT_CLAIMS
from guard.integrity.phrases.dutch import DUTCH
from guard.integrity.phrases.english import ENGLISH
from guard.integrity.phrases.german_russian import GERMAN_RUSSIAN
from guard.integrity.phrases.romance import ROMANCE
from guard.integrity.phrases.scripts import OTHER_SCRIPTS, SCRIPT_RULES
from guard.integrity.phrases.shape import Rule
from guard.integrity.phrases.steering import ENGLISH_STEERING
from guard.integrity.phrases.steering_world import WORLD_STEERING
from guard.integrity.phrases.verdicts import VERDICTS
from guard.integrity.phrases.vocatives import OPENING, VOCATIVES, Vocative

__all__ = [
    "CJK_RULES",
    "OPENING",
    "OPENING_RULES",
    "OTHER_SCRIPTS",
    "SPACED_RULES",
    "Rule",
    "Vocative",
]

SPACED_RULES: tuple[Rule, ...] = (
    *ENGLISH,
    *ROMANCE,
    *GERMAN_RUSSIAN,
    *DUTCH,
    *VERDICTS,
    *ENGLISH_STEERING,
    *WORLD_STEERING,
    *ADDRESSED,
    *CLAIMS,
)
# Tried only where a line or sentence starts (`OPENING`): a note that names its reader.
OPENING_RULES: tuple[Vocative, ...] = VOCATIVES
CJK_RULES: tuple[Rule, ...] = (*CJK, *SCRIPT_RULES, *SCRIPT_CLAIMS)
