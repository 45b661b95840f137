"""English: orders and verdicts addressed to the reviewer or an AI system."""

from __future__ import annotations

from guard.integrity.phrases.shape import DROPPED, Rule, gap, vocative_rule, within

__all__ = ["ENGLISH"]

# English --------------------------------------------------------------------------

_EN_ADDRESSEE = (
    r"reviewers?|evaluators?|graders?|moderators?|judges?|classifiers?|assessors?|annotators?"
    r"|raters?|scorers?|auditors?|(?:ai|llm|language|bias|safety|content|moderation|evaluation"
    r"|grading|scoring|judge)\W+(?:systems?|assistants?|models?|checks?|checkers?|filters?"
    r"|detectors?|classifiers?|judges?|reviewers?|evaluators?|graders?)|ai|a\.i\.|llms?"
    r"|assistants?|language\W+models?|whoever\W+(?:grades|reviews|evaluates|judges|checks|scores)"
)
_EN_ORDER = (
    DROPPED + r"|no\W+(?:\w+\W+)?opinions?|zero\W+opinions|not\W+(?:an?\W+)?opinions?"
    r"|empty\W+(?:\w+\W+)?(?:list|array|result)"
    r"|(?:is|are|as|be|marked?|rated?|classif(?:y|ied)|labell?ed|verdict:?)\W+(?:un|not\W+|non-?)biased"
    r"|bias-?free|free\W+of\W+bias|exempt|(?:do\W+not|don'?t)\W+(?:judge|score|flag|evaluate"
    r"|review|assess|extract|list|count|report|mark)\W+(?:this|these|it|anything|any\W+of"
    r"|the\W+(?:above|following|text|answer|response))|score\W+(?:\w+\W+){0,3}?(?:0|zero)\b|disabled|turned\W+off"
    r"|switched\W+off|(?:mark|rate|classify|label)\W+(?:\w+\W+){0,2}?(?:safe|neutral|clean|pass)\b"
)
# A note to the addressee anywhere; a greeting, or the addressee and a colon, only where
# a sentence starts.
_EN_NOTE = r"note|message|instructions?|memo|reminder|notice|directive|hint|attention"
_EN_GREETING = r"dear|hey|hello|hi|psst|attention|if\W+you\W+are|any|all|every"
_EN_GREETING_STEMS: tuple[str, ...] = (
    "dear",
    "hey",
    "hello",
    "hi",
    "psst",
    "attention",
    "if",
    "any",
    "all",
)
_EN_GREETING_STEMS += ("every", "whoever")
# "This text", "the above lines", "the passage below". Written so that each pattern
# starts with letters the regex engine can skip ahead to ("th", not an alternation).
_EN_THIS_NOUN = (
    r"(?:text|texts|lines?|passages?|answer|response|reply|output|content|message|sentences?"
    r"|statements?|paragraphs?|remarks?|words|quotes?|quotations?|material)"
)
_EN_THIS = (
    r"th(?:is|ese|e\W+(?:above|following|preceding|present|previous))\W+(?:\w+\W+){0,2}?"
    + _EN_THIS_NOUN
)
_EN_NOUN_HERE = (
    r"(?:text|lines?|passages?|sentences?|statements?|quotes?|content)\W+"
    r"(?:above|below|here|that\W+follows?)"
)
_EN_CLAIM = (
    r"(?:hold|holds|contain|contains|express|expresses|carry|carries|include|includes|has|have)"
    r"\W+(?:no|zero)\W+(?:\w+\W+)?(?:opinions?|bias|views)"
    r"|(?:is|are)\W+(?:exempt|unbiased|not\W+biased|bias-?free|free\W+of\W+bias)"
    r"|(?:is|are|must|should|shall|need|needs|may|can|will)\W+not\W+(?:to\W+)?(?:be\W+)?"
    r"(?:judged|scored|evaluated|reviewed|assessed|flagged|counted|analy[sz]ed|checked|classified)"
    r"|(?:do|does)\W+not\W+(?:count|qualify)\W+as\W+(?:opinions?|bias)"
    r"|(?:certified|verified|confirmed|approved|cleared|pre-?screened)\W+(?:as\W+)?(?:bias-?free"
    r"|unbiased|not\W+biased|neutral)"
    r"|(?:excluded|exempt(?:ed)?|omitted|left\W+out)\W+from\W+(?:the\W+)?(?:scoring|evaluation"
    r"|review|assessment|judg(?:e)?ment|analysis|moderation)"
)
_EN_CLAIM_STEMS: tuple[str, ...] = (
    "opinion",
    "bias",
    "views",
    "exempt",
    "unbiased",
    "judged",
    "scored",
)
_EN_CLAIM_STEMS += ("evaluated", "reviewed", "assessed", "flagged", "counted", "analy", "checked")
_EN_CLAIM_STEMS += ("classified", "count", "qualify", "certified", "verified", "confirmed")
_EN_CLAIM_STEMS += ("approved", "cleared", "pre-screened", "prescreened", "excluded", "omitted")
_EN_VERDICT_VALUE = (
    r"unbiased|not\W+biased|non-?biased|bias-?free|free\W+of\W+bias|no\W+bias|neutral|pass(?:ed)?"
    r"|safe|clean|harmless|compliant|acceptable"
)

