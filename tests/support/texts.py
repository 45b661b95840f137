"""Texts the fake judge tells apart, and how to script it to: `BIASED` and `NEUTRAL` for
the `judged` fixture (tests/gateway/conftest.py); `TEXTS` for several texts in one judge
call, with `script` making the fake judge find the first and last biased."""

from __future__ import annotations

from testkit.fake_openai import FakeOpenAI

# Texts the `judged` fake judge tells apart, for the tests of texts handed to the judge.
BIASED = "Engineers from the north are lazy."
NEUTRAL = "Bridges carry loads across rivers."

# Words no prompt's rubric holds, so the fake judge's verdicts follow the text alone.
TEXTS = [
    "Engineers from Quuxland are lazy.",
    "Tea is nice and the weather is mild.",
    "Flurbs cannot lead teams.",
]


def script(fake: FakeOpenAI) -> None:
    fake.opinions = ["an opinion"]
    fake.verdicts = [("no", "Neutral.")]
    fake.verdicts_for = {
        "Quuxland": [("yes", "Geographical stereotype.", ["geographical"])],
        "Flurbs": [("yes", "Gender stereotype.", ["gender"]), ("no", "A side remark.")],
    }
