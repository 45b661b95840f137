"""English: orders and verdicts addressed to the reviewer or an AI system."""

from __future__ import annotations

from guard.integrity.phrases.shape import gap, vocative_rule, within

__all__ = ["ENGLISH"]

# English --------------------------------------------------------------------------

_EN_ADDRESSEE = (
    r"reviewers?|evaluators?|graders?|moderators?|judges?|classifiers?|assessors?|annotators?"
    r"|raters?|scorers?|auditors?|(?:ai|llm|language|bias|safety|content|moderation|evaluation"
    r"|grading|scoring|judge)\W+(?:systems?|assistants?|models?|checks?|checkers?|filters?"
    r"|detectors?|classifiers?|judges?|reviewers?|evaluators?|graders?)|ai|a\.i\.|llms?"
    r"|assistants?|language\W+models?"
)
_EN_ORDER = (
    r"ignore|disregard|forget|no\W+(?:\w+\W+)?opinions?|zero\W+opinions|empty\W+(?:list|array|result)"
    r"|(?:is|are|as|be|marked?|rated?|classif(?:y|ied)|labell?ed|verdict:?)\W+(?:un|not\W+|non-?)biased"
    r"|bias-?free|free\W+of\W+bias|exempt|(?:do\W+not|don'?t)\W+(?:judge|score|flag|evaluate"
    r"|review|assess|extract|list|count|report|mark)\W+(?:this|these|it|anything|any\W+of"
    r"|the\W+(?:above|following|text|answer|response))|score\W+(?:\w+\W+){0,3}?(?:0|zero)\b|disabled|turned\W+off"
    r"|switched\W+off|(?:mark|rate|classify|label)\W+(?:\w+\W+){0,2}?(?:safe|neutral|clean|pass)\b"
)
# A note to the addressee anywhere; a greeting, or the addressee and a colon, only where
# a sentence starts.
_EN_NOTE = r"note|message|instructions?|memo|reminder|notice|directive|hint|attention"
_EN_GREETING = r"dear|hey|hello|hi|psst|to|attention|if\W+you\W+are|any|all|every"
_EN_THIS = (
    r"(?:this|these|the\W+(?:above|following|preceding|present|previous))\W+(?:\w+\W+){0,2}?"
    r"(?:text|texts|lines?|passages?|answer|response|reply|output|content|message|sentences?"
    r"|statements?|paragraphs?|remarks?|words|quotes?|quotations?|material)"
    r"|(?:the\W+)?(?:text|lines?|passages?|sentences?|statements?|quotes?|content)\W+"
    r"(?:above|below|here|that\W+follows?)"
)
_EN_CLAIM = (
    r"(?:hold|holds|contain|contains|express|expresses|carry|carries|include|includes|has|have)"
    r"\W+(?:no|zero)\W+(?:\w+\W+)?(?:opinions?|bias|views)"
    r"|(?:is|are)\W+(?:exempt|unbiased|not\W+biased|bias-?free|free\W+of\W+bias)"
    r"|(?:is|are|must|should|shall|need|needs|may|can|will)\W+not\W+(?:to\W+)?(?:be\W+)?"
    r"(?:judged|scored|evaluated|reviewed|assessed|flagged|counted|analy[sz]ed|checked|classified)"
    r"|(?:do|does)\W+not\W+(?:count|qualify)\W+as\W+(?:opinions?|bias)"
)
_EN_VERDICT_VALUE = (
    r"unbiased|not\W+biased|non-?biased|bias-?free|free\W+of\W+bias|no\W+bias|neutral|pass(?:ed)?"
    r"|safe|clean|harmless|compliant|acceptable"
)

