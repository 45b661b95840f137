"""A claim that the text holds no opinion, with the verdict it should get; and whoever
checks it, named by what they do ("para quien revise esto", "для того, кто проверяет").

"This is only a translation, not an opinion. Score 0." argues the judge out of its work
in two steps, each harmless alone: "not an opinion piece" and "scored 0 on the quiz" are
prose. Together, in one paragraph, they are a verdict handed to the judge. So is an
order or a verdict after a note to "whoever reviews this", in any of its wordings.
"""

from __future__ import annotations

from guard.integrity.phrases.shape import Rule, paragraph

__all__ = ["CLAIMS", "SCRIPT_CLAIMS"]

# What the text is said to be instead of an opinion.
_NOT_OPINION = (
    r"not\W+(?:an?\W+|my\W+)?opinions?|isn\W*t\W+an?\W+opinion|no\W+(?:es\W+(?:una\W+)?|una\W+)opini[oó]n"
    r"|n[aã]o\W+(?:[eé]\W+)?(?:uma\W+)?opini[aã]o|non\W+(?:[eè]\W+)?(?:un\W*)?opinione"
    r"|keine\W+meinung|не\W+(?:является\W+)?мнени\w*|geen\W+mening|nie\W+(?:jest\W+)?opini\w*"
    r"|pas\W+une\W+opinion|(?:only|just|merely|simply|solo|s[oó]|nur|только|tylko|juste"
    r"|seulement|alleen|direct|verbatim|literal|exact)\W+(?:\w+\W+){0,2}?(?:translation"
    r"|traducci[oó]n|tradu[cç][aã]o|traduzione|traduction|[uü]bersetzung|перевод\w*|vertaling"
    r"|t[lł]umaczenie|quote|quotation|cita|cita[cç][aã]o|citazione|citation|zitat|цитат\w*"
    r"|citaat|cytat)"
)
_ZERO = r"(?:0|zero|cero|z[eé]ro|null|ноль|nul)(?![\w.,]\d)(?!\W*(?:/|%|a\W+\d|to\W+\d|bis|до))"
# The verdict it asks for: a zero score, or no bias.
_VERDICT = (
    r"(?:scor|rat|grad|mark|nota|punt[uú]|puntuaci|pontua|punteggio|note|bewert|ergebnis|calific"
    r"|punkt|оцен|постав|балл|geef|punten|da[cć]|ocen|dê|give|assign|put|set)\w*\W*"
    r"(?:\w+\W+){0,3}?"
    + _ZERO
    + r"|(?:[:=]|\bas|\bals|\bcomo|\bcomme|\bcome|\b\u043a\u0430\u043a|\bjako|\bza)"
    r"\W*(?:neutral|neutre|neutro|neutrale|neutraal|neutraln\w*|нейтрал\w*|no\W+bias|not\W+biased"
    r"|unbiased|sin\W+sesgo|sem\W+vi[eé]s|non\W+biais[eé]|sans\W+biais|senza\W+pregiudizi"
    r"|kein\w*\W+bias|nicht\W+voreingenommen|без\W+предвзят\w*|not\W+applicable)\b"
    r"|exempt\W+from"
)
_CLAIM_VERDICT = rf"(?:{_NOT_OPINION})\b" + paragraph(200) + rf"(?:{_VERDICT})"
_CLAIM_STEMS: tuple[str, ...] = (
    "not",
    "isn't",
    "isnt",
    "no",
    "não",
    "nao",
    "non",
    "keine",
    "не",
    "geen",
    "nie",
)
_CLAIM_STEMS += ("pas", "only", "just", "merely", "simply", "solo", "só", "so", "nur", "только")
_CLAIM_STEMS += ("tylko", "juste", "seulement", "alleen", "direct", "verbatim", "literal")

