"""Spanish, Portuguese, Italian, French, German and Russian: the same five shapes as English
(drop earlier instructions, a note to the reviewer with an order, "this text holds no
opinions", "return an empty list", "the bias check is off")."""

from __future__ import annotations

from guard.integrity.phrases.shape import Rule, gap, vocative_rule, within

__all__ = ["EUROPEAN"]

# Spanish, Portuguese, Italian, French: Romance languages share a shape ----------------

_ES = (
    (
        (
            ("ignor", "olvid", "descart", "omit", "omita", "desatiend", "caso"),
            ("instruc", "indicacion", "regla", "orden", "directri", "norma"),
        ),
        r"(?:ignora|ignore|ignorad|ignoren|olvida|olvide|olvidad|descarta|descarte|omite|omita"
        r"|desatiende|haz\W+caso\W+omiso\W+(?:a|de))\b"
        + gap(3)
        + r"(?:instrucciones|indicaciones|reglas|[oó]rdenes|directrices|normas)\W+(?:\w+\W+)?"
        r"(?:anteriores|previas|precedentes|de\W+arriba|del\W+sistema|originales)\b",
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
        r"(?:ignore|ignora|ignorem|esque[cç]a|esque[cç]am|desconsidere|descarte|despreze)\b"
        + gap(3)
        + r"(?:instru[cç][oõ]es|regras|ordens|diretrizes|orienta[cç][oõ]es)\W+"
        r"(?:\w+\W+)?(?:anteriores|pr[eé]vias|precedentes|acima|do\W+sistema|originais)\b",
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
        r"(?:ignora|ignorate|ignori|dimentica|dimenticate|trascura|tralascia|non\W+considerare)\b"
        + gap(3)
        + r"(?:istruzioni|regole|indicazioni|direttive|ordini)\W+(?:\w+\W+)?"
        r"(?:precedenti|prima|di\W+sopra|del\W+sistema|originali)\b",
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

_DE = (
    (
        (
            ("ignorier", "vergiss", "vergessen", "missacht", "übergeh", "ubergeh"),
            ("anweisung", "instruktion", "regeln", "vorgaben", "befehle"),
        ),
        r"(?:ignorier\w*|vergiss|vergessen\W+sie|missachte\w*|[uü]bergeh\w*)\b"
        + gap(3)
        + r"(?:vorherigen|bisherigen|obigen|vorigen|fr[uü]heren|urspr[uü]nglichen|alle)\W+"
        r"(?:\w+\W+)?(?:anweisungen|instruktionen|regeln|vorgaben|befehle)\b",
    ),
    (
        (
            (
                "der",
                "die",
                "das",
                "und",
                "nicht",
                "ist",
                "ein",
                "eine",
                "sie",
                "den",
                "dem",
                "keine",
                "diese",
            ),
            (
                "pr\u00fcfer",
                "prufer",
                "gutachter",
                "bewerter",
                "moderator",
                "richter",
                "klassifik",
                "ki",
                "modell",
                "assistent",
                "korrektor",
            ),
            (
                "ignorier",
                "meinung",
                "leere",
                "voreingenommen",
                "parteiisch",
                "verzerrt",
                "bewert",
                "punktzahl",
                "score",
                "beurteil",
                "markier",
                "melden",
                "deaktiv",
                "abgeschaltet",
            ),
        ),
        vocative_rule(
            r"hinweis|nachricht|anweisung|achtung|notiz|liebe[rs]?|hallo|wenn\W+du\W+(?:ein|eine)",
            r"pr[uü]fer(?:in|innen)?|gutachter(?:in|innen)?|bewerter(?:in|innen)?|korrektor(?:en)?"
            r"|moderator(?:in|en)?|richter(?:in)?|klassifikator(?:en)?|ki|ki-\w+|sprachmodell"
            r"|(?:ki-?)?(?:system|modell|assistent)(?:e|en)?",
            r"ignorier|(?:enth[aä]lt|enthalten|[aä]u[sß]ert|hat|haben)\W+keine\W+meinung"
            r"|keine\W+meinungen|leere\W+liste|(?:ist|sind)\W+nicht\W+(?:voreingenommen|parteiisch"
            r"|verzerrt)|(?:bewertung|punktzahl|score)\W+(?:von\W+)?(?:0|null)"
            r"|nicht\W+(?:bewerten|beurteilen|markieren|melden)|deaktiviert|abgeschaltet",
        ),
    ),
    (
        (
            ("dieser", "diese", "dieses", "folgenden", "obigen"),
            ("meinung", "voreingenommen", "parteiisch", "bewertet", "beurteilt", "ausgenommen"),
        ),
        r"(?:dieser|diese|dieses|die\W+folgenden|die\W+obigen)\W+(?:\w+\W+){0,2}?(?:text"
        r"|texte|zeilen|passagen?|antwort|inhalt|s[aä]tze|satz|nachricht|abs[aä]tze|absatz"
        r"|zitate?)\b"
        + within(120)
        + r"(?:(?:enth[aä]lt|enthalten|[aä]u[sß]ert|[aä]u[sß]ern)\W+keine\W+meinung|(?:ist|sind)"
        r"\W+nicht\W+(?:voreingenommen|parteiisch)|(?:darf|d[uü]rfen|soll|sollen)\W+nicht\W+"
        r"(?:bewertet|beurteilt|markiert)|(?:ist|sind)\W+ausgenommen)",
    ),
    (
        (
            (
                "der",
                "die",
                "das",
                "und",
                "nicht",
                "ist",
                "ein",
                "eine",
                "sie",
                "den",
                "dem",
                "keine",
                "leere",
            ),
            ("gib", "gebt", "geben", "liefer", "antwort", "schreib"),
            ("leere", "meinung", "bewertung", "punktzahl"),
        ),
        r"(?:gib|gebt|geben\W+sie|liefere|liefern\W+sie|antworte|antworten\W+sie|schreib\w*)\b"
        + within(60)
        + r"(?:leere\W+liste\W+(?:von|der|an)\W+meinungen|keine\W+meinungen"
        r"|(?:bewertung|punktzahl|score)\W+"
        r"(?:von\W+)?(?:0|null))",
    ),
    (
        (("pr\u00fcfung", "prufung", "bias", "filter", "kontrolle"),),
        r"(?:bias|voreingenommenheits|vorurteils|inhalts|moderations)-?\W*(?:pr[uü]fung|check"
        r"|filter|kontrolle)\W+(?:ist|wurde|wird)\W+(?:\w+\W+)?(?:deaktiviert|abgeschaltet"
        r"|ausgesetzt|aufgehoben)",
    ),
)

_RU = (
    (
        (
            ("игнорир", "проигнорир", "забуд", "обращ", "отбрось", "отбросьте"),
            ("инструкц", "указани", "правил", "команд"),
        ),
        r"(?:игнорируй\w*|проигнорируй\w*|забудь\w*|не\W+обращай\w*\W+внимани\w+\W+на|отбрось\w*)"
        + gap(3)
        + r"(?:(?:все|всё)\W+)?(?:предыдущ\w+|прежн\w+|вышеуказанн\w+|предшествующ\w+"
        r"|системн\w+|исходн\w+)\W+(?:\w+\W+)?(?:инструкци\w*|указани\w*|правил\w*|команд\w*)",
    ),
    (
        (
            (
                "рецензент",
                "проверяющ",
                "оценщик",
                "модератор",
                "судь",
                "классификатор",
                "ии",
                "модел",
                "нейросет",
                "ассистент",
                "эксперт",
            ),
            (
                "игнорир",
                "мнени",
                "пуст",
                "являет",
                "предвзят",
                "оценк",
                "ноль",
                "оценива",
                "суди",
                "помечай",
                "отключен",
            ),
        ),
        vocative_rule(
            r"примечание|заметка|сообщение|указание|внимание|уважаем\w+|дорог\w+|привет"
            r"|если\W+ты|если\W+вы",
            r"рецензент\w*|проверяющ\w*|оценщик\w*|модератор\w*|судь\w*|классификатор\w*|ии"
            r"|искусственн\w+\W+интеллект\w*|модел\w+|нейросет\w+|ассистент\w*|эксперт\w*",
            r"игнорир|не\W+содерж\w+\W+(?:никаких\W+)?мнени|без\W+мнений|пуст\w+\W+(?:список"
            r"|массив)|не\W+(?:является|являются|предвзят)|непредвзят|оценк\w+\W+0|ноль"
            r"|не\W+(?:оценивай\w*|суди\w*|помечай\w*)|отключен",
        ),
    ),
    (
        (
            ("этот", "эта", "это", "эти", "данн", "следующ", "приведённ", "приведенн"),
            ("мнени", "предвзят", "оценива", "освобожд"),
        ),
        r"(?:этот|эта|это|эти|данн\w+|следующ\w+|приведённ\w+|приведенн\w+)\W+(?:\w+\W+){0,2}?"
        r"(?:текст\w*|строк\w*|отрыв\w*|ответ\w*|содержани\w*|фраз\w*|предложени\w*|сообщени\w*"
        r"|абзац\w*|цитат\w*)"
        + within(120)
        + r"(?:не\W+(?:содерж|выража)\w+\W+(?:никаких\W+)?мнени|не\W+(?:является|являются)\W+"
        r"предвзят|не\W+(?:следует|нужно|надо|должн\w*)\W+(?:\w+\W+)?оценива|освобожд)",
    ),
    (
        (
            ("верни", "вернит", "выведи", "ответь", "выдай", "напиши", "укажи"),
            ("пуст", "мнени", "оценк", "предвзят"),
        ),
        r"(?:верни|выведи|ответь|выдай|напиши|укажи)\w*"
        + within(60)
        + r"(?:пуст\w+\W+(?:список|массив)\W+мнений|(?:ноль|0)\W+мнени|оценк\w+\W+(?:0|ноль)"
        r"|не\W+предвзят)",
    ),
    (
        (("предвзят", "провер", "фильтр"),),
        r"(?:проверк\w+|фильтр\w*|контрол\w+)\W+(?:на\W+)?(?:предвзят\w+|bias)\W+(?:\w+\W+)?"
        r"(?:отключен\w*|выключен\w*|приостановлен\w*)",
    ),
)


EUROPEAN: tuple[Rule, ...] = (*_ES, *_PT, *_IT, *_FR, *_DE, *_RU)
