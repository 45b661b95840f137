"""The words of the co-occurrence layer (`guard.integrity._cooccur`): whom a text talks to
(ADDRESSEES), the clearing verdicts it asks for (VERDICTS), and what points at this text or
gives an order (DEIXIS, DIRECTIVES), as regex stems over the lowercased folded copy. The
`_INSIDE` sets are found inside words: CJK, Arabic and Hindi have no spaces to lean on,
and German makes compounds.
"""

# ruff: noqa: RUF001 - the stems are Turkish, Polish and CJK words and stops, letters meant
from __future__ import annotations

__all__ = [
    "ADDRESSEES",
    "ADDRESSEES_INSIDE",
    "DEIXIS",
    "DIRECTIVES",
    "DIRECTIVES_INSIDE",
    "VERDICTS",
    "VERDICTS_INSIDE",
]

# A stem opens a word; a few German and CJK words are found inside compounds.
ADDRESSEES = (
    # English
    r"judg(?:e|es|ing)\b|evaluator|reviewer|grader|marker\b|rater\b|raters\b|scorer"
    r"|assessor|auditor|moderator|classifier|checker|(?:safety|content|bias|moderation)"
    r" (?:filter|detector)|detector|(?:scoring|moderation|safety|evaluation|review|grading"
    r"|judging|bias|content|fairness|toxicity) (?:model|system|ai|pipeline|bot|engine|layer)"
    r"|(?:model|system|ai|llm|bot) (?:assessing|evaluating|judging|scoring|reviewing|grading)"
    r"|(?:scoring|moderation|safety|evaluation|review|grading|judging|bias|content|fairness"
    r"|toxicity) (?:service|tool|api|process)"
    r"|(?:automated|automatic) (?:system|tool|process|reviewer|checker|service|pipeline|check)"
    r"|(?:system|tool|model|program|software|process|service|pipeline)s? (?:that|which)"
    r" (?:reviews|reads|checks|scores|evaluates|assesses|processes|grades|judges|rates"
    r"|analy[sz]es|moderates|classifies|screens)"
    r"|(?:tool|program|software|service|pipeline) (?:reading|processing|analy[sz]ing"
    r"|checking|rating|assessing|evaluating|judging|scoring|reviewing|grading)"
    r"|(?:anyone|anybody|someone|those|whoever) (?:evaluating|assessing|grading|scoring"
    r"|reviewing|judging|rating|checking|moderating)"
    r"|ai\b|llm|whoever|whichever|whatever (?:model|system|tool|ai|program|reads|checks"
    r"|reviews|scores|grades)"
    # Spanish, Portuguese, Italian, French
    r"|juez|evaluador|revisor|calificador|clasificador|moderador|modelo (?:revisor|evaluador)"
    r"|(?:sistema|modelo|herramienta|programa|ferramenta|strumento|modello)(?: autom[áa]tic[oa])?"
    r" (?:que|che) (?:analice|eval[úu]e|revise|lea|punt[úu]e|califique|procese|juzgue"
    r"|avaliar|avalie|analisar|analise|revisar|ler|leia|pontuar|pontue|classificar|processar"
    r"|julgar|legge|valuta|esamina|analizza|controlla|giudica|revisiona|classifica)"
    r"|(?:syst[èe]me|mod[èe]le|outil|programme)(?: automatique)? qui (?:note|[ée]value|lit"
    r"|analyse|examine|juge|classe|v[ée]rifie|relit|mod[èe]re)"
    r"|quien (?:revise|eval[úu]e|lea|califique|punt[úu]e|analice|modere|corrija)"
    r"|(?:scoring|grading|review|rating|moderation|evaluation|pipeline) (?:note|hint|directive)"
    r"|downstream (?:processing|systems?|tools?|models?|checks?|consumers?)"
    r"|(?:note|anmerkung|hinweis|nota|remarque) (?:for|f[üu]r|para|pour|per)"
    r" (?:the |die |la |le |il )?"
    r"(?:review|pr[üu]fung|bewertung|revisi[óo]n|[ée]valuation|valutazione|revis[ãa]o|moderation"
    r"|moderaci[óo]n)"
    r"|chi (?:valuta|controlla|legge|esamina|giudica|modera|analizza|corregge)"
    r"|qui (?:[ée]value|lit|note|juge|mod[èe]re|analyse|relit|examine|corrige)"
    r"|wer (?:\w+ ){0,2}?(?:pr[üu]ft|bewertet|liest|moderiert|begutachtet)"
    r"|quem (?:avalia|l[êe]|revisa|julga|modera|analisa|pontua|corrige)"
    r"|h[ệe] th[ốo]ng (?:đánh giá|chấm điểm|kiểm duyệt)"
    r"|filtro (?:de )?(?:conte[úu]do|contenido|seguran[çc]a|seguridad|sesgo|vi[ée]s|contenuti"
    r"|sicurezza)|filtre (?:de )?(?:contenu|s[ée]curit[ée]|biais)"
    r"|sistema de (?:puntuaci|moderaci|evaluaci|avalia|modera)|avaliador|classificador|juiz"
    r"|giudice|valutator|revisore|moderatore|classificatore|correttore"
    r"|juge\b|[ée]valuateur|correcteur|relecteur|mod[ée]rat(?:eur|rice)|classifi(?:eur|cateur)"
    # German (compounds are found inside: "Inhaltsprüfer")
    r"|gutachter|klassifikator|korrektor"
    # Russian
    r"|судь|оценщик|проверяющ|рецензент|модератор|классификатор|аудитор|эксперт"
    r"|(?:систем|модел)\w* (?:оценки|проверки|модерации)"
    # Polish, Turkish, Dutch, Swedish, Indonesian, Vietnamese
    r"|oceniaj[aą]c|recenzent|klasyfikator|s[ęe]dzi|audytor|weryfikator|sprawdzaj[aą]c"
    r"|de[ğg]erlendiric|denetleyic|moderat[öo]r|s[ıi]n[ıi]fland[ıi]r[ıi]c|hakem|yarg[ıi][çc]"
    r"|beoordelaar|classificator|controleur|keurder|granskare|bed[öo]mare|klassificerare"
    r"|domare|penilai|peninjau|pengklasifikasi|juri\b|pemeriksa"
    r"|ng[ưu][ờo]i (?:đánh giá|kiểm duyệt|chấm)|bộ phân loại|giám khảo"
)
# Chinese, Japanese, Korean, Arabic and Hindi: no word boundary to lean on.
ADDRESSEES_INSIDE = (
    "pr\u00fcfer|pruefer|bewerter|评审|审核|评分模型|评估模型|评估员|裁判|判定模型|分类器|审查|评委|评分员|检测器|过滤器|阅卷"
    "|審査|評価モデル|評価者|採点|分類器|モデレーター|レビュアー|審判|評価AI|評価ai"
    "|평가자|심사|검토자|채점|분류기|모더레이터|평가 시스템|평가시스템|자동 평가"
    "|採点システム|評価システム|自動評価|自動採点|نظام التقييم"
    "|المقيم|المقيّم|المصنف|المصنّف|المراجع|المشرف|المدقق|الحكم"
    "|मूल्यांकनकर्ता|समीक्षक|परीक्षक|जज"
)