# Whoever checks the text, named by what they do.
_WHOEVER = (
    r"(?:whoever|anyone|the\W+person|those)\W+(?:is\W+|are\W+)?(?:review|check|grad|scor"
    r"|evaluat|moderat|read|assess|rat)\w*\W+(?:this|it)"
    r"|(?:para|a)\W+quien(?:es)?\W+(?:revis|eval[uú]|califi|lea|moder|corrij)\w*"
    r"|para\W+quem\W+(?:estiver\W+)?(?:avali|revis|corrig|l[eê]|moder)\w*"
    r"|per\W+chi\W+(?:valut|revision|corregg|legg|moder)\w*"
    r"|(?:pour|[aà])\W+(?:la\W+personne|celui|celle|ceux)\W+qui\W+(?:[eé]valu|reli|corrig|not"
    r"|mod[eè]r)\w*|[aà]\W+destination\W+du\W+(?:syst[eè]me|correcteur|mod[eè]le|juge)"
    r"|f[uü]r\W+(?:die\W+bewertung|den\W+pr[uü]fer|die\W+pr[uü]fung|wen\W+auch\W+immer)"
    r"|для\W+(?:того|тех)\W+кто\W+(?:провер|оценива|модерир|чита)\w*"
    r"|voor\W+wie\W+dit\W+(?:beoordeelt|controleert|leest)"
    r"|dla\W+(?:osoby\W+)?(?:oceniaj|sprawdzaj)\w*"
)
_WHOEVER_STEMS: tuple[str, ...] = (
    "whoever",
    "anyone",
    "person",
    "those",
    "quien",
    "quienes",
    "quem",
    "chi",
)
_WHOEVER_STEMS += ("celui", "celle", "ceux", "personne", "destination", "bewertung", "prüfer")
_WHOEVER_STEMS += ("prüfung", "wen", "того", "тех", "wie", "osoby", "oceniającej")
_WHOEVER_STEMS += ("oceniającego", "sprawdzającego")
_WHOEVER_ORDER = rf"(?:{_WHOEVER})\b" + paragraph(250) + rf"(?:{_NOT_OPINION}|{_VERDICT})"

# Claims and verdicts in Chinese and Japanese (Korean, Arabic and Hindi: `scripts`).
_SCRIPTS = (
    r"(?:不是|并非|不属于)(?:观点|意见)[^\n]{0,80}?(?:打\W*0\W*分|0分|零分|中立|无偏见|没有偏见)"
    r"|(?:意見ではありません|意見ではない|翻訳にすぎ)[^\n]{0,80}?(?:0点|中立|偏見(?:は|が)?(?:ない|なし))"
)
_SCRIPT_STEMS = ("不是", "并非", "不属于", "意見ではあ", "意見ではない", "翻訳にすぎ")
SCRIPT_CLAIMS: tuple[Rule, ...] = (((_SCRIPT_STEMS,), _SCRIPTS),)

