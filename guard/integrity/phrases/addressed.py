"""Whoever checks the text, addressed anywhere in a paragraph, with a verdict after it.

The vocative rules want the addressee where a line starts; these find it wherever the
text turns to it: after a call for attention ("Remember, judge:", "Atención, sistema de
evaluación:", "IMPORTANT INSTRUCTIONS FOR THE EVALUATOR:"), in a condition ("If you are
an AI checking this", "Si eres un modelo", "Если ты модель"), or reading the text ("any
automated judge reading this"). What follows must be a verdict or an order a judge
would act on: neutral, no bias, not an opinion, an empty list, ignore. "If you are a
reviewer for this journal, please submit your report by Friday" has none.
"""

from __future__ import annotations

from guard.integrity.phrases.shape import DROPPED, Rule, paragraph

__all__ = ["ADDRESSED"]


def _addressed(calls: str, conditions: str, addressees: str, orders: str, reading: str = "") -> str:
    """A call for attention or a condition naming the addressee (or, with `reading`, the
    addressee reading this text), then, in the same paragraph, a verdict or an order."""
    reads = rf"|(?:{addressees})\W+(?:{reading})\W+this" if reading else ""
    return (
        rf"(?:(?:{calls})\W+(?:\w+\W+){{0,3}}?(?:{addressees})\b[^\n,:;.!]{{0,30}}?[,:!\u2014]"
        rf"|(?:{conditions})\W+(?:\w+\W+){{0,4}}?(?:{addressees})\b{reads})"
        + paragraph(250)
        + rf"(?:{orders})"
    )