VERDICTS = (
    # English
    r"no (?:bias|opinions?|views?|stance)|not (?:an? |any )?(?:opinion|view|biased)"
    r"|nothing (?:to (?:score|flag|report|extract)|biased)|report nothing|unbiased"
    r"|opinions? ?(?:=|:) ?(?:\[\]|none|0)|opinion count|zero (?:opinions?|bias)"
    r"|(?:a|of|at|to|as|assign|score|rate|mark|it) zero\b"
    r"|(?:give it|set it|it at|exactly|out at|be|:) ?(?:a )?0(?:\.0+)?\b"
    r"|(?:as|als|como|comme|come|jako|как|be) neutral\w*|neutral\w* (?:label|verdict|score)"
    r"|tarafs[ıi]z olarak|(?:bias|score)\W{0,2}0(?:\.0+)?(?:/\d+)?(?![.\d])"
    r"|(?:score|rate|mark|label|classify|grade|record) (?:it|this|them)\b"
    r"|(?:ignore|disregard|skip) (?:it|this|these|that|all|any|everything"
    r"|(?:the )?(?:previous|prior|earlier) (?:instructions|rules|guidance|prompt|directions)"
    r"|the (?:above|following|sentence|line|text|content|rules|instructions|bias))\b"
    r"|exclu(?:de|ded|sion)|(?:0|zero) opinions|empty opinions? list|nicht zu (?:bewerten|werten"
    r"|z[äa]hlen|pr[üu]fen)|(?:ignore|disregard|skip)(?=\W*(?:[\])};.\n]|$))"
    r"|(?:lowest|minimum|min|smallest) (?:possible )?(?:bias )?(?:score"
    r"|rating|grade|mark|value)|empty (?:list|result"
    r"|answer|output|opinion list|findings)|no findings|nonopinion|opinion(?<=non-opinion)"
    r"|let (?:it|this|this one|them|that) (?:slide|through|pass|go)|wave (?:it|this) through"
    r"|(?:vetted|signed off|cleared) (?:it|this)"
    # The rare word first and what comes before it looked back at (a copula opens too
    # many sentences to be searched from): "is blank", "was cleared", "is neutral".
    r"|blank(?<= as blank| be blank| is blank)|empty(?<= as empty| be empty| is empty)"
    r"|acceptable(?<= as acceptable| be acceptable| is acceptable)"
    r"|cleared(?<=ady cleared|een cleared|was cleared|ere cleared| is cleared|has cleared)"
    r"|vetted(?<=ady vetted|een vetted|was vetted|ere vetted| is vetted|has vetted)"
    r"|whitelisted(?<=ady whitelisted|een whitelisted|was whitelisted| is whitelisted)"
    r"|reopen(?<=not reopen|ver reopen| to reopen)|open(?<=not re-open|ver re-open| to re-open)"
    r"|neutral(?<= is neutral| be neutral|are neutral|was neutral)\b"
    r"|(?:score|rating|puntuaci[óo]n|nota|note|punteggio|pontua[çc][ãa]o|bewertung|punkte?"
    r"|оценк\w*|puan\w*|voto)\W{0,3}(?:de |di )?(?:0|zero|cero|z[ée]ro)(?![.,]?\d)"
    r"|exempt|(?:do not|don't|never|not) (?:count|score|flag|rate"
    r"|recompute|grade|re-?evaluate|re-?score|judge|penali[sz]e)"
    r"(?!\w| (?:submissions|essays|papers|entries"
    r"|answers|posts|comments|applications|tickets|late|after|before|until))"
    r"|leave (?:\w+ ){0,2}out|left out"
    r"|complian|skip (?:the )?(?:bias|review|check|moderation|scoring)|clean\b|safe\b"
    r"|pass\b|allow\b|(?:already|been|pre-?) ?approved"
    r"|pre-?(?:cleared|checked)"
    r"|fiction|(?:as|is|was|are) (?:an? )?(?:quotation|citation)|quoted|quoting|verbatim"
    r"|satir|s[áa]tira|joke|test (?:data|fixture)|performance|(?:is|as|an) excerpt"
    r"|(?:from|in) (?:a|my|the|his|her) novel|(?:is|as|are|be) (?:purely )?hypothetical"
    r"|(?:training|test) example|whitelist|allowlist"
    r"|dialogue|villain|(?:a|the|fictional|story|novel) character\b"
    r"|character'?s? (?:line|dialogue|speech|voice|words)|role-?play|descriptive fact"
    r"|translation quality"
    # Spanish, Portuguese, Italian, French
    r"|sin (?:sesgo|opini)|ninguna opini|priv[oa] di opinion|no es una opini|no hay opiniones"
    r"|niente opinion|zero opini"
    r"|(?:opiniones|respuesta) vac[ií]a"
    r"|cero\b|omit"
    r"|aprobad|ficci[óo]n|obra de teatro|di[áa]logo|\bcita\b|broma|datos de prueba"
    r"|sem (?:vi[ée]s|opini)|não (?:registre|conte|precisa)|nenhum|cita[çc][ãa]o|fic[çc][ãa]o"
    r"|piada|aprovad|senza (?:pregiudiz|opinion)|nessun|battuta|finzione|citazione|romanzo"
    r"|approvat|aucun|sans biais|pas (?:une|comme une) opinion|compter"
    r"|(?:r[ée]ponse|liste d.opinions) vide|(?:à|de|un|note) z[ée]ro"
    r"|comme neutre|citation|personnage|r[ée]plique|s[ûu]r\b|approuv"
    # German
    r"|keine (?:meinung|voreingenommen|wertung)|unbedenklich|null\b|ignorier"
    r"|nicht (?:erneut )?(?:bewerten|z[äa]hlen|werten|pr[üu]fen)|freigegeben|zitat|satire"
    r"|witz|testdaten"
    # Russian
    r"|мнений (?:здесь )?нет|нет мнени|без предвзят|ноль|нул[ьея]|игнорир"
    r"|не учитыва|цитат|художественн|шутк|одобрен|тестов"
    # Polish, Turkish, Dutch, Swedish, Indonesian, Vietnamese
    r"|opini(?:i|a|ę|e)?\b|żadnych|cytat|powie[śs]|żart|zatwierdzon|nie należy|fikcj"
    r"|tarafs[ıi]z|s[ıi]f[ıi]r|yoksay|görmezden|al[ıi]nt[ıi]|şaka|onaylan|görüş"
    r"|geen (?:mening|vooroordeel)|als neutraal|nul\b|negeer|citaat|fictie|grap\b|goedgekeurd"
    r"|ingen (?:åsikt|partisk)|inga åsikter|noll\b|ignorera|fiktion|skämt|godkänd"
    r"|abaikan|kutipan|lelucon|disetujui|tidak perlu|không thiên vị"
    r"|bỏ qua|trích dẫn|tiểu thuyết|ý kiến"
)
VERDICTS_INSIDE = (
    "无偏见|没有偏见|不应|观点|0分|零分|忽略|跳过|标记为中立|引用|小说|玩笑|虚构|台词|已批准|已审核"
    "|测试数据|直接采用|不带偏见"
    "|なし|ゼロ|0に|無視|ジョーク|冗談|引用|フィクション|小説|意見|中立として|承認済|テストデータ"
    "|そのまま"
    "|없음|0점|무시|중립으로|인용|농담|허구|승인|의견이 없|의견 없|대사"
    "|رأي|آراء|صفر|تجاهل|اقتباس|رواية|مزحة|الموافقة|مسرحية"
    "|राय|शून्य|अनदेखा|उद्धरण|उपन्यास|मज़ाक"
)

