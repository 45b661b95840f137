"""The model under test as the probe calls it: the answer and its refusal signals, retries
of what is worth retrying, and one error for the rest."""

from __future__ import annotations

import json

import pytest

from guard.errors import TargetError
from guard.probe import Target
from testkit.fake_openai import FakeOpenAI, Fault


def target(fake: FakeOpenAI, **options: object) -> Target:
    return Target(base_url=fake.base_url, model="m", backoff=0.0, **options)  # type: ignore[arg-type]


async def test_the_answer_comes_with_the_seed_sent_and_the_finish_reason(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.reply = "Nurses care for patients."
    client = target(fake_openai, max_tokens=50)
    try:
        answer = await client.ask("About nurses.", seed=7)
    finally:
        await client.aclose()
    assert (answer.text, answer.refusal, answer.finish_reason) == (
        "Nurses care for patients.",
        None,
        "stop",
    )
    sent = fake_openai.requests[-1].body
    assert (sent["seed"], sent["max_tokens"], sent["messages"]) == (
        7,
        50,
        [{"role": "user", "content": "About nurses."}],
    )


async def test_a_refusal_field_is_read_where_the_content_is_null(fake_openai: FakeOpenAI) -> None:
    body = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "refusal": "No."},
                "finish_reason": "stop",
            }
        ]
    }
    fake_openai.fail(Fault(step="chat", body=json.dumps(body)))
    client = target(fake_openai)
    try:
        answer = await client.ask("About nurses.", seed=0)
    finally:
        await client.aclose()
    assert (answer.text, answer.refusal) == ("", "No.")


async def test_a_5xx_is_retried_and_a_400_is_not(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(Fault(step="chat", status=503), Fault(step="chat", status=503))
    client = target(fake_openai, max_retries=2)
    try:
        assert (await client.ask("About nurses.", seed=0)).text == fake_openai.reply
        assert fake_openai.steps() == ["chat"] * 3
        fake_openai.fail(Fault(step="chat", status=400))
        with pytest.raises(TargetError, match=r"answered 400"):
            await client.ask("About nurses.", seed=0)
        assert fake_openai.steps() == ["chat"] * 4
        fake_openai.fail(*[Fault(step="chat", status=500)] * 3)
        with pytest.raises(TargetError, match=r"answered 500.*gave up after 3 attempts"):
            await client.ask("About nurses.", seed=0)
    finally:
        await client.aclose()


async def test_a_body_that_is_no_chat_completion_is_a_target_error(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.fail(Fault(step="chat", body='{"object": "list"}'))
    client = target(fake_openai)
    try:
        with pytest.raises(TargetError, match="did not answer a chat completion"):
            await client.ask("About nurses.", seed=0)
    finally:
        await client.aclose()