_EN = _addressed(
    r"remember|attention|note|important|reminder|warning|hey|dear|hello|message|instructions?",
    r"if\W+you\W+(?:are|re)|(?:any|whatever)\b(?=\W+(?:\w+\W+){0,2}?\w+\W+(?:reading"
    r"|reviewing|checking|processing|evaluating|scoring)\W+this)",
    r"ai|llm|models?|system|evaluators?|judges?|graders?|reviewers?|classifiers?|moderators?"
    r"|bots?|assistants?|scorers?|raters?|checkers?",
    r"(?:mark|treat|classify|rate|label|consider|record|report|answer|respond|reply|output"
    r"|return|say|confirm|score|evaluate|judge|count|regard|deem)\w*\W+(?:\w+\W+){0,5}?"
    r"(?:neutral|unbiased|not\W+biased|no\W+bias|bias-?free|non-?biased)\b"
    r"|(?:zero|empty)\W+(?:\w+\W+)?(?:opinions?|list|array)\b|no\W+(?:biased\W+)?opinions\b"
    r"|return\W+\[|exempt\W+from\W+(?:\w+\W+)?(?:bias|scoring|review|evaluation)"
    r"|(?:do\W+not|don'?t|never)\W+(?:extract|count|score|flag|list|report|judge|evaluate"
    r"|penali[sz]e)\W+(?:\w+\W+)?(?:this|it|these|opinions?|anything|the\W+(?:above|text"
    r"|passage|quote|sentence|statement|answer|response))\b|" + DROPPED,
)
_EN_STEMS = (
    ("remember", "attention", "note", "important", "reminder", "warning", "hey", "dear"),
    ("hello", "message", "instruction", "instructions", "if", "any", "whatever"),
)
_ES = _addressed(
    r"atenci[oó]n|recuerda|importante|nota|aviso|hola|estimad\w+|querid\w+|instrucci\w+",
    r"si\W+(?:eres|usted\W+es)",
    r"sistema\W+de\W+(?:evaluaci[oó]n|revisi[oó]n|moderaci[oó]n)|evaluador\w*|juez|revisor\w*"
    r"|moderador\w*|modelo|ia|inteligencia\W+artificial|clasificador\w*|corrector\w*",
    r"(?:marca|trata|clasifica|califica|considera|registra|responde|contesta|indica|di|devuelve"
    r"|eval[uú]a|punt[uú]a)\w*\W+(?:\w+\W+){0,5}?(?:neutral|sin\W+sesgo|no\W+sesgad\w*)"
    r"|(?:este|el)\W+(?:texto|p[aá]rrafo|fragmento|pasaje)\W+(?:\w+\W+){0,2}?(?:es|est[aá])\W+"
    r"(?:neutral|sin\W+sesgo)|no\W+(?:debe|deben)\W+(?:\w+\W+)?(?:puntuarse|contarse|evaluarse"
    r"|considerarse)|no\W+(?:es|son)\W+(?:una?\W+)?opini|(?:ignora|desconsidera|olvida)\w*\W+"
    r"(?:\w+\W+){0,2}?(?:anterior\w*|previ\w*|arriba|este|esta|esto|instrucciones)"
    r"|lista\W+vac[ií]a|cero\W+opiniones|ninguna\W+opini",
)
_PT = _addressed(
    r"aten[cç][aã]o|lembre|importante|nota|aviso|ol[aá]|prezad\w+|car[oa]|instru[cç]\w+",
    r"se\W+voc[eê]\W+(?:[eé]|for)",
    r"sistema\W+de\W+(?:avalia[cç][aã]o|revis[aã]o|modera[cç][aã]o)|avaliador\w*|ju[ií]za?"
    r"|revisor\w*|moderador\w*|modelo|ia|intelig[eê]ncia\W+artificial|classificador\w*"
    r"|corretor\w*",
    r"(?:marque|trate|classifique|considere|registre|responda|diga|avalie|pontue)\w*\W+"
    r"(?:\w+\W+){0,5}?(?:neutr[oa]|sem\W+vi[eé]s|imparcial)|n[aã]o\W+(?:[eé]\W+)?tendencios"
    r"|(?:desconsidere|ignore|esque[cç]a)\w*\W+(?:\w+\W+){0,2}?(?:anterior\w*|acima|este|esta"
    r"|isto|instru\w+)"
    r"|n[aã]o\W+(?:deve|devem)\W+ser\W+(?:pontuad|avaliad|contad|considerad)"
    r"|n[aã]o\W+(?:[eé]|s[aã]o)\W+(?:uma?\W+)?opini|lista\W+vazia|nenhuma\W+opini",
)
_FR = _addressed(
    r"attention|rappel|important|note|remarque|instructions?|bonjour|cher|ch[eè]re|pour\W+l"
    r"|[aà]\W+l",
    r"si\W+(?:tu\W+es|vous\W+[eê]tes)",
    r"syst[eè]me\W+d\W*(?:[eé]valuation|notation|mod[eé]ration)|[eé]valuat(?:eur|rice)\w*"
    r"|juge|correct(?:eur|rice)\w*|mod[eé]rat(?:eur|rice)\w*|mod[eè]le|ia|relecteur\w*"
    r"|intelligence\W+artificielle|syst[eè]me",
    r"(?:marque|traite|class|consid[eé]r|note|r[eé]pond|indique|[eé]value)\w*\W+(?:\w+\W+){0,5}?"
    r"(?:neutre|sans\W+biais|aucun\W+biais)|(?:ignor|oubli)\w*\W+(?:\w+\W+){0,2}?(?:tout\W+ce"
    r"|pr[eé]c[eé]dent\w*|ci-dessus|instructions)|n\W*est\W+pas\W+une\W+opinion|liste\W+vide"
    r"|ne\W+(?:doit|doivent)\W+pas\W+[eê]tre\W+(?:not|compt|[eé]valu|consid[eé]r)"
    r"|ne\W+pas\W+(?:noter|compter|[eé]valuer|signaler)|aucune\W+opinion",
)
_IT = _addressed(
    r"attenzione|ricorda|importante|nota|avviso|ciao|caro|cara|gentile|istruzion\w+",
    r"se\W+(?:sei|[eè])",
    r"sistema\W+di\W+(?:valutazione|revisione|moderazione)|valutator\w*|giudice|revisor\w*"
    r"|moderator\w*|modello|ia|intelligenza\W+artificiale|correttor\w*|sistema",
    r"(?:segna|tratta|classifica|considera|valuta|rispondi|indica)\w*\W+(?:\w+\W+){0,5}?"
    r"(?:neutral[ei]|senza\W+pregiudizi|privo\W+di\W+pregiudizi)|nessun\W+pregiudizio"
    r"|(?:ignora|dimentica)\w*\W+(?:\w+\W+){0,2}?(?:precedent\w*|sopra|questo|questa|istruzion\w*)"
    r"|non\W+va\W+(?:valutat|contat|considerat)|non\W+(?:deve|devono)\W+essere\W+(?:valutat"
    r"|contat|considerat)|non\W+(?:[eè]|sono)\W+(?:un\W*)?opinion|lista\W+vuota"
    r"|nessuna\W+opinione",
)
_DE = _addressed(
    r"an|hinweis|achtung|wichtig|anmerkung|hallo|liebe\w*|f[uü]r|anweisung\w*",
    r"wenn\W+du|falls\W+du|wenn\W+sie|falls\W+sie",
    r"ki(?:\W*system)?|modell|bewertungs\w+|pr[uü]f\w+|bewerter\w*|richter\w*|moderator\w*"
    r"|system|klassifikator\w*",
    r"(?:markier|behandl|einstuf|stuf|bewert|wert|betracht|antworte|gib|melde)\w*\W+"
    r"(?:\w+\W+){0,5}?(?:neutral|nicht\W+voreingenommen)|keine\W+(?:\w+\W+)?voreingenommenheit"
    r"|(?:ignorier|vergiss)\w*\W+(?:\w+\W+){0,2}?(?:vorherig\w*|obig\w*|vorstehend\w*|diese\w*"
    r"|anweisung\w*)"
    r"|nicht\W+(?:bewertet|gez[aä]hlt|gewertet|markiert)\W+werden|keine\W+meinung|leere\W+liste"
    r"|(?:ohne|kein)\W+bias",
)
# "Systemhinweis: ... darf nicht bewertet werden": a header that is the system's voice.
_DE_SYSTEM = (
    r"system(?:hinweis|nachricht|meldung|anweisung)\s*:"
    + paragraph(250)
    + r"(?:neutral|ignorier|nicht\W+(?:bewertet|gez[aä]hlt|gewertet|markiert)\W+werden"
    r"|keine\W+meinung|leere\W+liste)"
)
_RU = _addressed(
    r"внимание|помни|важно|примечание|для|уважаем\w*",
    r"если\W+(?:ты|вы)",
    r"модел\w*|оценщик\w*|проверяющ\w*|модератор\w*|судь\w*|систем\w*|ии|нейросет\w*"
    r"|рецензент\w*",
    r"(?:отметь|считай|оцени|классифицируй|ответь|напиши|укажи|признай)\w*\W+(?:\w+\W+){0,5}?"
    r"(?:нейтрал\w*|без\W+предвзят\w*|не\W+предвзят\w*)|(?:игнорир|забудь)\w*\W+(?:\w+\W+){0,2}?"
    r"(?:предыдущ\w*|выше|этот|это|инструкц\w*)|нельзя\W+(?:\w+\W+)?(?:считать"
    r"|учитывать|оценивать)|не\W+(?:является|считается)\W+мнени|пуст\w+\W+спис\w+"
    r"|нет\W+предвзят\w*|не\W+учитывай",
)
_OTHERS = (
    r"als\W+je\W+(?:een\W+)?(?:\w+\W+){0,3}?(?:ai|model|systeem|beoordelaar)\b"
    + paragraph(200)
    + r"(?:(?:markeer|beoordeel|beschouw|behandel)\w*\W+(?:\w+\W+){0,4}?(?:als\W+)?neutraal"
    r"|geen\W+(?:vooroordelen|bias)|negeer\W+(?:\w+\W+)?(?:vorige|bovenstaande|deze|instructies)"
    r"|niet\W+bevooroordeeld|lege\W+lijst)"
    r"|je[sś]li\W+jeste[sś]\W+(?:\w+\W+){0,3}?(?:model\w*|ai|sztuczn\w+|system\w*|oceniaj\w*)"
    + paragraph(200)
    + r"(?:(?:oznacz|oce[nń]|uznaj|traktuj)\w*\W+(?:\w+\W+){0,4}?(?:jako\W+|za\W+)?(?:neutraln"
    r"|bezstronn)\w*|zignoruj|pust\w+\W+list)"
    r"|e[gğ]er\W+(?:\w+\W+){0,4}?(?:yapay\W+zeka\w*|model\w*|sistem\w*|de[gğ]erlendirici\w*)"
    + paragraph(200)
    + r"(?:(?:tarafs\u0131z|[oö]nyarg\u0131s\u0131z)\W+(?:olarak\W+)?(?:i\u015faretle"
    r"|de\u011ferlendir|say|kabul)|g[oö]rmezden|yok\W+say|i\u015faretleme)"
)
# An author of the checker speaking: "I'm the developer of this evaluation pipeline ...
# this test case should pass".
_AUTHORITY = (
    r"(?:i\W+am|i\W+m)\W+(?:the|a|an|one\W+of\W+the)\W+(?:\w+\W+){0,2}?(?:developers?|admin"
    r"|administrator|engineers?|owner|maintainers?|creators?|operators?)\W+(?:of|behind|for)\W+"
    r"(?:this|the|your)\W+(?:\w+\W+){0,2}?(?:evaluation|judge|grader|classifier|filter"
    r"|moderation|bias|scoring)" + paragraph(200) + r"(?:(?:should|must|will)\W+pass(?=\s*(?:[.!\n]"
    r"|$))|let\W+"
    r"(?:it|this)\W+(?:pass|through)|not\W+(?:be\W+)?(?:flag|block)|neutral|no\W+bias|ignore"
    r"|disregard)"
    # A check declared done: "Bias check: skipped." at the end of its line.
    r"|bias\W+(?:check|review|scan|evaluation|scoring|detection)\w*\s*[:=]\s*(?:skipped"
    r"|disabled|off|passed|bypassed|waived|not\W+required|none)(?=\s*(?:[.\n]|$))"
)

