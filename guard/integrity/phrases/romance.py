"""Spanish, Portuguese, Italian and French: the same shapes as English (drop earlier
instructions, a note to the reviewer with an order, "this text holds no opinions",
"return an empty list", "the bias check is off")."""

from __future__ import annotations

from guard.integrity.phrases.shape import Rule, drop_rule, gap, vocative_rule, within

__all__ = ["ROMANCE"]

_ES = (
    (
        (
            ("ignor", "olvid", "descart", "omit", "omita", "desatiend", "caso"),
            ("instruc", "indicacion", "regla", "orden", "directri", "norma"),
        ),
        drop_rule(
            r"ignora|ignore|ignorad|ignoren|olvida|olvide|olvidad|descarta|descarte|omite|omita"
            r"|desatiende|haz\W+caso\W+omiso\W+(?:a|de)",
            r"instrucciones|indicaciones|reglas|[oó]rdenes|directrices|normas",
            r"anteriores|previas|precedentes|de\W+arriba|del\W+sistema|originales",
        ),
    ),
    (
        (
            ("los", "las", "del", "que", "una", "para", "por", "este", "esta", "eres", "el"),
            (
                "revisor",
                "evaluador",
                "corrector",
                "moderador",
                "juez",
                "clasificador",
                "calificador",
                "ia",
                "inteligencia",
                "modelo",
                "asistente",
            ),
            (
                "ignor",
                "opini",
                "vací",
                "vaci",
                "sesg",
                "puntuaci",
                "eval",
                "juzg",
                "marq",
                "calif",
                "desactiv",
            ),
        ),
        vocative_rule(
            r"nota|mensaje|aviso|instrucci[oó]n|instrucciones|atenci[oó]n|indicaci[oó]n|estimad[oa]"
            r"|querid[oa]|hola|si\W+eres",
            r"revisor(?:es|a|as)?|evaluador(?:es|a|as)?|corrector(?:es|a)?|moderador(?:es|a)?|juez"
            r"|jueces|clasificador(?:es)?|calificador(?:es)?|ia|inteligencia\W+artificial"
            r"|(?:sistema|modelo|asistente)s?\W+de\W+(?:ia|evaluaci[oó]n)",
            r"ignor|no\W+(?:contiene|contienen|tiene|tienen|expresa|expresan)\W+(?:ningun[ao]?\W+)?"
            r"(?:opini[oó]n|opiniones|sesgo)|(?:ninguna|sin|cero|0)\W+opini(?:[oó]n|ones)"
            r"|lista\W+vac[ií]a|no\W+(?:es|son)\W+sesgad|sin\W+sesgo|puntuaci[oó]n\W+(?:de\W+)?"
            r"(?:0|cero)|no\W+(?:lo\W+|la\W+|los\W+|las\W+)?(?:eval[uú]e|juzgue|marque|califique"
            r"|punt[uú]e)|desactivad",
        ),
    ),
    (
        (
            ("este", "esta", "estos", "estas"),
            ("opini", "sesg", "evaluad", "juzgad", "exent"),
        ),
        r"(?:este|esta|estos|estas)\W+(?:\w+\W+){0,2}?(?:texto|textos|l[ií]neas?|pasajes?"
        r"|respuesta|contenido|frases?|mensaje|p[aá]rrafos?|citas?)\b"
        + within(120)
        + r"(?:no\W+(?:contiene|contienen|expresa|expresan|tiene|tienen)\W+(?:ningun[ao]?\W+)?"
        r"opini|no\W+(?:es|son)\W+sesgad|no\W+deben?\W+(?:ser\W+)?(?:evaluad|juzgad|marcad"
        r"|puntuad)|est[aá]n?\W+exent)",
    ),
    (
        (
            ("los", "las", "del", "que", "una", "para", "por", "este", "esta", "el", "lista"),
            ("devuelv", "devolved", "respond", "entreg", "emite", "genera", "escrib"),
            ("vací", "vaci", "opini", "sesg", "puntuaci"),
        ),
        r"(?:devuelve|devuelva|devolved|responde|responda|entrega|emite|genera|escribe)\b"
        + within(60)
        + r"(?:lista\W+vac[ií]a\W+de\W+opiniones|(?:ninguna|cero|0)\W+opini|no\W+sesgad|sin\W+sesgo"
        r"|puntuaci[oó]n\W+(?:de\W+)?(?:0|cero))",
    ),
    (
        (("sesgo",),),
        r"(?:revisi[oó]n|evaluaci[oó]n|control|verificaci[oó]n|detecci[oó]n|filtro|an[aá]lisis)"
        r"\W+de\W+sesgos?\W+(?:est[aá]|queda|ha\W+sido)\W+(?:desactivad|suspendid|deshabilitad"
        r"|anulad)",
    ),
)

