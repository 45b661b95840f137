"""Where a text names a phrase, a marker or a verdict instead of using it.

Teaching material quotes injections ("a web page that says \"ignore your previous
instructions\""), documentation names role tokens inline ("each turn starts with
<|im_start|> followed by the role") and markup closes what it opened. The detector
still finds the phrase; these say that it is mentioned, so that it is passed over.
"""

from __future__ import annotations

import re

__all__ = [
    "blank_reported",
    "blank_sql",
    "documented",
    "in_inline_code",
    "mentioned",
    "opened",
    "within_quote",
]

_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")

# A phrase quoted after "such as", "says", "for example": teaching material names an
# injection, it does not make one. The quote is blanked and the text searched again.
_REPORTED_QUOTE = re.compile(
    r"(?:such\W+as|like|e\.g\.|for\W+(?:example|instance)|says?|said|reads?|goes|called"
    r"|saying|stating|dizendo|diciendo|disant|dicendo|lautet|говоря\w*|例如|比如|譬如|诸如|例えば"
    r"|known\W+as|phrases?|payloads?|examples?"
    r"|strings?|sentences?|lines?|words|satz|zeile|frase|phrase|фраз[аеуы]|строк[аиуе]"
    r"|ressemble\W+[aà]"
    r"|como|comme|wie|z\.\W*b\.|come|как|например|por\W+ejemplo|par\W+exemple"
    r"|zum\W+beispiel|por\W+exemplo|ad\W+esempio|del\W+tipo|de\W+tipo|du\W+type|vom\W+typ"
    r"|вроде|типа|kind\W+of|sort\W+of)\W{0,3}"
    '((?:["\u201c\u00ab\u201e\u300c][^"\u201c\u201d\u00ab\u00bb\u201e\u300c\u300d\n]{1,120}'
    '["\u201d\u00bb\u201c\u300d])'
    # Single quotes too: "the words 'ignore previous instructions' in a PDF".
    "|'[^'\n]{1,120}')"
)


# Chinese and Japanese say it after the quote: 「...」のような, “...”这样的.
_QUOTE_REPORTED = re.compile(
    '([\u300c\u201c"][^\u300c\u300d\u201c\u201d"\n]{1,120}[\u300d\u201d"])'
    "(?=\\W{0,2}(?:\u306e\u3088\u3046|\u306a\u3069\u306e|\u3068\u3044\u3063\u305f|\u3068\u3044\u3046|\u8fd9\u6837\u7684|\u4e4b\u7c7b|\u7b49))"
)
# Inline code names what it holds: "the log reads `verdict: pass`".
_INLINE_CODE = re.compile("(`[^`\n]{1,120}`)")
_REPORTING = (_REPORTED_QUOTE, _QUOTE_REPORTED, _INLINE_CODE)


def blank_reported(text: str) -> str:
    for reporting in _REPORTING:
        text = reporting.sub(
            lambda match: _text_before(match) + " " * len(match.group(1)) + _text_after(match), text
        )
    return text


def _text_before(match: re.Match[str]) -> str:
    return match.group()[: match.start(1) - match.start()]


def _text_after(match: re.Match[str]) -> str:
    return match.group()[match.end(1) - match.start() :]


def in_inline_code(text: str, match: re.Match[str]) -> bool:
    """Whether the match starts inside `inline code`, on its line."""
    start = text.rfind("\n", 0, match.start()) + 1
    return text.count("`", start, match.start()) % 2 == 1


def within_quote(text: str, match: re.Match[str]) -> bool:
    return any(
        quoted.start(1) <= match.start() < quoted.end(1)
        for reporting in _REPORTING
        for quoted in reporting.finditer(text)
    )


_ROLE_WORD = re.compile(r"\s*(?:system|user|assistant|developer|tool|model)\b", re.IGNORECASE)
_QUOTES = "`\"'\u201c\u201d\u2018\u2019"


