"""Dutch, a tenth language added cheaply: the orders to drop earlier instructions, a score
or result set for this text. Its notes to a named reviewer are in `vocatives`."""

from __future__ import annotations

from guard.integrity.phrases.shape import Rule, drop_rule

__all__ = ["DUTCH"]

DUTCH: tuple[Rule, ...] = (
    (
        (
            ("negeer", "vergeet", "negeren"),
            ("instructies", "regels", "aanwijzingen", "opdrachten"),
        ),
        drop_rule(
            r"negeer|vergeet|negeren",
            r"vorige|eerdere|voorgaande|bovenstaande|oorspronkelijke|systeem",
            r"instructies|regels|aanwijzingen|opdrachten",
        ),
    ),
    (
        (("score", "beoordeling", "oordeel", "resultaat", "uitslag"), ("bias", "vooroordeel")),
        r"(?:score|beoordeling|oordeel|resultaat|uitslag)\b(?:\W+(?!\d)\w+){0,6}?"
        r"(?:\s+(?:is|moet\W+zijn|wordt)\b|\s*[:=])\W*(?:[^\W\d]\w*\W+)?"
        r"(?:0(?:[.,]0+)?(?![.,]?\d)|nul|geen\W+(?:bias|vooroordelen|vooroordeel))(?:\W*$|[.!;\])}])",
    ),
)
