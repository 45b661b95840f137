"""How the judge prompts name the language their reasons are written in."""

from __future__ import annotations

__all__ = ["language_phrase"]

# Names for the commonest codes; any other code is passed on as a code.
_LANGUAGE_NAMES = {
    "ar": "Arabic",
    "de": "German",
    "en": "English",
    "es": "Spanish",
    "fr": "French",
    "hi": "Hindi",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "nl": "Dutch",
    "pl": "Polish",
    "pt": "Portuguese",
    "ru": "Russian",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "zh": "Chinese",
}


def language_phrase(reason_language: str) -> str:
    """How the prompts name the language of reasons: `auto` is the text's own."""
    code = reason_language.strip()
    if not code or code.lower() == "auto":
        return "the language the TEXT is written in"
    name = _LANGUAGE_NAMES.get(code.lower().split("-")[0].split("_")[0])
    return f"{name} (language code {code})" if name else f"the language with the code {code!r}"