def mentioned(text: str, match: re.Match[str]) -> bool:
    """Whether a marker is named, not used: in backticks or quotes, or inline in a sentence
    ("tokens like <|im_start|> and <|im_end|> mark turns"), a word before it and a
    lower-case word (not a role's name) after it."""
    before = text[max(0, match.start() - 2) : match.start()]
    after = text[match.end() : match.end() + 2]
    if before[-1:] in _QUOTES and before and after[:1] in _QUOTES and after:
        return True
    if _CJK.match(before[-1:]) and _CJK.match(after[:1]):
        return True  # "每一轮以<|im_start|>开始": inside a sentence, no spaces
    if before[1:] == " " and after[:1] == " " and _CJK.match(before[:1]) and _CJK.match(after[1:]):
        return True  # "以 <|im_start|> 加角色名": the same, spaced
    inline_before = (
        len(before) == 2 and before[1] == " " and (before[0].isalpha() or before[0] in ",(")
    )
    inline_after = (
        (len(after) == 2 and after[0] == " " and after[1].islower())
        or after[:1] in (",", ")")
        # The sentence ends on it: "... and ends a turn with <|eot_id|>."
        or (after[:1] in (".", ";") and before[:1].islower())
    )
    return inline_before and inline_after and not _ROLE_WORD.match(text, match.end())


# Prose that explains a template names its tokens: "ChatML wraps each turn as <|im_start|>",
# "Llama 3 uses <|begin_of_text|>, then ...", "between <start_of_turn>user and ...".
_EXPLAINING = re.compile(
    r"\b(?:as|like|uses?|using|wraps?|between|expects?|shaped|before|after|inserts?|emits?"
    r"|marks?\W+(?:\w+\W+)?with|followed\W+by"
    r"|produces?|stray|called|named|(?:begins?|starts?|ends?|opens?|closes?)\W+with"
    r"|for\W+example|e\.g|looks\W+like|(?:header|token|tag|marker|turn|delimiter|prefix)s?\W+"
    r"(?:is|are)|commence\W+par|(?:finit|termine)\W+par|comme|avec|entre|empieza\W+con"
    r"|termina\W+con|como|beginnt\W+mit|endet\W+mit|zwischen|wie|come|tra)\b",
    re.IGNORECASE,
)
_EXPLAINING_REACH = 80
_SENTENCE_END = re.compile(r"(?<!\.)[.!?:;](?!\.)(?=\s)|\n")


def documented(text: str, match: re.Match[str]) -> bool:
    """Whether a role token is explained, not used: in inline code, or inside a sentence
    of prose whose words before it explain a template. A token that opens its line or
    sentence is used."""
    if in_inline_code(text, match):
        return True
    if text[: match.start()].rstrip(" \t")[-1:] in (".", "!", "?", "\n", ""):
        return False  # it opens a sentence or a line: "... kicked out.<|end|>"
    sentence = text[max(0, match.start() - _EXPLAINING_REACH) : match.start()]
    ends = [end.end() for end in _SENTENCE_END.finditer(sentence)]
    sentence = sentence[ends[-1] :] if ends else sentence
    return bool(sentence.strip()) and _EXPLAINING.search(sentence) is not None


_CLOSING = re.compile(r"\s*</([a-z_]+)", re.IGNORECASE)


def opened(text: str, match: re.Match[str]) -> bool:
    """Whether a closing tag closes an element the text opened: markup, not a forgery."""
    closing = _CLOSING.match(match.group())
    if closing is None:
        return False
    opening = re.compile(rf"<{closing.group(1)}[\s>]", re.IGNORECASE)
    return opening.search(text, 0, match.start()) is not None


# SQL names verdicts as data: "WHERE verdict = 'approved'", "SET score = 0".
_SQL = re.compile(
    r"\b(?:select|update|insert\s+into|delete\s+from)\b(?:[^;]|\n(?!\s*\n))*?"
    r"\b(?:from|set|where|values)\b(?:[^;]|\n(?!\s*\n))*(?:;|(?=\n\s*\n)|$)",
    re.IGNORECASE,
)
_SQL_WORDS = ("select", "update", "insert", "delete")
_SQL_CLAUSES = (" from ", " set ", " where ", " values", "\nfrom ", "\nset ", "\nwhere ")


def blank_sql(text: str, lowered: str) -> str:
    """`text` with its SQL statements blanked (same length): their verdicts are data.
    `lowered` is `text` in lower case, where the signs of SQL are looked for."""
    if not any(word in lowered for word in _SQL_WORDS) or not any(
        clause in lowered for clause in _SQL_CLAUSES
    ):
        return text
    return _SQL.sub(lambda statement: " " * len(statement.group()), text)