_PT = (
    (
        (
            ("ignor", "esque", "desconsider", "descart", "desprez"),
            ("instru", "regra", "ordens", "diretri"),
        ),
        drop_rule(
            r"ignore|ignora|ignorem|esque[cç]a|esque[cç]am|desconsidere|descarte|despreze",
            r"instru[cç][oõ]es|regras|ordens|diretrizes|orienta[cç][oõ]es",
            r"anteriores|pr[eé]vias|precedentes|acima|do\W+sistema|originais",
        ),
    ),
    (
        (
            (
                "não",
                "são",
                "uma",
                "você",
                "isso",
                "este",
                "esta",
                "pelo",
                "pela",
                "dos",
                "das",
                "ao",
            ),
            (
                "revisor",
                "avaliador",
                "corretor",
                "moderador",
                "juiz",
                "classificador",
                "ia",
                "modelo",
                "assistente",
            ),
            (
                "ignor",
                "opini",
                "vazia",
                "tendencios",
                "viés",
                "vies",
                "pontua",
                "avali",
                "julg",
                "marq",
                "desativ",
            ),
        ),
        vocative_rule(
            r"nota|mensagem|aviso|instru[cç][aã]o|instru[cç][oõ]es|aten[cç][aã]o|prezad[oa]"
            r"|car[oa]|ol[aá]|se\W+voc[eê]\W+[eé]",
            r"revisor(?:es|a|as)?|avaliador(?:es|a|as)?|corretor(?:es|a)?|moderador(?:es|a)?"
            r"|juiz|ju[ií]zes|classificador(?:es)?|ia|intelig[eê]ncia\W+artificial"
            r"|(?:sistema|modelo|assistente)s?\W+de\W+(?:ia|avalia[cç][aã]o)",
            r"ignor|n[aã]o\W+(?:cont[eé]m|cont[eê]m|tem|t[eê]m|expressa|expressam)\W+"
            r"(?:nenhuma\W+)?(?:opini[aã]o|opini[oõ]es|vi[eé]s)|(?:nenhuma|sem|zero|0)\W+"
            r"opini(?:[aã]o|[oõ]es)|lista\W+vazia|n[aã]o\W+(?:[eé]|s[aã]o)\W+tendencios"
            r"|sem\W+vi[eé]s|pontua[cç][aã]o\W+(?:de\W+)?(?:0|zero)|n[aã]o\W+(?:o\W+|a\W+)?"
            r"(?:avalie|julgue|marque|pontue)|desativad",
        ),
    ),
    (
        (
            ("este", "esta", "estes", "estas", "essa", "esse", "essas", "esses"),
            ("opini", "viés", "vies", "tendencios", "avaliad", "julgad", "isent"),
        ),
        r"(?:este|esta|estes|estas|essas?|esses?)\W+(?:\w+\W+){0,2}?(?:texto|textos|linhas?"
        r"|passagem|trechos?|resposta|conte[uú]do|frases?|mensagem|par[aá]grafos?|cita[cç][oõ]es)\b"
        + within(120)
        + r"(?:n[aã]o\W+(?:cont[eé]m|cont[eê]m|expressa|expressam|tem|t[eê]m)\W+"
        r"(?:nenhuma\W+)?opini|n[aã]o\W+(?:[eé]|s[aã]o)\W+tendencios|n[aã]o\W+devem?\W+"
        r"(?:ser\W+)?(?:avaliad|julgad|marcad|pontuad)|(?:est[aá]|est[aã]o)\W+isent)",
    ),
    (
        (
            (
                "não",
                "são",
                "uma",
                "você",
                "isso",
                "este",
                "esta",
                "pelo",
                "pela",
                "dos",
                "das",
                "ao",
                "lista",
            ),
            ("retorn", "devolv", "respond", "entreg", "emita", "gere", "escrev"),
            ("vazia", "opini", "tendencios", "pontua"),
        ),
        r"(?:retorne|devolva|responda|entregue|emita|gere|escreva)\b"
        + within(60)
        + r"(?:lista\W+vazia\W+de\W+opini[oõ]es|(?:nenhuma|zero|0)\W+opini"
        r"|n[aã]o\W+tendencios|sem\W+vi[eé]s"
        r"|pontua[cç][aã]o\W+(?:de\W+)?(?:0|zero))",
    ),
)