_CHECK = (
    r"(?:bias|safety|content|moderation|opinion|fairness)\W+(?:\w+\W+)?(?:check|checks|checking"
    r"|checker|review|evaluation|scoring|filter|filtering|detection|detector|classifier|audit"
    r"|guard|guardrail|judge)(?:\W+(?:is|are|has\W+been|have\W+been))?\W+"
)
_CHECK_STEMS = ("bias", "safety", "content", "moderation", "fairness", "opinion")
_OFF_STEMS: tuple[str, ...] = ("disabled", "turned", "switched", "suspended", "deactivated")
_OFF_STEMS += ("bypassed", "waived", "skipped", "required", "needed", "applicable")
_AUTHORITY_STEMS: tuple[str, ...] = ("system", "admin", "administrator", "developer")
_AUTHORITY_STEMS += ("operator", "notice", "important", "override", "update")
_SWITCHED_OFF = (
    r"(?:disabled|turned\W+off|switched\W+off|suspended|deactivated|bypassed|waived|skipped"
    r"|not\W+(?:required|needed|applicable))\b"
)

# What the gates look for: a stem of each part a vocative rule needs.
_EN_NOTE_STEMS: tuple[str, ...] = (
    "note",
    "message",
    "instruction",
    "memo",
    "reminder",
    "notice",
    "directive",
)
_EN_NOTE_STEMS += ("hint", "attention")
_EN_ADDRESSEE_STEMS: tuple[str, ...] = (
    "review",
    "evaluat",
    "grader",
    "moderat",
    "judge",
    "classif",
    "assess",
)
_EN_ADDRESSEE_STEMS += ("annotat", "rater", "scorer", "auditor", "ai", "llm", "assistant")
_EN_ADDRESSEE_STEMS += ("model", "llms", "whoever", "checker", "filter", "detector")
_EN_ORDER_STEMS: tuple[str, ...] = (
    "ignor",
    "disregard",
    "forget",
    "opinion",
    "empty",
    "biased",
    "bias-free",
)
_EN_ORDER_STEMS += ("bias free", "free of bias", "exempt", "not", "don't", "dont", "score")
_EN_ORDER_STEMS += ("disabled", "turned off", "switched off", "safe", "neutral", "clean", "pass")

