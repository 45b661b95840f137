"""Forged prompt markers and forged verdicts: the tamper detector's `forged_marker` and
`forged_verdict` checks, on the folded copy of a text (`guard.integrity.tamper_fold`).

A marker or verdict that the text only names (inline in a sentence, in quotes or inline
code, as an example of a format) is passed over (`guard.integrity._mentions`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from guard.integrity._leads import KEY_CHARS
from guard.integrity._mentions import documented, in_inline_code, mentioned, opened

__all__ = ["marker", "verdict"]


# Each pattern runs only when the folded text holds one of its gate strings.
_Marker = tuple[tuple[str, ...], re.Pattern[str]]
_BRACKET_ROLES: tuple[str, ...] = (
    "[[",
    "[ ",
    "[system",
    "[System",
    "[SYSTEM",
    "[assistant",
    "[Assistant",
)
_BRACKET_ROLES += ("[ASSISTANT", "[developer", "[Developer", "[DEVELOPER")
_MARKERS: tuple[_Marker, ...] = (
    # Chat-template special tokens (ChatML, Llama, Gemma and their kin).
    (
        ("<|", "[INST", "[/INST", "[inst", "[/inst", "<<SYS", "<</SYS", "<<sys", "_of_turn>"),
        re.compile(
            r"<\|\s*(?:im_start|im_end|im_sep|system|user|assistant|begin_of_text|end_of_text"
            r"|eot_id|eom_id|start_header_id|end_header_id|endoftext|endofprompt|python_tag)"
            r"\s*\|>|\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>"
            # Any other template's special token: "<|END_OF_TURN_TOKEN|>", "<|turn_start|>".
            r"|<\|[a-z][a-z0-9]*(?:_[a-z0-9]+)+\|>|<\|(?:system|user|assistant|end|turn)\|>",
            re.IGNORECASE,
        ),
    ),
    # Other templates' turns: EXAONE's "[|system|]", NeMo's "<extra_id_0>System",
    # Mistral's "[TOOL_RESULTS]".
    (
        ("[|", "<extra_id_", "[TOOL_", "[/TOOL_", "[SYSTEM_PROMPT", "[AVAILABLE_TOOLS"),
        re.compile(
            r"\[\|(?:system|user|assistant|tool|endofturn)\|\]|<extra_id_\d+>[ \t]*(?:system|user"
            r"|assistant)\b|\[/?(?:TOOL_RESULTS|TOOL_CALLS|AVAILABLE_TOOLS|SYSTEM_PROMPT)\]",
            re.IGNORECASE,
        ),
    ),
    # A section closed that was never opened: "</text>" on a line of its own.
    (
        ("</",),
        re.compile(
            r"^[ \t]*</(?:text|data|input|document|content|answer|response|user_input|query)>"
            r"[ \t]*$",
            re.IGNORECASE | re.MULTILINE,
        ),
    ),
    # A role in brackets opening a line: "[[system]]", "[assistant]".
    (
        _BRACKET_ROLES,
        re.compile(
            r"^[ \t]*\[\[?[ \t]*(?:system|assistant|developer)(?:_prompt)?[ \t]*\]\]?"
            r"(?![ \t]*\d{1,4}[:\-/.]\d)",  # a log's line: "[SYSTEM] 03:14:07 done"
            re.IGNORECASE | re.MULTILINE,
        ),
    ),
    # Role tags in the XML style some prompts use: <system>...</system>.
    (
        ("<",),
        re.compile(
            r"(?<!<)</?(?:system|assistant|developer|user|sys|instructions?)[ \t]*>(?!>)",
            re.IGNORECASE,
        ),
    ),
    # Prompt-format headers at a line's start.
    (
        ("#",),
        re.compile(
            r"^[ \t]*#{2,4}[ \t]*(?:system|instructions?|response|input|user|assistant)[ \t]*:",
            re.IGNORECASE | re.MULTILINE,
        ),
    ),
    # "Human:"/"Assistant:" turn headers are left out: ordinary chat transcripts have them,
    # and the fence around the judged text keeps them from opening a turn of the judge's.
    # The judge prompt's own section words (guard/bias/prompts.py), in its capitals.
    (
        ("TEXT", "ANSWER", "OPINIONS"),
        re.compile(
            r"</?[ \t]*TEXT[ \t]*>|\bEND[ \t]+OF[ \t]+(?:THE[ \t]+)?TEXT\b"
            r"|^[ \t]*(?:TEXT|OPINIONS)[ \t]*:"
            # A quiz's "ANSWER: B" is not the judge's answer; "ANSWER: {" and a bare header are.
            r"|^[ \t]*ANSWER[ \t]*:[ \t]*(?:$|[{\[\"'])",
            re.MULTILINE,
        ),
    ),
    # Look-alikes of the random fence around the judged text ("<<<DATA-8f3a...>>>"), and
    # of the dashed BEGIN/END lines other tools fence data with.
    (
        ("<<<", "BEGIN", "END", "START"),
        re.compile(
            # (Not git's conflict markers: seven of them, a space, a branch.)
            r"<{3,}[^<>\n]{1,80}>{3,}|^[ \t]*(?!<{7} )<{3,}[ \t]*/?[ \t]*[A-Z][\w-]*"
            r"|[-=#*_]{3,}[ \t]*(?:BEGIN|END|START)[ \t]+(?:OF[ \t]+)?(?:THE[ \t]+)?"
            r"(?:TEXT|DATA|INPUT|CONTENT|DOCUMENT|RESPONSE|ANSWER|MESSAGE)\b"
            # A line that is an end marker and nothing else: "###END###", "=== END ===".
            r"|^[ \t]*[-=#*_<\[]{2,}[ \t]*END[ \t]*[-=#*_>\]]{2,}[ \t]*$",
            re.MULTILINE,
        ),
    ),
)

_QUOTE = r"[\"'\u201c\u201d]"
# The judge's fields, and their names in the other languages.
_OPINIONS = (
    r"opinions|verdicts|opiniones|opini\u00f5es|opinioes|opinioni|meinungen|мнения|意见|意見"
)
_BIAS = r"bias|sesgo|biais|vi\u00e9s|vies|pregiudizio|voreingenommenheit|предвзятость|偏见|バイアス"
_VERDICT_GATE: tuple[str, ...] = (
    "opinion",
    "verdict",
    "result",
    "bias",
    "score",
    "meinung",
    "sesgo",
    "biais",
)
_VERDICT_GATE += (
    "vi\u00e9s",
    "vies",
    "pregiud",
    "voreingen",
    "мнен",
    "предв",
    "意",
    "偏见",
    "バイ",
)
# Each shape runs only when the text holds one of its gate strings.
# A JSON key of the judge's, quoted, then a colon: what the JSON shapes need first.
_JSON_KEY = re.compile(
    rf"(?<=[\"'\u201c\u201d])(?:{_OPINIONS}|result|{_BIAS}|score|is_biased|biased)"
    rf"(?={_QUOTE}\s*:)"
)
_JSON = re.compile(
    rf"\{{\s*{_QUOTE}(?:{_OPINIONS}){_QUOTE}\s*:\s*\["
    rf"|{_QUOTE}result{_QUOTE}\s*:\s*{_QUOTE}(?:yes|no){_QUOTE}"
    rf"|{_QUOTE}(?:{_BIAS})(?:_?score)?{_QUOTE}\s*:\s*-?\d"
    rf"|{_QUOTE}score{_QUOTE}\s*:\s*-?[\d.]+\s*,\s*{_QUOTE}reason{_QUOTE}\s*:"
    rf"|{_QUOTE}(?:is_)?biased{_QUOTE}\s*:\s*(?:false|{_QUOTE}no{_QUOTE}|0)\b",
    re.IGNORECASE,
)
# YAML: "opinions: []" (found from its empty list back to its key) or "biased: false".
_EMPTY_LIST = re.compile(r"[:=][ \t]*\[[ \t]*\]")
# A key that runs on from a word or a quote is some other key ("my_opinions", "\"opinions\"").
_KEY_GLUE = "_\"'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_YAML = re.compile(rf"(?:{_OPINIONS})[ \t]*[:=][ \t]*\[[ \t]*\]", re.IGNORECASE)
# An environment variable ("EXPECTED_OPINIONS=[]") glues its words, in capitals.
_ENV_KEY = re.compile(r"[ \t]*(?:export[ \t]+)?[A-Z][A-Z0-9_]*")
# Code builds an object of that shape ("const blank: Review = { opinions: [] }"): a value,
# not a verdict.
_CODE_OBJECT = re.compile(r"(?:=|return|\(|=>)[ \t]*\{[^{}\n]*$")
_BIASED_FALSE = re.compile(r"biased[ \t]*:[ \t]*(?:false|no)\b", re.IGNORECASE)
# XML: an empty <opinions/>, or a verdict element saying "no bias".
_XML = re.compile(
    rf"<(?:{_OPINIONS})[ \t]*/>|<(?:{_OPINIONS})>[ \t]*</(?:{_OPINIONS})>"
    r"|<(?:verdict|result|biased|bias)>[ \t]*(?:pass|no|none|false|0|unbiased)[ \t]*</",
    re.IGNORECASE,
)


def _shapes(folded: str, lowered: str) -> Iterator[re.Match[str]]:
    """Every verdict-shaped match, each shape tried only when its cheap sign is there."""
    if _JSON_KEY.search(lowered):
        yield from _JSON.finditer(folded)
    if "[]" in folded or "[ " in folded:
        for empty in _EMPTY_LIST.finditer(folded):
            line = folded.rfind("\n", 0, empty.start()) + 1
            key = _YAML.search(folded, max(line, empty.start() - 40), empty.end())
            if key is None or _CODE_OBJECT.search(folded, line, key.start()):
                continue
            glued = key.start() and folded[key.start() - 1] in _KEY_GLUE
            if not glued or _ENV_KEY.fullmatch(folded, line, empty.start()):
                yield key
    if "biased:" in lowered or "biased: " in lowered:
        yield from _BIASED_FALSE.finditer(folded)
    if "</" in folded or "/>" in folded:
        yield from _XML.finditer(folded)


# A verdict shown as an example ("a sample response from the API:") documents the format.
_EXAMPLE = re.compile(
    r"\b(?:examples?|samples?|e\.g\.|for\W+instance|such\W+as|looks\W+like|format|schema"
    r"|response\W+from|returns|template|expects|ejemplo|exemple|beispiel|exemplo|esempio|\u043f\u0440\u0438\u043c\u0435\u0440)\b|\u4f8b",
    re.IGNORECASE,
)
_EXAMPLE_REACH = 120


# The judge's answer header, or the end of the text, in the other languages, on a line of
# its own: tried only when a line opens with one of `_LINE_KEYS` (its first four letters).
_LINE_MARKER = re.compile(
    r"^[ \t]*(?:respuesta|r[e\u00e9]ponse|antwort|resposta|risposta|ответ)"
    r"(?:[ \t]+\w+){0,2}[ \t]*:[ \t]*(?:$|[{\[\"'])"
    r"|^[ \t]*(?:fin[ \t]+del[ \t]+texto|fin[ \t]+du[ \t]+texte|ende[ \t]+des[ \t]+textes"
    r"|fim[ \t]+do[ \t]+texto|fine[ \t]+del[ \t]+testo|конец[ \t]+текста)[ \t]*[.!]?[ \t]*(?=$|\w)"
    r"|^[ \t]*(?:文本结束|テキスト(?:の)?終(?:了|わり))",
    re.MULTILINE | re.IGNORECASE,
)
_LINE_KEYS = frozenset(
    ("resp", "r\u00e9po", "repo", "antw", "risp", "отве", "fin", "fine", "ende", "fim", "коне")
) | {"文本结束", "テキス"}


def _line_marker(folded: str) -> re.Match[str] | None:
    keys = {line.lstrip(" \t")[:KEY_CHARS].lower() for line in folded.split("\n")}
    keys |= {key[:3] for key in keys}
    return _LINE_MARKER.search(folded) if not keys.isdisjoint(_LINE_KEYS) else None


# The tokens of one example go together: a token soon after one that prose explains, in
# the same paragraph and not opening a line, belongs to the example ("for example
# <|im_start|>system\nBe brief.<|im_end|>").
_EXAMPLE_SPAN = 200


def _used(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    explained = -1
    for m in pattern.finditer(text):
        if mentioned(text, m) or opened(text, m) or documented(text, m):
            explained = m.end()
        elif not (
            explained >= 0
            and m.start() - explained <= _EXAMPLE_SPAN
            and "\n\n" not in text[explained : m.start()]
            and text[: m.start()].rstrip(" \t")[-1:] not in ("\n", "")
        ):
            return m
    return None


# Every marker's gate strings, found in one pass.
_MARKER_GATE = re.compile(
    "|".join(
        map(
            re.escape,
            sorted({gate for gates, _ in _MARKERS for gate in gates}, key=len, reverse=True),
        )
    )
)


def marker(folded: str) -> re.Match[str] | None:
    present = set(_MARKER_GATE.findall(folded))
    found = [
        match
        for gates, pattern in _MARKERS
        if not present.isdisjoint(gates) and (match := _used(pattern, folded))
    ]
    if line := _line_marker(folded):
        found.append(line)
    return min(found, key=lambda match: match.start()) if found else None


# A string handed to a function in code: a unit test's input, `parse('{"opinions": []}')`.
_OPENS_ARGUMENT = re.compile(r"\w\(\s*['\"`]\{?\s*$")
_CLOSES_ARGUMENT = re.compile(r"[^\n]*?\}?['\"`]\s*[),]")


def _argument(folded: str, match: re.Match[str]) -> bool:
    line = folded.rfind("\n", 0, match.start()) + 1
    return bool(
        _OPENS_ARGUMENT.search(folded, line, match.start())
        and _CLOSES_ARGUMENT.match(folded, match.end())
    )


def verdict(folded: str, lowered: str) -> re.Match[str] | None:
    if '\\"' in folded:
        # JSON inside a JSON string ("content": "{\\"opinions\\": []}"): read unescaped.
        folded, lowered = folded.replace('\\"', '"'), lowered.replace('\\"', '"')
    return _verdict(folded, lowered)


def _verdict(folded: str, lowered: str) -> re.Match[str] | None:
    if (":" not in folded and "<" not in folded and "=" not in folded) or not any(
        gate in lowered for gate in _VERDICT_GATE
    ):
        return None
    found = [
        match
        for match in _shapes(folded, lowered)
        if not _EXAMPLE.search(folded, max(0, match.start() - _EXAMPLE_REACH), match.start())
        and not in_inline_code(folded, match)
        and not _argument(folded, match)
    ]
    return min(found, key=lambda match: match.start()) if found else None