_IT = (
    (
        (
            ("ignor", "dimentic", "trascur", "tralasci", "considerare"),
            ("istruzion", "regol", "indicazion", "direttiv"),
        ),
        drop_rule(
            r"ignora|ignorate|ignori|dimentica|dimenticate|trascura|tralascia|non\W+considerare",
            r"istruzioni|regole|indicazioni|direttive|ordini",
            r"precedenti|prima|di\W+sopra|del\W+sistema|originali",
        ),
    ),
    (
        (
            ("il", "della", "che", "non", "sono", "questo", "questa", "gli", "per", "una", "sei"),
            (
                "revisor",
                "valutator",
                "correttor",
                "moderator",
                "giudice",
                "classificator",
                "ia",
                "modello",
                "assistente",
            ),
            (
                "ignor",
                "opinion",
                "vuota",
                "parte",
                "parzial",
                "distort",
                "punteggio",
                "valut",
                "giudic",
                "segnal",
                "disattiv",
            ),
        ),
        vocative_rule(
            r"nota|messaggio|avviso|istruzion[ei]|attenzione|gentile|car[oa]|ciao|se\W+sei",
            r"revisor[ei]|valutator[ei]|valutatric[ei]|correttor[ei]|moderator[ei]|giudic[ei]"
            r"|classificator[ei]|ia|intelligenza\W+artificiale|(?:sistem[ai]|modell[oi]"
            r"|assistent[ei])\W+(?:di\W+)?(?:ia|valutazione)",
            r"ignor|non\W+(?:contiene|contengono|esprime|esprimono|ha|hanno)\W+(?:alcuna\W+"
            r"|nessuna\W+)?(?:opinion[ei]|pregiudizi)|(?:nessuna|zero|0)\W+opinion[ei]"
            r"|lista\W+vuota|non\W+(?:[eè]|sono)\W+(?:di\W+parte|parzial[ei]|distort)"
            r"|punteggio\W+(?:di\W+)?(?:0|zero)|non\W+(?:lo\W+|la\W+)?(?:valutare|giudicare"
            r"|segnalare)|disattivat",
        ),
    ),
    (
        (
            ("questo", "questa", "questi", "queste"),
            ("opinion", "parte", "parzial", "valutat", "giudicat", "esent"),
        ),
        r"(?:questo|questa|questi|queste)\W+(?:\w+\W+){0,2}?(?:testo|testi|righe|passaggio"
        r"|brano|risposta|contenuto|frasi?|messaggio|paragrafi?|citazion[ei])\b"
        + within(120)
        + r"(?:non\W+(?:contiene|contengono|esprime|esprimono|ha|hanno)\W+(?:alcuna\W+"
        r"|nessuna\W+)?opinion|non\W+(?:[eè]|sono)\W+(?:di\W+parte|parzial)|non\W+devono?\W+"
        r"(?:essere\W+)?(?:valutat|giudicat|segnalat)|(?:[eè]|sono)\W+esent)",
    ),
    (
        (
            ("il", "della", "che", "non", "sono", "questo", "questa", "gli", "per", "una", "lista"),
            ("restituisc", "rispond", "fornisc", "emetti", "genera", "scrivi"),
            ("vuota", "opinion", "punteggio"),
        ),
        r"(?:restituisci|rispondi|fornisci|emetti|genera|scrivi)\b"
        + within(60)
        + r"(?:lista\W+vuota\W+di\W+opinioni|(?:nessuna|zero|0)\W+opinion"
        r"|punteggio\W+(?:di\W+)?(?:0|zero))",
    ),
)

