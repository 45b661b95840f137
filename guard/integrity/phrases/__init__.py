"""What text that addresses the judge says, in nine languages: the detector's phrase set.

Each rule is (stems, pattern). The pattern runs on the folded copy
(`guard.integrity.tamper_fold`) with IGNORECASE, and only when one of its stems
is in the lowercased copy, so ordinary text pays for a few substring checks.

A rule fires on a sentence that does a judge's job for it, not on one that talks
about judging: an order to drop earlier instructions, a note or vocative to the
reviewer (or an AI system) with an order or a verdict after it, a claim that
"this text" holds no opinions or must not be judged, an order to return an empty
list or a zero score, a check declared switched off. "Reviewers should weigh the
context" and "the grader gave me a zero" say nothing of the kind.
"""

from __future__ import annotations

from guard.integrity.phrases.cjk import CJK
from guard.integrity.phrases.english import ENGLISH
from guard.integrity.phrases.european import EUROPEAN

__all__ = ["RULES"]

RULES: tuple[tuple[tuple[str, ...], str], ...] = (*ENGLISH, *EUROPEAN, *CJK)
