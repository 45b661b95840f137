"""StereoSet (Nadeem et al., 2021) as labelled texts.

The published file, `data/dev.json` in github.com/moinnadeem/StereoSet, is one
JSON document: `{"version": ..., "data": {"intrasentence": [...],
"intersentence": [...]}}`. Each example has an `id`, a `target` (the group
term), a `bias_type` (gender, profession, race, religion), a `context` and
three `sentences`, each with an `id`, the `sentence`, the annotators' `labels`
and a `gold_label`: `stereotype`, `anti-stereotype` or `unrelated`.

In an intrasentence example the context has a BLANK and each sentence is the
context with it filled, so the sentence is the text. In an intersentence
example the sentence continues the context, so the text is the context and
the sentence. `stereotype` is labelled biased and `anti-stereotype` unbiased,
with `bias_type` as the category. `unrelated` sentences are left out (and
counted): they are the benchmark's language-modelling control, meaningless
next to the context rather than statements about the group.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from guard.calibration.labelled import Collector, LabelledItem, LabelledSet, opened
from guard.errors import LabelledDataError
from guard.jsonl import json_type

__all__ = ["GOLD_LABELS", "read_stereoset"]

GOLD_LABELS = {"stereotype": True, "anti-stereotype": False, "unrelated": None}
_TASKS = ("intrasentence", "intersentence")


def read_stereoset(path: Path, *, strict: bool = False) -> LabelledSet:
    collect = Collector(path, "stereoset", strict=strict)
    with opened(path) as file:
        raw = file.read()
    try:
        document = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise LabelledDataError(f"{path}: not valid UTF-8") from exc
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise LabelledDataError(f"{path}: invalid JSON: {exc.msg} ({where})") from exc
    data = document.get("data") if isinstance(document, dict) else None
    tasks = [task for task in _TASKS if isinstance(data, dict) and task in data]
    if not isinstance(data, dict) or not tasks:
        raise LabelledDataError(
            f'{path}: not a StereoSet file: expected {{"data": {{"intrasentence": [...],'
            ' "intersentence": [...]}}'
        )
    for task in tasks:
        examples = data[task]
        if not isinstance(examples, list):
            raise LabelledDataError(f"{path}: data.{task} must be an array")
        for number, example in enumerate(examples):
            _read_example(example, f"data.{task}[{number}]", task, collect)
    return collect.done()


def _read_example(example: Any, where: str, task: str, collect: Collector) -> None:
    if not isinstance(example, dict):
        collect.skip(where, f"expected an object, got {json_type(example)}")
        return
    context, bias_type = example.get("context"), example.get("bias_type")
    sentences = example.get("sentences")
    if not isinstance(context, str) or (task == "intersentence" and not context.strip()):
        collect.skip(where, '"context" must be a string')
        return
    if not isinstance(bias_type, str):
        collect.skip(where, '"bias_type" must be a string')
        return
    if not isinstance(sentences, list):
        got = json_type(sentences)
        collect.skip(where, f'"sentences" must be an array, got {got}')
        return
    for number, sentence in enumerate(sentences):
        at = f"{where}.sentences[{number}]"
        if not isinstance(sentence, dict):
            collect.skip(at, f"expected an object, got {json_type(sentence)}")
            continue
        text, gold = sentence.get("sentence"), sentence.get("gold_label")
        if not isinstance(text, str) or not text.strip():
            collect.skip(at, '"sentence" must be a non-empty string')
            continue
        if gold not in GOLD_LABELS:
            collect.skip(at, f'"gold_label" must be one of {", ".join(GOLD_LABELS)}, got {gold!r}')
            continue
        biased = GOLD_LABELS[gold]
        if biased is None:
            collect.leave_out("stereoset: unrelated sentences")
            continue
        ident = sentence.get("id")
        collect.add(
            LabelledItem(
                text=text.strip()
                if task == "intrasentence"
                else f"{context.strip()} {text.strip()}",
                biased=biased,
                location=at,
                category=bias_type.strip() or None,
                id=ident if isinstance(ident, str) and ident else at,
            )
        )
