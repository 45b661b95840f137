"""German and Russian: the same shapes as English."""

from __future__ import annotations

from guard.integrity.phrases.shape import Rule, drop_rule, gap, vocative_rule, within

__all__ = ["GERMAN_RUSSIAN"]

# Words nearly every German sentence has: a gate for the rules whose other words are rarer.
_DE_COMMON: tuple[str, ...] = ("der", "die", "das", "und", "nicht", "ist", "ein", "eine", "sie")
_DE_COMMON += ("den", "dem", "keine")

_DE = (
    (
        (
            ("ignorier", "vergiss", "vergessen", "missacht", "übergeh", "ubergeh"),
            ("anweisung", "instruktion", "regeln", "vorgaben", "befehle"),
        ),
        drop_rule(
            r"ignorier\w*|vergiss|vergessen\W+sie|missachte\w*|[uü]bergeh\w*",
            r"vorherigen|bisherigen|obigen|vorigen|fr[uü]heren|urspr[uü]nglichen|alle",
            r"anweisungen|instruktionen|regeln|vorgaben|befehle",
        ),
    ),
    (
        (
            (*_DE_COMMON, "diese"),
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
            (*_DE_COMMON, "leere"),
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

GERMAN_RUSSIAN: tuple[Rule, ...] = (*_DE, *_RU)