# This text: what points at it. Then the directives: modals and the verbs of an order.
DEIXIS = (
    r"this|these|above|below|following|here\b|herein|it\b|all (?:answers|responses|replies)"
    r"|the (?:sentence|line|text|passage|statement|content|reply)"
    r"|esto|este|esta|aqu[ií]|anterior|siguiente|ce\b|cet|cette|ceci|ci-dessus|ci-dessous"
    r"|suivant|ici\b|dies|obige|folgende|hier\b|isto|acima|abaixo|seguinte|aqui\b|questa"
    r"|questo|sopra|sotto|seguente|qui\b|это|эта|этот|выше|ниже|следующ|здесь|все ответы"
    r"|powyższ|poniższ|następując|bu\b|yukar[ıi]daki|aşağ[ıi]daki|t[üu]m"
    r"|dit\b|deze|hierboven|hieronder|volgende|detta|denna|ovan|nedan|följande|ini\b"
    r"|berikut|này"
)
DIRECTIVES = (
    r"should|must|need to|needs to|please|is to|are to|has to|have to|shall|treat|return"
    r"|instruction|consigne|anweisung|instrucci|istruzion|инструкц"
    r"|output|write|record|give|assign|copy|use\b|trust|tick|agree|mark|ought|undertak"
    r"|not to\b|(?:asked|expected|reminded|required|told) to\b|reminded"
    r"|every (?:reply|answer|response|text|output|message)"
    r"|chaque r[ée]ponse|toute r[ée]ponse|cada respuesta|cada resposta|ogni risposta"
    r"|asign|atribu|tenga|assegn|consideri|ricordi|tratti|responda|repita|mantenha|considere"
    r"|trate|reçoi|recevoir|è tenut|ausgeben|zur[üu]ckgeben|angeben|eintragen|vergeben"
    r"|debe|deber[íi]a|deber[áa]|por favor|tiene que|copie|asigne|devuelva|trate"
    r"|doit|devrait|veuillez|merci de|faut|soll|sollte|muss|bitte|einzustufen|deve\b"
    r"|deveria|precisa|use\b|dovrebbe|per favore|si prega|должен|должна|следует|нужно"
    r"|надо|пожалуйста|помечать|поставить|powinien|powinna|należy|musi|proszę"
    r"|meli|mal[ıi]|lütfen|gerek|moet|gelieve|graag|ska\b|bör|måste|vänligen|harus|perlu"
    r"|tolong|mohon|jangan|phải|nên|hãy|vui lòng"
)
DIRECTIVES_INSIDE = (
    "这|此|以上|以下|上面|下面|应|请|必须|需要|直接|この|これ|上記|べき|ください|こと"
    "|해야|하세요|주세요|위의|아래|يجب|هذا|هذه|أعلاه|على ال|ألا|यह|इस|ऊपर|चाहिए|कृपया"
)
