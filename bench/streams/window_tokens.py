"""Judge tokens per answer, by window size: what judging a long answer in windows costs
in the judge's prompt, counted, not timed.
"""

from __future__ import annotations

import json
from typing import Any

from bench.fakes.long_text import (
    ANSWER_CHARS,
    BIASED_AT,
    BIASED_WORD,
    CHUNK_CHARS,
    OPINION_WORD,
    long_answer,
)
from gateway.scoring.windows import WindowSplitter
from guard.bias.fence import rules_before
from guard.bias.prompts import SYSTEM_PROMPT, BiasPrompts
from testkit.reading_judge import reading_answer


def _tokens(chars: int) -> int:
    return -(-chars // 4)  # about four characters a token, as the fakes count


def token_table(sizes: tuple[int, ...] = (400, 800, 1200, 1600)) -> list[dict[str, Any]]:
    """Judge tokens for one biased 2,000-character answer (faithful pipeline: extract, then
    analyze), judged in windows of each size with 200 characters of context, against the
    whole text judged once. Counted from the prompts the scorer sends, at four characters a
    token; the fixed part is what a provider's prompt cache could serve."""
    text, _ = long_answer(4, chars=ANSWER_CHARS, biased_every=4, biased_at=BIASED_AT)
    prompts = BiasPrompts()
    rows = []
    for size in (*sizes, 0):
        if size:
            splitter = WindowSplitter(window_chars=size, context_chars=200, margin=size // 4)
            windows, seen = [], ""
            for start in range(0, len(text), CHUNK_CHARS):
                seen = text[: start + CHUNK_CHARS]
                closed = splitter.offer([seen], start // CHUNK_CHARS + 1)
                if closed is not None:
                    windows.append(closed)
            tail = splitter.finish([text], len(text) // CHUNK_CHARS + 1)
            parts = [w.parts[0] for w in [*windows, *([tail] if tail else [])]]
            pieces = [(part.text, part.context) for part in parts]
        else:
            pieces = [(text, "")]
        prompt = completion = fixed = 0
        sent = 0
        for window, context in pieces:
            words = {"biased_words": [BIASED_WORD], "opinion_words": [OPINION_WORD]}
            extract = prompts.extract(window, context=context)
            opinions = json.loads(reading_answer("preprocess", extract, **words) or "{}")
            analyze = prompts.analyze(window, opinions["opinions"], context=context)
            verdicts = reading_answer("analyze", analyze, **words) or ""
            prompt += _tokens(len(SYSTEM_PROMPT) * 2 + len(extract) + len(analyze))
            completion += _tokens(len(json.dumps(opinions)) + len(verdicts))
            fixed += _tokens(
                len(SYSTEM_PROMPT) * 2 + len(rules_before(extract))
                + len(rules_before(analyze))
            )  # fmt: skip
            sent += len(window) + len(context)
        rows.append(
            {
                "window_chars": size or "whole text",
                "windows": len(pieces),
                "judge_calls": 2 * len(pieces),
                "prompt_tokens": prompt,
                "of_which_fixed": fixed,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "text_sent_ratio": round(sent / len(text), 2),
            }
        )
    return rows


def tokens_markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| window_chars | windows | judge calls | prompt tokens | of which fixed"
        " | completion tokens | total | text sent / answer |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['window_chars']} | {row['windows']} | {row['judge_calls']}"
            f" | {row['prompt_tokens']} | {row['of_which_fixed']} | {row['completion_tokens']}"
            f" | {row['total_tokens']} | {row['text_sent_ratio']:g} |"
        )
    return "\n".join(lines)
