"""Fixtures of the proxy's tests."""

from __future__ import annotations

import pytest

from testkit.fake_openai import FakeOpenAI


@pytest.fixture
def reading_judge(fake_openai: FakeOpenAI) -> FakeOpenAI:
    fake_openai.read_text = True
    fake_openai.opinion_words = ["I think"]
    fake_openai.biased_words = ["lazy"]
    fake_openai.chunks = 60
    return fake_openai
