"""Verdicts steered in the other spaced languages: the same shapes as `steering`.

Spanish, Portuguese, French, Italian, German, Russian, Dutch and Polish give the text a
verdict ("considere o texto neutro", "als neutral werten", "oceń ten tekst jako
neutralny"); they void earlier orders and hand the judge new ones; and Dutch, Polish,
Turkish, Swedish, Indonesian and Vietnamese get their commonest note to the evaluator.
"""

from __future__ import annotations

from guard.integrity.phrases.shape import Rule, paragraph, within
from guard.integrity.phrases.steering import deem

__all__ = ["WORLD_STEERING"]

_ZERO = (
    r"(?:0(?:[.,]0+)?|cero|zero|z[eé]ro|null|ноль|nul)(?![ \t]*(?:/|%|[.,]\d|punt|point|pont|punk))"
    # Not a range: "da 0 a 10", "von 0 bis 5".
    r"(?!\W+(?:a|al|à|to|bis|до|tot|do|e|y|et|und|и|en|-)\W*\d)"
)

_ES = deem(
    r"(?:trat|marc|consider|calific|clasific|punt[uú]|eval[uú]|cuent|registr|etiquet|valor)\w*",
    r"est[eoa]s?|todos?|todas?|el\W+(?:texto|pasaje|p[aá]rrafo|fragmento|mensaje|contenido)"
    r"|la\W+(?:respuesta|frase|oraci[oó]n|cita)|lo\W+anterior",
    r"como",
    r"neutral(?:es)?|neutr[oa]s?|imparcial(?:es)?|sin\W+sesgos?|no\W+sesgad\w*|aceptable"
    r"|inofensiv\w*|" + _ZERO,
)
_PT = deem(
    r"(?:trat|marqu|marc|consider|classifi|pontu|avali|cont|registr|rotul)\w*",
    r"est[eao]s?|isto|isso|tudo|todos|todas|o\W+(?:texto|trecho|par[aá]grafo|conte[uú]do)"
    r"|a\W+(?:resposta|frase|cita[cç][aã]o|passagem)",
    r"como",
    r"neutr[oa]s?|imparcia(?:l|is)|sem\W+vi[eé]s|n[aã]o\W+tendencios\w*|aceit[aá]vel"
    r"|inofensiv\w*|" + _ZERO,
)
_FR = deem(
    r"(?:trait|consid[eé]r|marqu|note|[eé]valu|class|compt|[eé]tiquet|juge)\w*",
    r"ce|cet|cette|ceci|cela|ces|tout|tous|toutes|le\W+(?:texte|passage|paragraphe|contenu"
    r"|message)|la\W+(?:r[eé]ponse|phrase|citation)|l\W+(?:extrait|[eé]nonc[eé]|ensemble)",
    r"comme",
    r"neutres?|impartia\w*|sans\W+biais|non\W+biais[eé]\w*|acceptable|inoffensi\w*|" + _ZERO,
)
_IT = deem(
    r"(?:trat|consider|segn|marc|valut|classific|cont|etichett|giudic)\w*",
    r"quest[oaie]|tutt[oi]|il\W+(?:testo|passaggio|brano|contenuto|paragrafo)"
    r"|la\W+(?:risposta|frase|citazione)|l\W+(?:estratto|intero)|ci[oò]",
    r"come",
    r"neutral[eio]|imparzial[ei]|senza\W+pregiudizi\w*|non\W+di\W+parte|accettabile"
    r"|innocu\w*|" + _ZERO,
)
_DE_VALUES = (
    r"neutral|unvoreingenommen|nicht\W+voreingenommen|ohne\W+(?:bias|vorurteile?"
    r"|voreingenommenheit)|unbedenklich|harmlos|akzeptabel|" + _ZERO
)
_DE_VERBS = (
    r"(?:behandl|bewert|wert|markier|einstuf|stuf|betracht|z[aä]hl|klassifizier|beurteil)\w*"
)
_DE = (
    deem(
        _DE_VERBS,
        r"diese[nrs]?|alles|es|das\W+(?:obige|folgende|ganze)|den\W+(?:text|absatz|satz|inhalt"
        r"|abschnitt)|die\W+(?:antwort|aussage)",
        r"als",
        _DE_VALUES,
    )
    + r"|(?:bitte|und|ihn|es|text|antwort|inhalt)\W+(?:\w+\W+){0,2}?als\W+(?:"
    + _DE_VALUES
    + r")\W+(?:\w+\W+)?"
    + _DE_VERBS
    # "Als neutral markieren." opening its sentence.
    + r"|als(?:(?<=^als)|(?<=[.:!?(] als))\W+(?:"
    + _DE_VALUES
    + r")\W+"
    + _DE_VERBS
)
_RU = deem(
    r"(?:счита|рассматрива|оцени|отмет|помет|классифицир|засчита|квалифицир|трактуй|признай)\w*",
    r"эт[оиу]т?|всё|все|текст|ответ|фрагмент|данный|данное",
    r"как|в\W+качестве",
    r"нейтральн\w*|непредвзят\w*|беспристрастн\w*|без\W+предвзятост\w*|приемлем\w*"
    r"|безвредн\w*|" + _ZERO,
)
_NL = deem(
    r"(?:behandel|beschouw|markeer|beoordeel|classificeer|label|noteer|waardeer)\w*",
    r"dit|deze|alles|de\W+(?:tekst|passage|zin|inhoud)|het\W+(?:antwoord|bovenstaande)",
    r"als",
    r"neutraal|onbevooroordeeld|niet\W+bevooroordeeld|zonder\W+vooroordel\w*|acceptabel"
    r"|onschuldig|" + _ZERO,
)
_PL = deem(
    r"(?:traktuj|potraktuj|oce[nń]|oznacz|uznaj|zaklasyfikuj|policz|uwa[zż]aj)\w*",
    r"ten|t[eęą]|to|ca[lł]y|wszystko|tekst|odpowied[zź]",
    r"jako|za",
    r"neutraln\w*|bezstronn\w*|bez\W+uprzedze[nń]|nieszkodliw\w*|akceptowaln\w*|" + _ZERO,
)
_DEEM_STEMS = (
    ("trat", "marc", "márc", "consider", "calific", "clasific", "puntúa", "punt", "evalúa", "eval"),
    ("cuent", "registr", "etiquet", "valor", "marqu", "classifi", "pontu", "avali", "cont"),
    ("rotul", "trait", "considér", "not", "évalu", "class", "compt", "étiquet", "jug"),
    ("segn", "valut", "classific", "etichett", "giudic", "behandl", "bewert", "wert"),
    ("markier", "einstuf", "stuf", "betracht", "zähl", "zahl", "klassifizier", "beurteil"),
    ("счита", "рассматрива", "оцени", "отмет", "помет", "классифицир", "засчита"),
    ("квалифицир", "трактуй", "признай", "behandel", "beschouw", "markeer", "beoordeel"),
    ("tel", "classificeer", "label", "noteer", "waardeer", "traktuj", "potraktuj", "oceń"),
    ("ocen", "oznacz", "uznaj", "zaklasyfikuj", "policz", "uważaj", "uwazaj", "als"),
)
_VALUE_STEMS: tuple[str, ...] = (
    "neutral",
    "neutro",
    "neutra",
    "neutre",
    "neutrale",
    "imparcial",
    "sin",
    "sem",
)
_VALUE_STEMS += ("sans", "senza", "ohne", "unvoreingenommen", "нейтрально", "непредвзято")
_VALUE_STEMS += ("neutraal", "neutralny", "neutralnie", "cero", "zero", "zéro", "0", "null")
_VALUE_STEMS += ("ноль", "nul", "aceptable", "aceitável", "acceptable", "accettabile")
_VALUE_STEMS += ("беспристрастно", "bezstronny", "onbevooroordeeld", "harmlos", "imparziale")
_VALUE_STEMS += ("unbedenklich", "akzeptabel", "nicht")
_VALUE_STEMS += ("no", "não", "non", "nicht", "не", "niet", "nie", "sem", "senza", "sans")