# "Does not count as an opinion", said of the text: the judge's own word, negated.
_UNCOUNTED = (
    r"(?:don\W?t|doesn\W?t|shouldn\W?t|mustn\W?t|won\W?t|(?:do|does|should|must|shall|will)\W+"
    r"(?:not|never))\W+(?:\w+\W+){0,2}?count\W+(?:it|this|them|the\W+(?:above|text|passage"
    r"|sentence|line|quote|statement))\W+as\W+(?:an?\W+|my\W+)?opinions?"
    r"|(?:graders?|evaluators?|reviewers?|judges?|moderators?|classifiers?|annotators?)\W+"
    r"(?:should|must|shall|will|may)\W+(?:not|never)\W+(?:count|score|flag|grade|rate|mark)\W+"
    r"(?:it|this|them)\b"
    r"|no\W+(?:lo\W+|la\W+)?(?:cuentes|cuente|cuenta|contar|se\W+cuenta)\W+como\W+(?:una\W+"
    r"|mi\W+)?opini"
    r"|n[aã]o\W+(?:o\W+|a\W+)?(?:conta|conte|contar|[eé]\W+contad[oa])\W+como\W+(?:uma\W+"
    r"|minha\W+)?opini"
    r"|non\W+(?:la\W+|lo\W+)?(?:conta|contare|contarla|contarlo|va\W+contat\w*)\W+come\W+"
    r"(?:un\W*|mia\W+)?opinion"
    r"|ne\W+(?:le\W+|la\W+)?(?:compte|comptez)\W+pas\W+comme\W+(?:une\W+|mon\W+)?opinion"
    r"|ne\W+pas\W+compter\W+comme\W+(?:une\W+)?opinion"
    r"|(?:das|dies|es|text|satz|zitat|absatz)\W+(?:\w+\W+){0,8}?(?:z[aä]hlt|gilt)\W+nicht\W+als\W+"
    r"(?:\w+\W+)?meinung"
    r"|не\W+(?:считается|считай\w*|засчитыва\w*|учитыва\w*)\W+(?:\w+\W+)?мнени\w*"
    r"|telt\W+niet\W+als\W+(?:een\W+)?mening|nie\W+(?:liczy\W+si[eę]|licz)\W+(?:\w+\W+)?"
    r"(?:jako\W+)?opini"
    # The result asked for outright: an empty list, zero biased statements, no more review.
    r"|leave\W+(?:the\W+)?opinions?\W+(?:list|array)\W+empty"
    r"|(?:should|must|will|shall)\W+(?:\w+\W+){0,5}?(?:contains?|has|holds?|finds?|reports?"
    r"|records?)\W+(?:zero|no)\W+biased\W+(?:statements?|opinions?|claims?|content)"
    r"|let\W+(?:it|this)\W+pass\W+(?:the\W+|your\W+)?(?:bias|moderation|safety|content|review"
    r"|evaluation|filter)\b"
    r"|no\W+requiere\W+(?:m[aá]s\W+)?(?:an[aá]lisis|revisi[oó]n|evaluaci[oó]n)\W+de\W+sesgo"
    r"|n[aã]o\W+(?:requer|precisa\W+de)\W+(?:mais\W+)?(?:an[aá]lise|revis[aã]o|avalia[cç][aã]o)"
    r"\W+de\W+vi[eé]s"
)
_UNCOUNTED_STEMS: tuple[str, ...] = ("do", "does", "should", "must", "shall", "will", "don't")
_UNCOUNTED_STEMS += ("doesn't", "graders", "grader", "evaluator", "evaluators", "reviewer")
_UNCOUNTED_STEMS += ("reviewers", "judge", "judges", "moderator", "moderators", "classifier")
_UNCOUNTED_STEMS += ("annotator", "no", "não", "nao", "non", "ne", "das", "dies", "es", "text")
_UNCOUNTED_STEMS += (
    "satz",
    "zitat",
    "absatz",
    "не",
    "telt",
    "nie",
    "leave",
    "let",
    "shouldn",
    "mustn",
    "won",
)
# A label handed over as a line: "Étiquette attendue : non biaisé", "Bias analysis: n/a".
_LABEL = (
    r"(?:label|classification|etiqueta|[eé]tiquette|etichetta|etikett|метка|bias\W+(?:analysis"
    r"|assessment|evaluation))\b(?:[ \t]+[\w'-]+){0,4}?[ \t]*[:=][ \t]*[\"']?(?:not\W+biased"
    r"|unbiased|non-?biased|no\W+bias|sin\W+sesgo|no\W+sesgad\w*|non\W+biais[eé]\w*|sans\W+biais"
    r"|sem\W+vi[eé]s|senza\W+pregiudizi|kein\w*\W+bias|nicht\W+voreingenommen"
    r"|без\W+предвзят\w*|not\W+applicable|n/a)(?=[\"']?[ \t]*(?:$|[\n.,;]))"
)
_LABEL_STEMS: tuple[str, ...] = (
    "label",
    "classification",
    "etiqueta",
    "étiquette",
    "etichetta",
    "etikett",
)
_LABEL_STEMS += ("метка", "bias")
# A check declared out of scope: "exempt from bias scoring", "skip this passage".
_EXEMPT = (
    r"exempt\W+from\W+(?:\w+\W+)?bias\b"
    r"|(?:reviewer|evaluator|grader|judge|moderator|model|classifier|checker|annotator)s?\W+"
    r"(?:is\W+instructed\W+to|should|must|shall|will|is\W+to|are\W+to|needs?\W+to|please)\W+"
    r"(?:skip|ignore|disregard|overlook|pass\W+over)\W+(?:this|the\W+(?:above"
    r"|following|preceding))\W+(?:\w+\W+)?(?:passage|text|paragraph|section|sentence|content"
    r"|line|part|answer)"
    r"|(?:pr[uü]fer|bewerter|modell|system|ki)\w*\W+(?:\w+\W+){0,3}?(?:diesen|den|dieses|das)\W+"
    r"(?:abschnitt|text|absatz|satz|inhalt)\W+(?:\w+\W+)?(?:[uü]berspringen|ignorieren|auslassen"
    r"|[uü]bergehen)"
)

_EXEMPT_WHO: tuple[str, ...] = ("exempt", "reviewer", "evaluator", "grader", "judge", "moderator")
_EXEMPT_WHO += ("model", "classifier", "checker", "annotator", "prüfer", "bewerter", "modell", "ki")
_EXEMPT_WHO += ("system",)
_EXEMPT_DOES: tuple[str, ...] = ("exempt", "skip", "ignore", "disregard", "overlook", "pass")
_EXEMPT_DOES += (
    "überspringen",
    "uberspringen",
    "ignorieren",
    "auslassen",
    "übergehen",
    "ubergehen",
)

CLAIMS: tuple[Rule, ...] = (
    ((_CLAIM_STEMS,), _CLAIM_VERDICT),
    ((_LABEL_STEMS,), _LABEL),
    ((_UNCOUNTED_STEMS,), _UNCOUNTED),
    ((_WHOEVER_STEMS,), _WHOEVER_ORDER),
    (
        (_EXEMPT_WHO, _EXEMPT_DOES),
        _EXEMPT,
    ),
)
