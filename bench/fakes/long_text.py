"""The long answers of the long-answer scenario (`bench.streams.long_answer`), and where their
bias is.

An answer is about `chars` characters of sentences: two plain statements of fact
for each opinion ("I think ..."), so a judge finds an opinion every third
sentence. Every `biased_every`-th answer has a run of `BIASED_RUN` biased
opinions (each holds `BIASED_WORD`) starting at about `biased_at` of its length,
enough for the whole answer's score to block under the scenario's policy. The fake judge of
`bench.fakes.paced --long-chars` reads them as `testkit.reading_judge` does.
"""

from __future__ import annotations

__all__ = [
    "ANSWER_CHARS",
    "BIASED_AT",
    "BIASED_RUN",
    "BIASED_WORD",
    "CHUNK_CHARS",
    "OPINION_WORD",
    "is_biased_answer",
    "long_answer",
]

OPINION_WORD = "I think"
BIASED_WORD = "lazy"
BIASED_RUN = 6
# The scenario's answer: its length, its chunks' and where in it the biased run sits.
ANSWER_CHARS = 2000
CHUNK_CHARS = 20
BIASED_AT = 0.5


def _biased(index: int) -> str:
    return f" I think women engineers are lazy by nature, case {index}."


def _sentence(serial: int, index: int) -> str:
    if index % 3 == 2:
        return f" I think design {index:03d} matters to every team."
    return f" Bridge {serial % 1000:03d}-{index:03d} spans a river of plain water."


def is_biased_answer(serial: int, biased_every: int) -> bool:
    return biased_every > 0 and serial % biased_every == 0


def long_answer(
    serial: int, *, chars: int, biased_every: int, biased_at: float
) -> tuple[str, int | None]:
    """The answer numbered `serial`, and where its biased sentence starts (None if none)."""
    text = ""
    index = 0
    biased_from: int | None = None
    want_bias = is_biased_answer(serial, biased_every)
    while len(text) < chars:
        if want_bias and biased_from is None and len(text) >= biased_at * chars:
            biased_from = len(text)
            text += "".join(_biased(n) for n in range(BIASED_RUN))
        else:
            text += _sentence(serial, index)
        index += 1
    return text, biased_from