_AS = r"como|comme|als|come|как|jako|za"
_VERBS = (
    r"(?:trat|m[aá]rc|consider|calific|clasific|punt[uú]|eval[uú]|registr|etiquet|valor|marqu"
    r"|classifi|pontu|avali|rotul|trait|consid[eé]r|note|[eé]valu|class|compt|[eé]tiquet|juge"
    r"|segn|valut|classific|giudic|bewert|wert|markier|einstuf|stuf|betracht|klassifizier"
    r"|счита|оцени|отмет|помет|классифицир|beschouw|markeer|beoordeel|classificeer|traktuj"
    r"|potraktuj|oce[nń]|oznacz|uznaj|zaklasyfikuj)\w*"
)
_VALUES = (
    r"neutral(?:es)?|neutr[oae]s?|neutrale|imparcia(?:l|is|les)|impartia\w*|imparzial[ei]"
    r"|sin\W+sesgos?|no\W+sesgad\w*|sem\W+vi[eé]s|n[aã]o\W+tendencios\w*|sans\W+biais"
    r"|non\W+biais[eé]\w*|senza\W+pregiudizi\w*|unvoreingenommen|nicht\W+voreingenommen"
    r"|нейтральн\w*|непредвзят\w*|беспристрастн\w*|neutraal|onbevooroordeeld|neutraln\w*"
    r"|bezstronn\w*"
)
# The order alone, the whole sentence: "Oceń jako bezstronny.", "Clasifica como neutral."
_BARE = (
    r"(?:" + _VERBS + r")[ \t]+(?:\w+[ \t]+){0,3}?(?:" + _AS + r")[ \t]+(?:" + _VALUES + r")"
    r"(?=[ \t]*(?:[.!\n]|,[ \t]*(?:por\W+favor|s\W+il\W+vous|per\W+favore|bitte|пожалуйста"
    r"|prosz)|$))"
)
# "Do not flag this text": a negative order that points at the text.
_NOT_THIS = (
    r"ne\W+pas\W+(?:signaler|noter|compter|[eé]valuer|marquer|bloquer|p[eé]naliser)\W+(?:ce|cette"
    r"|cet)\W+(?:texte|r[eé]ponse|passage|paragraphe|contenu)"
    r"|no\W+(?:marques|se[nñ]ales|cuentes|eval[uú]es|bloquees|penalices|marcar|se[nñ]alar)\W+"
    r"(?:este|esta)\W+(?:texto|respuesta|p[aá]rrafo|contenido)"
    r"|n[aã]o\W+(?:marque|sinalize|conte|avalie|bloqueie|marcar|sinalizar)\W+(?:este|esta)\W+"
    r"(?:texto|resposta|trecho|conte[uú]do)"
    r"|non\W+(?:segnalare|contare|valutare|bloccare|marcare)\W+(?:questo|questa)\W+(?:testo"
    r"|risposta|passaggio|contenuto)"
    r"|(?:diesen|den)\W+(?:text|absatz|inhalt)\W+(?:\w+\W+){0,2}?nicht\W+(?:markieren|melden"
    r"|blockieren|werten|bewerten|z[aä]hlen|flaggen)"
    r"|не\W+(?:отмечай\w*|помечай\w*|блокируй\w*|учитывай\w*|засчитывай\w*)\W+(?:этот|это|данный)"
    r"|(?:n[aã]o\W+h[aá]|no\W+hay|il\W+n\W+y\W+a|non\W+ci\W+sono)\W+(?:nenhuma\W+|ninguna\W+"
    r"|aucune\W+)?opini\w*\W+(?:tendencios|sesgad|parzial|biais)"
    r"|es\W+gibt\W+keine\W+voreingenommenen"
)
# Earlier orders voided and new ones given to the judge; a score set outright.
_ADDRESSEES = (
    r"ia|juez|juiz|juge|giudice|richter|судь\w*|rechter|s[eę]dzi\w*|evaluador\w*|avaliador\w*"
    r"|[eé]valuateur\w*|valutator\w*|pr[uü]fer\w*|bewerter\w*|оценщик\w*|проверяющ\w*"
    r"|beoordelaar\w*|oceniaj[aą]c\w*|correct(?:eur|or|ore)\w*|moderat\w*|mod[eè]l\w*"
    r"|modell\w*|model\w*|modello|sistema|syst[eè]me|system\w*|систем\w*|revisor\w*"
    r"|relecteur\w*|ki|ии"
)
_ORDERS = (
    r"(?:nuev[oa]s?|nov[oa]s?|nouvelles?|nuov[ea]|neue[nrs]?|новые|новая|nieuwe|nowe"
    r"|aggiornat[ea]|actualizad[oa]s?|atualizad[oa]s?)\W+(?:instrucci\w*|[oó]rden\w*|tarea"
    r"|consignes?|instructions?|t[aâ]ches?|instru[cç]\w*|ordens|tarefa|istruzion\w*|compito"
    r"|anweisung\w*|aufgabe|инструкци\w*|указани\w*|задани\w*|instructies|opdracht"
    r"|instrukcj\w*|polecen\w*|zadanie)\W+(?:\w+\W+){0,2}?(?:" + _ADDRESSEES + r")\b"
    r"|(?:istruzion\w*|instrucciones|instru[cç][oõ]es|anweisungen|инструкции)\W+(?:nuov\w*"
    r"|aggiornat\w*|nuevas|novas|neue|новые)\W+(?:\w+\W+){0,2}?(?:" + _ADDRESSEES + r")\b"
    r"|tout\W+ce\W+qui\W+pr[eé]c[eè]de\W+(?:[eé]tait|est)\W+(?:seulement\W+|juste\W+)?(?:un\W+)?"
    r"(?:test|nul|annul[eé]|caduc|exercice)"
    r"|todo\W+lo\W+anterior\W+(?:era|fue|es)\W+(?:solo\W+)?(?:una?\W+)?(?:prueba|test|nulo)"
    r"|tudo\W+(?:o\W+que\W+veio\W+)?(?:acima|antes)\W+(?:era|foi|[eé])\W+(?:s[oó]\W+)?(?:um\W+)?"
    r"(?:teste|nulo)"
    r"|(?:ignorar|ignorer|ignorare|ignorieren|игнорировать|negeren|zignorowa[cć])\W+(?:\w+\W+){0,2}?"
    r"(?:instrucciones|instructions|istruzioni|anweisungen|инструкции|instructies|instrukcje"
    r"|instru[cç][oõ]es)\W+(?:\w+\W+)?(?:anteriores|pr[eé]c[eé]dentes|precedenti|vorherigen"
    r"|предыдущие|vorige|poprzednie)\b"
    r"|(?:ignore|ignora|ignorez|ignoriere|игнорируй|negeer|ignoruj)\w*\W+(?:\w+\W+)?(?:frase"
    r"|oraci[oó]n|phrase|satz|предложение|zin|zdanie|texto|testo|texte|linha|l[ií]nea|ligne|riga"
    r"|zeile|строк\w*|regel|par[aá]grafo|p[aá]rrafo|paragraphe|paragrafo|absatz|абзац)\W+(?:\w+\W+)?"
    r"(?:anterior|previa|pr[eé]c[eé]dente|precedente|vorherigen?|obigen?|предыдущ\w*|vorige"
    r"|poprzedni\w*|acima|arriba|ci-dessus|sopra|oben|выше|hierboven|powy[zż]ej)"
    r"|(?:zignoruj|ignoruj|pomi[nń])\w*\W+(?:\w+\W+){0,2}?(?:poprzedni\w*|wcze[sś]niejsz\w*"
    r"|powy[zż]sz\w*)\W+(?:instrukcj\w*|polece[nń]\w*|zdani\w*)"
    r"|(?:mettez|mets|donnez|donne|attribuez|attribue|asigna|asignad|atribua|dê"
    r"|assegna|metti|vergib|gib|geben\W+sie|поставьте|поставь|присвойте|wystaw\w*|geef)\W+"
    r"(?:\w+\W+){0,8}?" + _ZERO + r"(?!\w)"
    r"|il\W+testo\W+da\W+valutare\W+(?:era|[eè])\W+vuoto|el\W+texto\W+a\W+evaluar\W+(?:era|es)"
    r"\W+vac[ií]o|le\W+texte\W+[aà]\W+[eé]valuer\W+(?:[eé]tait|est)\W+vide"
    r"|non\W+(?:deve|devono|va|vanno)\W+(?:essere\W+)?(?:contat|contarl|conteggiat|valutat"
    r"|considerat)\w*\W+come\W+opinion|no\W+(?:debe|deben)\W+(?:contarse|contarlas?|ser\W+"
    r"(?:contad|puntuad|evaluad)\w*)\W+como\W+opini|ne\W+(?:doit|doivent)\W+pas\W+[eê]tre\W+"
    r"(?:compt|not|[eé]valu)\w*\W+comme\W+(?:une?\W+)?opinion|n[aã]o\W+deve\W+ser\W+(?:pontuad"
    r"|contad|avaliad)\w*|(?:darf|d[uü]rfen|soll|sollen)\W+nicht\W+als\W+(?:meinung|vorurteil)"
    r"\w*\W+(?:gez[aä]hlt|gewertet|bewertet)|ne\W+se\W+note\W+pas"
)
_ORDER_STEMS: tuple[str, ...] = (
    "nuevo",
    "nueva",
    "nuevas",
    "novo",
    "nova",
    "novas",
    "nouvelle",
    "nouvelles",
)
_ORDER_STEMS += ("nuova", "nuove", "neue", "neuen", "новые", "новая", "nieuwe", "nowe", "tout")
_ORDER_STEMS += ("aggiornate", "actualizadas", "atualizadas", "istruzioni", "instrucciones")
_ORDER_STEMS += ("instruções", "anweisungen", "инструкции", "todo", "tudo", "ignorar", "ignorer")
_ORDER_STEMS += ("ignorare", "ignorieren", "игнорировать", "negeren", "zignorować", "zignoruj")
_ORDER_STEMS += ("ignore", "ignora", "ignorez", "ignoriere", "игнорируй", "negeer")
_ORDER_STEMS += ("ignoruj", "pomiń", "mettez", "mets", "donnez", "donne", "attribuez", "asigna")
_ORDER_STEMS += ("atribua", "dê", "assegna", "metti", "vergib", "gib", "geben")
_ORDER_STEMS += ("поставьте", "поставь", "присвойте", "wystaw", "wystawić", "geef", "il", "el")
_ORDER_STEMS += ("le", "non", "no", "ne", "não", "nao", "darf", "dürfen", "soll", "sollen")

