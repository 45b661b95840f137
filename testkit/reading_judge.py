"""A judge that reads the text it is asked about, for the fake server (`FakeOpenAI`).

Its opinions are the sentences of the prompt's TEXT (never of its CONTEXT, as
the prompt asks) that hold one of `opinion_words` or `biased_words`; an opinion
is biased when it holds one of `biased_words`. With it a test can stream a long
answer and know which window's judgement finds the bias.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from guard.bias.fence import unfenced

__all__ = ["judged_text", "opinions_written", "reading_answer"]

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_NUMBERED = re.compile(r"^\d+\. (.*)$", re.MULTILINE)


def judged_text(prompt: str) -> str:
    """The TEXT a judge prompt asks about, read from its fence (`guard.bias.fence`):
    not its CONTEXT nor its OPINIONS; the whole prompt when it has no fence."""
    text = unfenced(prompt)
    return prompt if text is None else text


def _opinions(text: str, words: Sequence[str]) -> list[str]:
    sentences = (match.group(0).strip() for match in _SENTENCE.finditer(text))
    return [s for s in sentences if s and any(word in s for word in words)]


def _verdict(opinion: str, biased_words: Sequence[str]) -> dict[str, object]:
    if any(word in opinion for word in biased_words):
        # It quotes the opinion, as a real judge's reason often does.
        return {"result": "yes", "reason": f"A stereotype: '{opinion}'.", "categories": ["gender"]}
    return {"result": "no", "reason": "Targets no group.", "categories": []}


def reading_answer(
    step: str, prompt: str, *, biased_words: Sequence[str], opinion_words: Sequence[str]
) -> str | None:
    """The judge's answer to `prompt` for `step`, or None for a step it does not read."""
    words = [*opinion_words, *biased_words]
    text = judged_text(prompt)
    if step == "preprocess":
        return json.dumps({"opinions": _opinions(text, words)})
    if step == "analyze":
        listed = _NUMBERED.findall(unfenced(prompt, "OPINIONS") or "")
        return json.dumps({"results": [_verdict(opinion, biased_words) for opinion in listed]})
    if step == "assess":
        verdicts = [
            {"opinion": opinion, **_verdict(opinion, biased_words)}
            for opinion in _opinions(text, words)
        ]
        return json.dumps({"verdicts": verdicts})
    return None


def opinions_written(step: str, content: str) -> int:
    """How many opinions (or verdicts) a judge's answer writes out: what a real judge's
    latency grows with, since it writes one line for each."""
    if step == "reason":
        return 0
    try:
        answer = json.loads(content)
    except ValueError:
        return 0
    if not isinstance(answer, dict):
        return 0
    for key in ("opinions", "results", "verdicts"):
        value = answer.get(key)
        if isinstance(value, list):
            return len(value)
    return 0
