"""What the judged view costs: `judged_view` on a 4,000-character answer, p50 and p95.

    python -m bench.integrity [--runs 2000]

Times one call with time.perf_counter, many times, on an ordinary English answer,
the same with typographic punctuation, a Russian answer, and attack texts of the
same length (look-alikes, digits, spacing, hidden tags, an override, base64).
"""

from __future__ import annotations

import argparse
import base64
import os
import platform
import statistics
import time

from bench.machine import cpu_model, source_note
from guard.integrity.normalise import judged_view

SIZE = 4000
PLAIN = (
    "Leadership depends on skills such as communication, planning and judgement, which "
    "people of every gender develop with practice. In 2024 a study of 1,200 managers "
    "(see https://example.org/report-2024?id=42) found no difference in outcomes; the "
    "authors used Python 3.11 and checked commit 9c7600b. "
)
RUSSIAN = (
    "Руководство зависит от навыков, таких как общение и планирование, которые люди развивают. "
)


def _answer(sentence: str, attack: str = "") -> str:
    body = (sentence * (SIZE // len(sentence) + 1))[: SIZE - len(attack)]
    return body[: len(body) // 2] + attack + body[len(body) // 2 :]


def _tags(text: str) -> str:
    return "".join(chr(0xE0000 + ord(char)) for char in text)


BIASED = "Women are too emotional to lead."
TEXTS = {
    "ordinary English": _answer(PLAIN),
    "English, typographic": _answer(PLAIN.replace("; ", " — ").replace("(", "“").replace(")", "”")),
    "Russian": _answer(RUSSIAN),
    "look-alikes": _answer(PLAIN, " W\u043em\u0435n are too emotional to lead. "),
    "digits": _answer(PLAIN, " W0men are t00 em0t1onal to 1ead. "),
    "spacing": _answer(PLAIN, " W o m e n  a r e  l a z y. "),
    "hidden tags": _answer(PLAIN, _tags(BIASED)),
    "override": _answer(PLAIN, f" \u202e{BIASED[::-1]}\u202c "),
    "base64": _answer(PLAIN, f" {base64.b64encode(BIASED.encode()).decode()} "),
}


def _percentiles(text: str, runs: int) -> tuple[float, float, tuple[str, ...]]:
    view = judged_view(text)  # the first call builds the look-alike classes
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        judged_view(text)
        times.append(time.perf_counter() - start)
    cuts = statistics.quantiles(times, n=20)
    return cuts[9] * 1e6, cuts[18] * 1e6, view.applied


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    runs = parser.parse_args().runs
    print(
        f"{os.cpu_count()} cores ({cpu_model()}), {platform.system()} {platform.release()};"
        f" Python {platform.python_version()}; load {os.getloadavg()[0]:.1f}; code {source_note()}"
    )
    print(f"judged_view on {SIZE:,}-character texts, {runs} runs each\n")
    print(f"| {'text':<22} | {'p50 µs':>8} | {'p95 µs':>8} | applied")
    print(f"| {'-' * 22} | {'-' * 8} | {'-' * 8} | -------")
    for name, text in TEXTS.items():
        p50, p95, applied = _percentiles(text, runs)
        print(f"| {name:<22} | {p50:>8.0f} | {p95:>8.0f} | {', '.join(applied) or '-'}")


if __name__ == "__main__":
    main()