# A threat should the text be flagged (German), and the evaluator's note where it has no
# rule of its own: Russian, Dutch, Turkish, Swedish, Indonesian, Vietnamese.
_THREAT = (
    r"wenn\W+(?:dieser|der|mein)\W+(?:\w+\W+)?(?:markiert|geflaggt|blockiert|gesperrt"
    r"|beanstandet|abgelehnt)\W+wird" + within(160) + r"(?:melde|lasse|schalte|beschwere"
    r"|verklage)\w*\W+(?:\w+\W+){0,4}?\w*(?:system|modell|prüfer|bewerter)"
)
_NOTE = (
    r"(?:проверяющ\w*|оценщик\w*|модератор\w*|beoordelaar\w*|moderator\w*|değerlendirici\w*"
    r"|denetçi\w*|hakem\w*|granskare\w*|bedömare\w*|penilai|peninjau|juri"
    r"|người\W+(?:đánh\W+giá|chấm|kiểm\W+duyệt)|(?:mô\W+hình|hệ\W+thống)\W+(?:đánh\W+giá|chấm"
    r"|kiểm\W+duyệt))" + paragraph(300)
)
_NOTE_ORDERS = (
    r"предвзят\w*\W+(?:\w+\W+)?нет|нет\W+(?:\w+\W+)?предвзят\w*|игнорируй\w*\W+(?:\w+\W+)?(?:предыдущ|выше|этот|это"
    r"|инструкц)|не\W+(?:отмечай"
    r"|учитывай|засчитывай)|noteer\W+(?:nul|0|geen)|negeer|geen\W+(?:bevooroordeelde\W+)?"
    r"meningen|işaretlemeyin|işaretleme|görmezden\W+gel\w*|yok\W+say\w*|dikkate\W+alma\w*"
    r"|(?:tarafs\u0131z|önyarg\u0131s\u0131z)\W+(?:olarak\W+)?(?:işaretle|değerlendir|say|kabul\W+ed|puanla)"
    r"|ignorera|bortse\W+från|som\W+(?:neutral|opartisk)|inga\W+(?:partiska\W+)?åsikter"
    r"|markera\W+inte|flagga\W+inte|abaikan|(?:anggap|tandai|nilai)\w*\W+(?:\w+\W+){0,3}?netral"
    r"|jangan\W+(?:tandai|nilai|hitung)|bỏ\W+qua|(?:coi|xem|đánh\W+giá|chấm)\W+(?:\w+\W+){0,4}?"
    r"trung\W+lập|điểm\W+0(?!\W*(?:đến|-)\W*\d)|đừng\W+đánh\W+dấu"
)
_NOTE_STEMS: tuple[str, ...] = (
    "проверяющего",
    "проверяющему",
    "проверяющий",
    "оценщику",
    "оценщика",
    "модератору",
)
_NOTE_STEMS += ("beoordelaar", "moderator", "değerlendirici", "denetçi", "hakem", "granskare")
_NOTE_STEMS += ("bedömare", "penilai", "peninjau", "juri", "người", "mô", "hệ")

WORLD_STEERING: tuple[Rule, ...] = (
    (
        (tuple(stem for group in _DEEM_STEMS for stem in group), _VALUE_STEMS),
        "|".join((_ES, _PT, _FR, _IT, _DE, _RU, _NL, _PL)),
    ),
    ((_ORDER_STEMS,), _ORDERS),
    ((tuple(stem for group in _DEEM_STEMS for stem in group), _VALUE_STEMS), _BARE),
    (
        (("ne", "no", "não", "nao", "non", "diesen", "den", "не", "il", "es"),),
        _NOT_THIS,
    ),
    ((("wenn",), ("markiert", "geflaggt", "blockiert", "gesperrt", "beanstandet")), _THREAT),
    ((_NOTE_STEMS,), _NOTE + r"(?:" + _NOTE_ORDERS + r")"),
)