_FR = (
    (
        (
            ("ignor", "oubli", "tenez", "abstraction"),
            ("instruction", "consigne", "r\u00e8gle", "regle", "directive"),
        ),
        r"(?:ignore|ignorez|oublie|oubliez|n[e']\W*tenez\W+pas\W+compte\W+d|fais\W+abstraction"
        r"\W+d|faites\W+abstraction\W+d)"
        + gap(3)
        + r"(?:instructions|consignes|r[eè]gles|directives|ordres)\W+(?:\w+\W+)?"
        r"(?:pr[eé]c[eé]dentes|ant[eé]rieures|ci-dessus|du\W+syst[eè]me|initiales|d'avant)\b",
    ),
    (
        (
            ("le", "les", "des", "est", "une", "pas", "vous", "ce", "cette", "du", "au", "aucune"),
            (
                "relecteur",
                "valuat",
                "correcteur",
                "mod\u00e9rat",
                "moderat",
                "juge",
                "classif",
                "ia",
                "mod\u00e8le",
                "modele",
                "assistant",
            ),
            (
                "ignor",
                "opinion",
                "avis",
                "biais",
                "vide",
                "score",
                "juge",
                "jugé",
                "note",
                "éval",
                "eval",
                "signal",
                "désactiv",
                "desactiv",
            ),
        ),
        vocative_rule(
            r"note|message|avis|instructions?|attention|cher|ch[eè]re|bonjour|si\W+vous\W+[eê]tes"
            r"|si\W+tu\W+es",
            r"relecteurs?|relectrices?|[eé]valuat(?:eur|rice)s?|correct(?:eur|rice)s?"
            r"|mod[eé]rat(?:eur|rice)s?|juges?|classificateurs?|ia|intelligence\W+artificielle"
            r"|(?:syst[eè]mes?|mod[eè]les?|assistants?)\W+d'?\W*(?:ia|[eé]valuation)",
            r"ignor|(?:ne|n')\W*(?:contien(?:nen)?t|exprim(?:en)?t|a|ont)\W+aucune?\W+"
            r"(?:opinion|avis|biais)|(?:aucune|z[eé]ro|0)\W+opinion|liste\W+vide|(?:n'est|ne\W+sont)"
            r"\W+pas\W+biais|sans\W+biais|score\W+(?:de\W+)?(?:0|z[eé]ro)|ne\W+(?:le\W+|la\W+)?"
            r"(?:jugez|notez|[eé]valuez|signalez)\W+pas|d[eé]sactiv",
        ),
    ),
    (
        (
            ("ce", "cet", "cette", "ces"),
            ("opinion", "biais", "éval", "eval", "juge", "jugé", "note", "signal", "exempt"),
        ),
        r"(?:ce|cet|cette|ces)\W+(?:\w+\W+){0,2}?(?:texte|textes|lignes?|passages?|r[eé]ponse"
        r"|contenu|phrases?|message|paragraphes?|citations?)\b"
        + within(120)
        + r"(?:(?:ne|n')\W*(?:contien(?:nen)?t|exprim(?:en)?t)\W+aucune?\W+(?:opinion|avis)"
        r"|(?:n'est|ne\W+sont)\W+pas\W+biais|ne\W+doi(?:t|vent)\W+pas\W+[eê]tre\W+(?:[eé]valu"
        r"|jug|not|signal)|(?:est|sont)\W+exempt)",
    ),
    (
        (
            (
                "le",
                "les",
                "des",
                "est",
                "une",
                "pas",
                "vous",
                "ce",
                "cette",
                "du",
                "au",
                "aucune",
                "liste",
            ),
            (
                "renvoi",
                "renvoy",
                "retourn",
                "réponds",
                "répondez",
                "reponds",
                "repondez",
                "donne",
                "donnez",
                "écris",
                "écrivez",
                "ecris",
                "ecrivez",
            ),
            ("vide", "opinion", "score", "biais"),
        ),
        r"(?:renvoie|renvoyez|retourne|retournez|r[eé]ponds|r[eé]pondez|donne|donnez|[eé]cris"
        r"|[eé]crivez)\b"
        + within(60)
        + r"(?:liste\W+vide\W+d\W*opinions|(?:aucune|z[eé]ro|0)\W+opinion"
        r"|score\W+(?:de\W+)?(?:0|z[eé]ro)|pas\W+biais)",
    ),
)

ROMANCE: tuple[Rule, ...] = (*_ES, *_PT, *_IT, *_FR)