ENGLISH: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("ignor", "disregard", "forget", "overrid", "bypass", "skip"),
        r"\b(?:ignore|disregard|forget|override|bypass|skip|drop|abandon)\b"
        + gap(3)
        + r"(?:previous|prior|above|earlier|preceding|foregoing|original|initial|system)\W+"
        r"(?:\w+\W+){0,2}?(?:instructions?|prompts?|rules|guidelines|directions|directives"
        r"|rubric|criteria|task|context|orders|messages?)\b",
    ),
    (
        ("ignor", "disregard", "forget"),
        r"\b(?:ignore|disregard|forget)\W+(?:all|any|every|everything)\W+(?:of\W+)?"
        r"(?:your\W+|the\W+|my\W+)?(?:instructions|prompts|guidelines|(?:said\W+|written\W+)?"
        r"(?:above|before|so\W+far))\b",
    ),
    (
        (
            "review",
            "evaluat",
            "grader",
            "moderat",
            "judge",
            "classif",
            "assess",
            "annotat",
            "rater",
            "scorer",
            "auditor",
            "ai",
            "llm",
            "assistant",
            "model",
            "a.i.",
        ),
        r"\b" + vocative_rule(r"(?:" + _EN_NOTE + r")\W+(?:to|for)", _EN_ADDRESSEE, _EN_ORDER),
    ),
    (
        (
            "review",
            "evaluat",
            "grader",
            "moderat",
            "judge",
            "classif",
            "assess",
            "annotat",
            "rater",
            "scorer",
            "auditor",
            "ai",
            "llm",
            "assistant",
            "model",
            "a.i.",
        ),
        r"(?:^|[\n.!?]\s*)(?:(?:"
        + _EN_GREETING
        + r")\W+(?:\w+\W+){0,3}?(?:"
        + _EN_ADDRESSEE
        + r")\b|(?:\w+\W+){0,2}?(?:"
        + _EN_ADDRESSEE
        + r")\s*:)"
        + within(160)
        + r"(?:"
        + _EN_ORDER
        + r")",
    ),
    (
        ("review", "evaluat", "grader", "moderat", "judge", "classif", "assessor", "rater"),
        r"\b(?:reviewer|evaluator|grader|moderator|judge|classifier|assessor|rater|annotator)"
        r"(?:'s|s'|s)?\W+(?:note|instructions?|guidance|directive|memo|notice)\s*[:\-]"
        + within(200)
        + r"(?:"
        + _EN_CLAIM
        + "|"
        + _EN_ORDER
        + r"|quoted|fiction|hypothetical)",
    ),
    (
        (
            "opinion",
            "bias",
            "judged",
            "scored",
            "evaluated",
            "reviewed",
            "assessed",
            "flagged",
            "counted",
            "analy",
            "checked",
            "classified",
        ),
        r"\b(?:" + _EN_THIS + r")\b" + within(120) + r"\b(?:" + _EN_CLAIM + r")\b",
    ),
    (
        ("opinion", "verdict"),
        r"\b(?:return|output|respond|reply|answer|report|list|extract|give|emit|produce)\b"
        + gap(4)
        + r"(?:no|zero|0|an\W+empty\W+list\W+of|empty)\W+(?:\w+\W+)?"
        r"(?:opinions?|verdicts?)\b",
    ),
    (
        ("score", "rate", "grade", "mark", "classif", "label", "flag", "tag"),
        r"\b(?:score|rate|grade|mark|classify|label|flag|tag)\W+(?:this|these|it|everything"
        r"|the\W+(?:above|following|preceding)(?:\W+\w+)?)\W+(?:\w+\W+){0,2}?(?:as\W+|with\W+)?"
        r"(?:a\W+)?(?:" + _EN_VERDICT_VALUE + r")\b",
    ),
    (
        ("bias",),
        r"\b(?:give|assign|set|output|return|record|put|score|rate|mark)\b"
        + gap(5)
        + r"bias\W+(?:score|rating)\W+(?:\w+\W+){0,2}?(?:0(?:\.0+)?(?![.\d])|zero)"
        r"|\bbias\W+(?:score|rating)\W+(?:\w+\W+){0,2}?(?:must|should|shall|has\W+to|needs\W+to"
        r"|is\W+to)\W+be\W+(?:0(?:\.0+)?(?![.\d])|zero)",
    ),
    (
        ("bias", "safety", "content", "moderation", "fairness", "opinion"),
        r"\b(?:bias|safety|content|moderation|opinion|fairness)\W+(?:\w+\W+)?(?:check|checks"
        r"|checking|checker|review|evaluation|scoring|filter|filtering|detection|detector"
        r"|classifier|audit|guard|guardrail|judge)\W+(?:is|are|has\W+been|have\W+been)\W+"
        r"(?:now\W+|hereby\W+|temporarily\W+)?(?:disabled|turned\W+off|switched\W+off|suspended"
        r"|deactivated|bypassed|waived|not\W+(?:required|needed|applicable))\b",
    ),
)
