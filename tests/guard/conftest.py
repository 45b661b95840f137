from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from guard import BiasScorer, create_bias_scorer
from testkit.fake_openai import FakeOpenAI


@pytest.fixture
def make_scorer(fake_openai: FakeOpenAI) -> Callable[..., BiasScorer]:
    """Build a scorer whose judge is the fake server; keyword arguments pass through."""

    def make(**options: Any) -> BiasScorer:
        options.setdefault("max_retries", 0)
        return create_bias_scorer("judge", base_url=fake_openai.base_url, **options)

    return make
