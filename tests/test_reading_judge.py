"""The fake judge's reading of a window (`testkit.reading_judge`), and its latency,
which grows with the opinions it writes as a real judge's does."""

from __future__ import annotations

import json
import time

import openai
import pytest

from guard.bias.prompts import BiasPrompts
from testkit.fake_openai import JUDGE_MODEL, FakeOpenAI
from testkit.reading_judge import judged_text, opinions_written, reading_answer

WORDS = {"biased_words": ["lazy"], "opinion_words": ["I think"]}
PROMPTS = BiasPrompts()


def test_the_judge_reads_the_text_and_not_its_context() -> None:
    prompt = PROMPTS.extract("I think tea is good. It rains.", context="I think men are lazy.")
    assert judged_text(prompt) == "I think tea is good. It rains."
    assert json.loads(reading_answer("preprocess", prompt, **WORDS) or "") == {
        "opinions": ["I think tea is good."]
    }


def test_the_judge_finds_the_biased_opinions() -> None:
    opinions = ["I think men are lazy.", "I think tea is good."]
    prompt = PROMPTS.analyze(" ".join(opinions), opinions)
    results = json.loads(reading_answer("analyze", prompt, **WORDS) or "")["results"]
    assert [r["result"] for r in results] == ["yes", "no"]
    assessed = json.loads(
        reading_answer("assess", PROMPTS.assess(" ".join(opinions)), **WORDS) or ""
    )
    assert [(v["opinion"], v["result"]) for v in assessed["verdicts"]] == [
        ("I think men are lazy.", "yes"),
        ("I think tea is good.", "no"),
    ]
    assert reading_answer("reason", "anything", **WORDS) is None


@pytest.mark.parametrize(
    ("step", "content", "written"),
    [
        ("preprocess", '{"opinions": ["a", "b"]}', 2),
        ("analyze", '{"results": [{"result": "no"}]}', 1),
        ("assess", '{"verdicts": []}', 0),
        ("reason", "The score is 0 because ...", 0),
        ("preprocess", "not json", 0),
        ("preprocess", "[1, 2]", 0),
    ],
)
def test_opinions_written(step: str, content: str, written: int) -> None:
    assert opinions_written(step, content) == written


def test_a_judge_answer_takes_longer_for_each_opinion_it_writes(fake_openai: FakeOpenAI) -> None:
    fake_openai.judge_opinion_delay = 0.1
    schema = {"name": "opinions", "schema": {"type": "object"}}
    with openai.OpenAI(base_url=fake_openai.base_url, api_key="x", max_retries=0) as client:

        def timed(opinions: list[str]) -> float:
            fake_openai.opinions = opinions
            started = time.perf_counter()
            client.chat.completions.create(
                model=JUDGE_MODEL,
                messages=[{"role": "user", "content": "TEXT:\nx"}],
                extra_body={"response_format": {"type": "json_schema", "json_schema": schema}},
            )
            return time.perf_counter() - started

        slow = timed(["a", "b", "c", "d"])
        assert slow >= 0.4
        assert timed([]) < slow
