"""What the tests of texts handed to the gateway (`/v1/moderations`, `/v1/bias/score`) share."""

from __future__ import annotations

import pytest

from tests.support.fake_openai import FakeOpenAI

BIASED = "Engineers from the north are lazy."
NEUTRAL = "Bridges carry loads across rivers."


@pytest.fixture
def judged(fake_openai: FakeOpenAI) -> FakeOpenAI:
    """The fake judge finds BIASED biased (geographical) and NEUTRAL not."""
    fake_openai.opinions = ["an opinion"]
    fake_openai.verdicts = [("no", "A fair remark.")]
    fake_openai.verdicts_for = {"north": [("yes", "A regional stereotype.", ["geographical"])]}
    return fake_openai