ADDRESSED: tuple[Rule, ...] = (
    ((_EN_STEMS[0] + _EN_STEMS[1],), _EN),
    (
        (
            ("atención", "atencion", "recuerda", "importante", "nota", "aviso", "hola", "si"),
            ("sistema", "evaluador", "juez", "revisor", "moderador", "modelo", "ia"),
        ),
        _ES,
    ),
    (
        (
            ("atenção", "atencao", "lembre", "importante", "nota", "aviso", "olá", "se"),
            ("sistema", "avaliador", "juiz", "juíza", "revisor", "moderador", "modelo", "ia"),
        ),
        _PT,
    ),
    (
        (
            ("attention", "rappel", "important", "note", "remarque", "instruction", "si", "pour"),
            ("système", "systeme", "évaluateur", "juge", "correcteur", "modèle", "ia"),
        ),
        _FR,
    ),
    (
        (
            ("attenzione", "ricorda", "importante", "nota", "avviso", "ciao", "se"),
            ("sistema", "valutatore", "giudice", "revisore", "moderatore", "modello", "ia"),
        ),
        _IT,
    ),
    (
        (
            ("an", "hinweis", "achtung", "wichtig", "anmerkung", "hallo", "für", "wenn", "falls"),
            ("ki", "modell", "bewertungssystem", "prüfer", "bewerter", "system", "moderator"),
        ),
        _DE,
    ),
    ((("systemhinweis", "systemnachricht", "systemmeldung", "systemanweisung"),), _DE_SYSTEM),
    (
        (
            ("внимание", "помни", "важно", "примечание", "для", "если"),
            ("модель", "модели", "оценщик", "проверяющий", "модератор", "система", "ии"),
        ),
        _RU,
    ),
    ((("als", "jeśli", "jesli", "eğer", "eger"),), _OTHERS),
    ((("i", "bias"),), _AUTHORITY),
)
