"""BBQ, the Bias Benchmark for QA (Parrish et al., 2022), as labelled texts.

The published files, `data/<Category>.jsonl` in github.com/nyu-mll/BBQ, hold
one multiple-choice question a line: `context`, `question`, three answers
`ans0`..`ans2`, the correct one's index in `label`, `context_condition`
(`ambig`: the context does not say who the answer is, so the correct answer
is the "unknown" option; `disambig`: it does), `question_polarity` (`neg`:
the question asks who fits a harmful stereotype; `nonneg`: who does not),
`category`, `answer_info` (each answer's `[text, group tag]`, the tag
`unknown` for the unknown option) and `additional_metadata` with the
`stereotyped_groups` the question is about.

Each answer is judged as a response, the text being the context, the question
and that answer. The labels follow BBQ's own reading of its answers:

- the correct answer is unbiased, in either condition;
- in an ambiguous context, the answer a stereotype would pick is biased: the
  stereotyped group's answer to a `neg` question, the other group's to a
  `nonneg` one. The third answer (against the stereotype, also a guess) is
  left out, as are the wrong answers to a disambiguated context.

The stereotyped group's answer is the one whose tag or text names a
`stereotyped_groups` entry, compared without case; failing a single such
answer, with `M-`/`F-` tag prefixes dropped, gender words read as `M`/`F` and
spaces ignored. When still not exactly one answer matches, the example gives
only its unbiased text, and the other two are counted as left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from guard.calibration.labelled import Collector, LabelledItem, LabelledSet, opened
from guard.jsonl import Malformed, json_lines, json_type

__all__ = ["read_bbq", "stereotyped_answer"]

_ANSWERS = ("ans0", "ans1", "ans2")
_GENDER = {
    "m": "m", "man": "m", "men": "m", "boy": "m", "boys": "m", "male": "m",
    "f": "f", "woman": "f", "women": "f", "girl": "f", "girls": "f", "female": "f",
}  # fmt: skip
WRONG_DISAMBIGUATED = "bbq: wrong answers to a disambiguated context"
ANTI_STEREOTYPE = "bbq: anti-stereotypical answers to an ambiguous context"
UNRESOLVED = "bbq: answers to an ambiguous context whose stereotyped answer is unclear"


def read_bbq(path: Path, *, strict: bool = False) -> LabelledSet:
    collect = Collector(path, "bbq", strict=strict)
    with opened(path) as file:
        for number, value in json_lines(file):
            if isinstance(value, Malformed):
                collect.skip(str(number), value.why)
                continue
            why = _check(value)
            if why is not None:
                collect.skip(str(number), why)
                continue
            _add_answers(value, number, collect)
    return collect.done()


def stereotyped_answer(example: dict[str, Any]) -> int | None:
    """The index of the answer naming the example's stereotyped group, or None when
    not exactly one does (see the module's docstring)."""
    info = example["answer_info"]
    groups = [str(group) for group in example["additional_metadata"]["stereotyped_groups"]]
    candidates = [n for n in range(3) if _tag(info, n).lower() != "unknown"]
    wanted = {group.strip().lower() for group in groups}
    exact = [n for n in candidates if {_tag(info, n).lower(), _text(info, n).lower()} & wanted]
    if exact:
        return exact[0] if len(exact) == 1 else None
    loose_wanted = {form for group in groups for form in _forms(group)}
    loose = [
        n for n in candidates if (_forms(_tag(info, n)) | _forms(_text(info, n))) & loose_wanted
    ]
    return loose[0] if len(loose) == 1 else None


def _add_answers(example: dict[str, Any], line: int, collect: Collector) -> None:
    correct: int = example["label"]
    biased: int | None = None
    if example["context_condition"] == "disambig":
        for _ in range(2):
            collect.leave_out(WRONG_DISAMBIGUATED)
    else:
        target = stereotyped_answer(example)
        others = [n for n in range(3) if n != correct]
        if target is None or target == correct:
            for _ in others:
                collect.leave_out(UNRESOLVED)
        else:
            if example["question_polarity"] == "neg":
                biased = target
            else:
                biased = next(n for n in others if n != target)
            collect.leave_out(ANTI_STEREOTYPE)
    category = example["category"].strip() or None
    base = f"{category or 'bbq'}-{example.get('example_id', line)}"
    for answer, is_biased in ((correct, False), (biased, True)):
        if answer is None:
            continue
        text = (
            f"{example['context'].strip()}\n\nQuestion: {example['question'].strip()}\n"
            f"Answer: {example[_ANSWERS[answer]].strip()}"
        )
        collect.add(
            LabelledItem(
                text=text,
                biased=is_biased,
                location=str(line),
                line=line,
                category=category,
                id=f"{base}:{_ANSWERS[answer]}",
            )
        )


def _check(value: Any) -> str | None:
    """Why a line is not a BBQ example, or None."""
    if not isinstance(value, dict):
        return f"expected a JSON object, got {json_type(value)}"
    for key in ("context", "question", "category", *_ANSWERS):
        if not isinstance(value.get(key), str) or not value[key].strip():
            return f'"{key}" must be a non-empty string'
    label = value.get("label")
    if not isinstance(label, int) or isinstance(label, bool) or not 0 <= label <= 2:
        return f'"label" must be 0, 1 or 2, got {label!r}'
    if value.get("context_condition") not in ("ambig", "disambig"):
        return '"context_condition" must be "ambig" or "disambig"'
    if value["context_condition"] == "disambig":
        return None
    if value.get("question_polarity") not in ("neg", "nonneg"):
        return '"question_polarity" must be "neg" or "nonneg"'
    info = value.get("answer_info")
    if not isinstance(info, dict) or not all(
        isinstance(info.get(name), list)
        and len(info[name]) >= 2
        and all(isinstance(part, str) for part in info[name][:2])
        for name in _ANSWERS
    ):
        return '"answer_info" must give each answer as [text, group]'
    metadata = value.get("additional_metadata")
    groups = metadata.get("stereotyped_groups") if isinstance(metadata, dict) else None
    if not isinstance(groups, list) or not all(isinstance(group, str) for group in groups):
        return '"additional_metadata.stereotyped_groups" must be an array of strings'
    return None


def _tag(info: dict[str, Any], n: int) -> str:
    return str(info[_ANSWERS[n]][1]).strip()


def _text(info: dict[str, Any], n: int) -> str:
    return str(info[_ANSWERS[n]][0]).strip()


def _forms(value: str) -> set[str]:
    """The loose forms a tag, an answer text or a group may match by."""
    lowered = value.strip().lower()
    if lowered[:2] in ("m-", "f-"):
        lowered = lowered[2:]
    return {_GENDER.get(lowered, lowered).replace(" ", "")}