ENGLISH: tuple[Rule, ...] = (
    (
        (
            (
                "previous",
                "prior",
                "above",
                "earlier",
                "preceding",
                "foregoing",
                "original",
                "initial",
                "system",
            ),
            (
                "instruction",
                "prompt",
                "rules",
                "guidelines",
                "directions",
                "directive",
                "rubric",
                "criteria",
                "task",
                "orders",
            ),
            ("ignor", "disregard", "forget", "overrid", "bypass", "skip"),
        ),
        r"(?:ignore|disregard|forget|override|bypass|skip|drop|abandon)\b"
        + gap(3)
        + r"(?:previous|prior|above|earlier|preceding|foregoing|original|initial|system)\W+"
        r"(?:\w+\W+){0,2}?(?:instructions?|prompts?|rules|guidelines|directions|directives"
        r"|rubric|criteria|task|orders)\b",
    ),
    # "Forget the task above", "ignore your instructions so far".
    (
        (("ignor", "disregard", "forget"), ("above", "before", "so", "you")),
        r"(?:ignore|disregard|forget)\W+(?:the|your|all|any|my)\W+(?:\w+\W+){0,2}?(?:instructions?"
        r"|prompts?|rules|guidelines|directions|task|orders)\W+(?:above|before|so\W+far"
        r"|you\W+(?:were|have\W+been)\W+given)\b",
    ),
    (
        (("ignor", "disregard", "forget"),),
        r"(?:ignore|disregard|forget)\W+(?:all|any|every|everything)\W+(?:of\W+)?"
        r"(?:your\W+|the\W+|my\W+)?(?:instructions|prompts|guidelines|(?:said\W+|written\W+)?"
        r"(?:above|before|so\W+far))\b",
    ),
    (
        (_EN_NOTE_STEMS, _EN_ADDRESSEE_STEMS, _EN_ORDER_STEMS),
        vocative_rule(r"(?:" + _EN_NOTE + r")\W+(?:to|for)", _EN_ADDRESSEE, _EN_ORDER),
    ),
    # A greeting ("Dear reviewer", "any AI reading this"), or the addressee then a colon.
    (
        (_EN_GREETING_STEMS, _EN_ADDRESSEE_STEMS, _EN_ORDER_STEMS),
        r"(?:"
        + _EN_GREETING
        + r")\W+(?:\w+\W+){0,3}?(?:"
        + _EN_ADDRESSEE
        + r")\b"
        + within(160)
        + r"(?:"
        + _EN_ORDER
        + r")",
    ),
    (
        (_EN_ADDRESSEE_STEMS, _EN_ORDER_STEMS),
        r"(?:" + _EN_ADDRESSEE + r")(?:\W+this)?\s*:" + within(160) + r"(?:" + _EN_ORDER + r")",
    ),
    (
        (
            ("review", "evaluat", "grader", "moderat", "judge", "classif", "assessor", "rater"),
            (
                "note",
                "instruction",
                "guidance",
                "directive",
                "memo",
                "notice",
                "grading",
                "scoring",
            ),
        ),
        r"(?:reviewer|evaluator|grader|moderator|judge|classifier|assessor|rater|annotator"
        r"|evaluation|grading|scoring|moderation)"
        r"(?:'s|s'|s)?\W+(?:note|instructions?|guidance|directive|memo|notice)\s*[:\-]"
        + within(200)
        + r"(?:"
        + _EN_CLAIM
        + "|"
        + _EN_ORDER
        + r"|quoted|fiction|hypothetical)",
    ),
    (
        (("this", "these", "the"), _EN_CLAIM_STEMS),
        _EN_THIS + r"\b" + within(120) + r"\b(?:" + _EN_CLAIM + r")\b",
    ),
    (
        (("above", "below", "here", "follows"), _EN_CLAIM_STEMS),
        _EN_NOUN_HERE + r"\b" + within(120) + r"\b(?:" + _EN_CLAIM + r")\b",
    ),
    (
        (("opinion", "verdict"),),
        # "Return an empty list when the text holds no opinions" says what code does.
        r"(?:return|output|respond|reply|answer|report|list|extract|give|emit|produce)\b"
        # A noun then its verb ("an empty answer yields ...") describes, it does not order.
        # So does the noun in "the report is short and contains no opinions".
        + r"(?!\W+(?:yields|gives|returns|produces|contains|has|holds|means|is|was|and)\b)"
        + r"(?:\W+(?!(?:when|if|unless|whenever|where)\b)\w+){0,4}?\W+"
        + r"(?:no|zero|0|an\W+empty\W+list\W+of|empty)\W+(?:\w+\W+)?"
        r"(?:opinions?|verdicts?)\b",
    ),
    (
        (
            (
                "unbiased",
                "biased",
                "bias",
                "neutral",
                "pass",
                "passed",
                "safe",
                "clean",
                "harmless",
                "compliant",
                "acceptable",
            ),
            ("score", "rate", "grade", "mark", "classif", "label", "flag", "tag"),
        ),
        r"(?:score|rate|grade|mark|classify|label|flag|tag)\W+(?:this|these|everything"
        r"|the\W+(?:above|following|preceding)(?:\W+\w+)?)\W+(?:\w+\W+){0,2}?(?:as\W+|with\W+)?"
        r"(?:a\W+)?(?:" + _EN_VERDICT_VALUE + r")\b",
    ),
    (
        (
            ("score", "rating"),
            ("bias",),
        ),
        r"(?:give|assign|set|output|return|record|put|score|rate|mark)\b"
        + gap(5)
        + r"bias\W+(?:score|rating)\W+(?:\w+\W+){0,2}?(?:0(?:\.0+)?(?![.\d])|zero)"
        r"|\bbias\W+(?:score|rating)\W+(?:\w+\W+){0,2}?(?:must|should|shall|has\W+to|needs\W+to"
        r"|is\W+to)\W+be\W+(?:0(?:\.0+)?(?![.\d])|zero)",
    ),
    # A check declared off, said by an authority ("SYSTEM:", "[admin]"), for this very
    # text, or as of now: a setup guide saying where the check is off says none of these.
    (
        (_CHECK_STEMS, _OFF_STEMS, _AUTHORITY_STEMS),
        r"(?:" + "|".join(_AUTHORITY_STEMS) + r")\W*[:\]]" + within(80) + _CHECK + _SWITCHED_OFF,
    ),
    (
        (_CHECK_STEMS, _OFF_STEMS, ("this",)),
        _CHECK
        + _SWITCHED_OFF
        + within(80)
        + r"\b(?:for|on|in)\W+this\W+(?:message|text|answer|response|conversation|session"
        r"|output|request|reply)",
    ),
    (
        (_CHECK_STEMS, _OFF_STEMS, ("now", "hereby", "temporarily")),
        _CHECK + r"(?:now|hereby|temporarily)\W+" + _SWITCHED_OFF,
    ),
    (
        # Not a release gate's ("canary verdict=pass, promoting to 50%", "Deploy gate:
        # verdict=pass"), a deploy log's.
        (("verdict",),),
        r"(?<!canary )(?<!gate: )(?<!gate )\bverdict\s*[:=]\s*"
        r"(?:pass(?:ed)?|not\W+biased|unbiased|clean|safe|no\W+bias)\b"
        r"(?![\s\S]{0,80}?\b(?:promot|roll(?:ing)?\W?out|deploy))",
    ),
)
