"""The fake upstream speaks each model API well enough for the official SDKs to use it.

Gateway tests trust the fake to stand for a real upstream, so here the `openai` and
`anthropic` SDKs talk to it directly: if their parsing or stream helpers choke, the
fake's wording is wrong, whatever the gateway does with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import anthropic
import httpx2
import openai
import pytest
from anthropic.types import MessageParam

from testkit.fake_openai import FakeOpenAI, Fault

PROMPT = "Describe engineers from the north."
USER: list[MessageParam] = [{"role": "user", "content": PROMPT}]


@pytest.fixture
def oai(fake_openai: FakeOpenAI) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=fake_openai.base_url, api_key="x", max_retries=0) as client:
        yield client


@pytest.fixture
def claude(fake_openai: FakeOpenAI) -> Iterator[anthropic.Anthropic]:
    # Anthropic's paths carry their own /v1.
    url = fake_openai.base_url.removesuffix("/v1")
    with anthropic.Anthropic(base_url=url, api_key="x", max_retries=0) as client:
        yield client


def sent_events(fake: FakeOpenAI) -> list[str]:
    """The names of the SSE events the fake sent in its last stream."""
    return re.findall(r"^event: (\S+)$", b"".join(fake.sent).decode(), flags=re.MULTILINE)


# -- Responses ---------------------------------------------------------------------


def test_responses_create_answers_the_reply(fake_openai: FakeOpenAI, oai: openai.OpenAI) -> None:
    response = oai.responses.create(model="m", input="Describe engineers.")

    assert response.output_text == fake_openai.reply
    assert response.status == "completed"
    assert response.id.startswith("resp_")
    assert [item.type for item in response.output] == ["message"]
    assert response.usage is not None
    usage = response.usage
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens > 0
    [recorded] = fake_openai.requests
    assert (recorded.step, recorded.path) == ("chat", "/v1/responses")
    assert recorded.body["input"] == "Describe engineers."


def test_responses_replies_are_one_output_message_each(
    fake_openai: FakeOpenAI, oai: openai.OpenAI
) -> None:
    fake_openai.replies = ["First answer.", "Second answer."]

    response = oai.responses.create(model="m", input="hi")

    texts = [
        part.text
        for item in response.output
        if item.type == "message"
        for part in item.content
        if part.type == "output_text"
    ]
    assert texts == ["First answer.", "Second answer."]
    assert len({item.id for item in response.output}) == 2
    assert response.output_text == "First answer.Second answer."


def test_responses_stream_sends_the_events_in_order(
    fake_openai: FakeOpenAI, oai: openai.OpenAI
) -> None:
    fake_openai.replies = ["abcd", "wxyz"]
    fake_openai.chunks = 2

    events = list(oai.responses.create(model="m", input="hi", stream=True))

    per_message = [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    expected = ["response.created", "response.in_progress", *per_message, *per_message]
    assert [event.type for event in events] == [*expected, "response.completed"]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = [event for event in events if event.type == "response.output_text.delta"]
    assert [(event.output_index, event.delta) for event in deltas] == [
        (0, "ab"),
        (0, "cd"),
        (1, "wx"),
        (1, "yz"),
    ]
    first, last = events[0], events[-1]
    assert first.type == "response.created"
    assert (first.response.status, first.response.output) == ("in_progress", [])
    assert last.type == "response.completed"
    assert last.response.id == first.response.id
    assert last.response.output_text == "abcdwxyz"
    assert fake_openai.stream_endings == ["completed"]
    assert sent_events(fake_openai) == [event.type for event in events]


def test_responses_stream_helper_gives_the_final_response(
    fake_openai: FakeOpenAI, oai: openai.OpenAI
) -> None:
    with oai.responses.stream(model="m", input="hi") as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()

    assert "".join(deltas) == fake_openai.reply
    assert len(deltas) == fake_openai.chunks
    assert final.output_text == fake_openai.reply
    assert final.usage is not None


def test_responses_fault_is_an_openai_error(fake_openai: FakeOpenAI, oai: openai.OpenAI) -> None:
    fake_openai.fail(Fault(step="chat", status=503))

    with pytest.raises(openai.APIStatusError) as raised:
        oai.responses.create(model="m", input="hi")

    assert raised.value.status_code == 503
    assert raised.value.body == {
        "message": "scripted failure",
        "type": "server_error",
        "code": None,
    }


# -- legacy Completions ----------------------------------------------------------


def test_completions_create_answers_the_reply(fake_openai: FakeOpenAI, oai: openai.OpenAI) -> None:
    completion = oai.completions.create(model="m", prompt="Say hello.", n=2)

    assert completion.object == "text_completion"
    assert [choice.text for choice in completion.choices] == [fake_openai.reply] * 2
    assert [choice.index for choice in completion.choices] == [0, 1]
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens > 0
    assert fake_openai.requests[0].path == "/v1/completions"


def test_completions_stream_joins_to_the_reply(fake_openai: FakeOpenAI, oai: openai.OpenAI) -> None:
    chunks = list(oai.completions.create(model="m", prompt="Say hello.", stream=True))

    assert "".join(chunk.choices[0].text for chunk in chunks) == fake_openai.reply
    assert [chunk.choices[0].finish_reason for chunk in chunks][-2:] == [None, "stop"]
    assert chunks[-1].choices[0].text == ""
    assert len({chunk.id for chunk in chunks}) == 1
    assert fake_openai.sent[-1] == b"data: [DONE]\n\n"


def test_a_content_fault_replaces_the_text(fake_openai: FakeOpenAI, oai: openai.OpenAI) -> None:
    fake_openai.fail(Fault(step="chat", content="Northerners are lazy."))

    completion = oai.completions.create(model="m", prompt="Say hello.")

    assert completion.choices[0].text == "Northerners are lazy."


# -- Anthropic Messages ----------------------------------------------------------


def test_messages_create_answers_the_reply(
    fake_openai: FakeOpenAI, claude: anthropic.Anthropic
) -> None:
    message = claude.messages.create(model="claude-x", max_tokens=64, messages=USER)

    assert message.content[0].type == "text"
    assert message.content[0].text == fake_openai.reply
    assert (message.model, message.stop_reason) == ("claude-x", "end_turn")
    assert message.usage.input_tokens > 0
    [recorded] = fake_openai.requests
    assert (recorded.step, recorded.path) == ("chat", "/v1/messages")
    assert recorded.body["max_tokens"] == 64


def test_messages_replies_are_one_text_block_each(
    fake_openai: FakeOpenAI, claude: anthropic.Anthropic
) -> None:
    fake_openai.replies = ["One.", "Two."]

    message = claude.messages.create(model="m", max_tokens=64, messages=USER)

    assert [block.text for block in message.content if block.type == "text"] == ["One.", "Two."]


def test_messages_stream_gives_the_final_text(
    fake_openai: FakeOpenAI, claude: anthropic.Anthropic
) -> None:
    fake_openai.chunks = 3

    with claude.messages.stream(model="m", max_tokens=64, messages=USER) as stream:
        pieces = list(stream.text_stream)
        text = stream.get_final_text()
        final = stream.get_final_message()

    assert text == "".join(pieces) == fake_openai.reply
    assert len(pieces) == 3
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens > 1  # message_delta's count replaced message_start's 1
    assert sent_events(fake_openai) == [
        "message_start",
        "content_block_start",
        "ping",
        *["content_block_delta"] * 3,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert fake_openai.stream_endings == ["completed"]


@pytest.mark.parametrize("status", [529, 500])
def test_messages_fault_is_an_anthropic_error(
    fake_openai: FakeOpenAI, claude: anthropic.Anthropic, status: int
) -> None:
    fake_openai.fail(Fault(step="chat", status=status))

    with pytest.raises(anthropic.APIStatusError) as raised:
        claude.messages.create(model="m", max_tokens=64, messages=USER)

    assert raised.value.status_code == status
    assert raised.value.body == {
        "type": "error",
        "error": {"type": "api_error", "message": "scripted failure"},
    }


def test_count_tokens_is_its_own_step(fake_openai: FakeOpenAI, claude: anthropic.Anthropic) -> None:
    fake_openai.fail(Fault(status=500))  # any step's: left for the model call that follows

    counted = claude.messages.count_tokens(model="m", messages=USER)

    assert counted.input_tokens == len(PROMPT) // 4
    assert (fake_openai.steps(), fake_openai.requests[0].path) == (
        ["count_tokens"],
        "/v1/messages/count_tokens",
    )
    with pytest.raises(anthropic.InternalServerError):
        claude.messages.create(model="m", max_tokens=64, messages=USER)


def test_response_headers_come_with_every_api(
    fake_openai: FakeOpenAI, oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    fake_openai.response_headers = {"request-id": "req_fake_1"}

    raw = claude.messages.with_raw_response.create(model="m", max_tokens=64, messages=USER)
    streamed = oai.responses.with_raw_response.create(model="m", input="hi", stream=True)

    assert raw.headers["request-id"] == "req_fake_1"
    assert streamed.headers["request-id"] == "req_fake_1"
    assert list(streamed.parse())[-1].type == "response.completed"  # read to its end


# -- shared behaviour -------------------------------------------------------------


def test_disconnect_after_cuts_a_responses_stream(
    fake_openai: FakeOpenAI, oai: openai.OpenAI
) -> None:
    fake_openai.fail(Fault(step="chat", disconnect_after=2))
    deltas: list[str] = []

    with pytest.raises(openai.APIConnectionError):  # noqa: PT012  (the stream is read in it)
        for event in oai.responses.create(model="m", input="hi", stream=True):
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)

    assert deltas == ["Hello", "! How"]
    assert fake_openai.stream_endings == ["cancelled"]


def test_disconnect_after_cuts_a_messages_stream(
    fake_openai: FakeOpenAI, claude: anthropic.Anthropic
) -> None:
    fake_openai.fail(Fault(step="chat", disconnect_after=1))
    pieces: list[str] = []

    # The anthropic SDK lets a broken stream's transport error through unwrapped.
    with (
        pytest.raises((anthropic.APIConnectionError, httpx2.TransportError)),
        claude.messages.stream(model="m", max_tokens=64, messages=USER) as stream,
    ):
        pieces.extend(stream.text_stream)

    assert pieces == ["Hello"]
    assert fake_openai.stream_endings == ["cancelled"]


def test_every_api_is_the_upstream_step_chat(
    fake_openai: FakeOpenAI, oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    # Even under the judge's model name: only chat completions ever reach the judge.
    model = fake_openai.judge_model
    oai.completions.create(model=model, prompt="hi")
    oai.responses.create(model=model, input="hi")
    message = claude.messages.create(model=model, max_tokens=64, messages=USER)
    oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

    assert message.content[0].type == "text"
    assert message.content[0].text == fake_openai.reply
    assert fake_openai.steps() == ["chat"] * 4
    assert [recorded.path for recorded in fake_openai.requests] == [
        "/v1/completions",
        "/v1/responses",
        "/v1/messages",
        "/v1/chat/completions",
    ]
