"""Each surface adapter reading a whole (non-streamed) answer: its texts, its facts (id,
model, finish reasons, token counts), and a malformed answer found unreadable.
Pure code: no gateway, no I/O.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.proxy.surfaces import Facts, Surface
from tests.support.surface_samples import (
    CHAT,
    CHAT_MODEL,
    CLAUDE_MODEL,
    COMPLETIONS,
    FUNCTION_CALL_ITEM,
    INSTRUCT_MODEL,
    MESSAGES,
    REASONING_ITEM,
    RESPONSES,
    RESPONSES_MODEL,
    THINKING_BLOCK,
    TOOL_CALL_CHOICE,
    TOOL_USE_BLOCK,
    chat_body,
    chat_choice,
    cmpl_choice,
    completions_body,
    message_parts,
    messages_body,
    output_message,
    responses_body,
    text_block,
    text_part,
)

# -- chat completions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "texts"),
    [
        (chat_body(chat_choice(0, "Hello there.")), ["Hello there."]),
        # Index order, not list order.
        (
            chat_body(chat_choice(2, "third"), chat_choice(0, "first"), chat_choice(1, "second")),
            ["first", "second", "third"],
        ),
        # Without an index, the list position stands in.
        (chat_body(chat_choice(None, "a"), chat_choice(None, "b")), ["a", "b"]),
        (
            chat_body(
                chat_choice(
                    0,
                    [
                        {"type": "text", "text": "Hel"},
                        {"type": "image_url", "image_url": {"url": "x"}},
                        {"type": "text", "text": "lo"},
                    ],
                )
            ),
            ["Hello"],
        ),
        (chat_body(chat_choice(0, ""), chat_choice(1, "only")), ["only"]),
        (chat_body(TOOL_CALL_CHOICE), []),
        (chat_body(chat_choice(0, None)), []),
        (chat_body(chat_choice(0, [])), []),
        (chat_body(), []),
        (
            chat_body(
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "refusal": "I can't."},
                    "finish_reason": "stop",
                }
            ),
            [],
        ),
    ],
    ids=[
        "one",
        "index-order",
        "positions",
        "parts",
        "empty-left-out",
        "tool-calls",
        "null-content",
        "no-parts",
        "no-choices",
        "refusal-field",
    ],
)
def test_chat_texts(body: dict[str, Any], texts: list[str]) -> None:
    assert CHAT.readable(body)
    assert CHAT.texts(body) == texts


@pytest.mark.parametrize(
    "body",
    [
        None,
        "Hello",
        [chat_choice(0, "Hello")],
        {"id": "chatcmpl-1"},
        chat_body(choices={"0": chat_choice(0, "x")}),
        chat_body(choices="Hello"),
        chat_body(choices=None),
        chat_body("not a choice"),
        chat_body(chat_choice(0, "ok"), None),
        chat_body({"index": 0, "text": "completions shape"}),
        chat_body({"index": 0, "message": "Hello"}),
        chat_body(chat_choice(0, 42)),
        chat_body(chat_choice(0, {"text": "Hello"})),
    ],
)
def test_chat_malformed_answers_are_not_readable(body: object) -> None:
    assert not CHAT.readable(body)


@pytest.mark.parametrize(
    ("body", "facts"),
    [
        (
            chat_body(chat_choice(0, "a", "stop"), chat_choice(1, "b", "length")),
            Facts("chatcmpl-abc123", CHAT_MODEL, ["stop", "length"], 19, 10),
        ),
        (
            chat_body(chat_choice(0, "a", None), usage=None),
            Facts("chatcmpl-abc123", CHAT_MODEL, [], None, None),
        ),
        (
            chat_body(TOOL_CALL_CHOICE, id=12345, model=None, usage={"prompt_tokens": True}),
            Facts("12345", None, ["tool_calls"], None, None),
        ),
        (chat_body(id="", model=""), Facts(None, None, [], 19, 10)),
    ],
    ids=["two-choices", "no-usage", "odd-types", "blank-ids"],
)
def test_chat_facts(body: dict[str, Any], facts: Facts) -> None:
    assert CHAT.facts(body) == facts


@pytest.mark.parametrize("surface", [CHAT, COMPLETIONS], ids=["chat", "completions"])
def test_whole_answer_finish_reasons_follow_index_order(surface: Surface) -> None:
    if surface is CHAT:
        body = chat_body(chat_choice(1, "b", "length"), chat_choice(0, "a", "stop"))
    else:
        body = completions_body(cmpl_choice(1, "b", "length"), cmpl_choice(0, "a", "stop"))

    assert surface.texts(body) == ["a", "b"]
    assert surface.facts(body).finish_reasons == ["stop", "length"]


def test_two_chat_choices_with_one_index_keep_their_order() -> None:
    # A hostile upstream's answer (the property test found it): sorting the choices
    # by index must not compare the choices themselves.
    body = chat_body(chat_choice(0, "a", "stop"), chat_choice(0, "b", "length"))
    assert CHAT.facts(body).finish_reasons == ["stop", "length"]


# -- legacy completions ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "texts"),
    [
        (
            completions_body(cmpl_choice(0, "\n\nThis is a test.", "length")),
            ["\n\nThis is a test."],
        ),
        (
            completions_body(
                cmpl_choice(1, "second"), cmpl_choice(2, "third"), cmpl_choice(0, "first")
            ),
            ["first", "second", "third"],
        ),
        (completions_body({"text": "a"}, {"text": "b"}), ["a", "b"]),
        (completions_body(cmpl_choice(0, ""), cmpl_choice(1, "kept")), ["kept"]),
        (completions_body({"index": 0, "text": None, "finish_reason": "stop"}), []),
        (completions_body({"index": 0, "finish_reason": "stop"}), []),
        (completions_body(), []),
        (completions_body({"index": "0", "text": "no integer index"}), []),
    ],
    ids=[
        "one",
        "index-order",
        "positions",
        "empty-left-out",
        "null",
        "absent",
        "none",
        "bad-index",
    ],
)
def test_completions_texts(body: dict[str, Any], texts: list[str]) -> None:
    assert COMPLETIONS.readable(body)
    assert COMPLETIONS.texts(body) == texts


@pytest.mark.parametrize(
    "body",
    [
        None,
        ["text"],
        {"id": "cmpl-1"},
        completions_body(choices={"text": "x"}),
        completions_body(choices="Hello"),
        completions_body("Hello"),
        completions_body(cmpl_choice(0, "ok"), 7),
        completions_body({"index": 0, "text": 42}),
        completions_body({"index": 0, "text": ["Hel", "lo"]}),
        completions_body({"index": 0, "text": {"value": "Hello"}}),
    ],
)
def test_completions_malformed_answers_are_not_readable(body: object) -> None:
    assert not COMPLETIONS.readable(body)


@pytest.mark.parametrize(
    ("body", "facts"),
    [
        (
            completions_body(cmpl_choice(0, "a", "stop"), cmpl_choice(1, "b", "length")),
            Facts("cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7", INSTRUCT_MODEL, ["stop", "length"], 5, 7),
        ),
        (
            completions_body(cmpl_choice(0, "a"), usage="none", model=3.5),
            Facts("cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7", "3.5", [], None, None),
        ),
    ],
    ids=["usage", "odd-types"],
)
def test_completions_facts(body: dict[str, Any], facts: Facts) -> None:
    assert COMPLETIONS.facts(body) == facts


# -- responses ---------------------------------------------------------------------------


REFUSAL_PART = {"type": "refusal", "refusal": "I'm sorry, I can't help with that."}


@pytest.mark.parametrize(
    ("body", "texts"),
    [
        (responses_body(output_message("msg_1", "Hello there.")), ["Hello there."]),
        (
            responses_body(
                REASONING_ITEM,
                output_message("msg_1", "first"),
                FUNCTION_CALL_ITEM,
                output_message("msg_2", "second"),
            ),
            ["first", "second"],
        ),
        (
            responses_body(message_parts("msg_1", text_part("Hel"), REFUSAL_PART, text_part("lo"))),
            ["Hello"],
        ),
        (responses_body(message_parts("msg_1", REFUSAL_PART)), []),
        (responses_body(message_parts("msg_1")), []),
        (responses_body(output_message("msg_1", ""), output_message("msg_2", "kept")), ["kept"]),
        (responses_body(FUNCTION_CALL_ITEM), []),
        (responses_body(), []),
        # A reasoning item's content is not the answer's, whatever its shape.
        (
            responses_body({**REASONING_ITEM, "content": [text_part("hidden")]}),
            [],
        ),
        (responses_body({**REASONING_ITEM, "content": None}), []),
        (
            responses_body(message_parts("msg_1", {"type": "output_text", "text": None}, "junk")),
            [],
        ),
    ],
    ids=[
        "one",
        "messages-among-other-items",
        "refusal-part-ignored",
        "only-refusal",
        "no-parts",
        "empty-left-out",
        "function-call",
        "no-output",
        "reasoning-content",
        "reasoning-null-content",
        "odd-parts",
    ],
)
def test_responses_texts(body: dict[str, Any], texts: list[str]) -> None:
    assert RESPONSES.readable(body)
    assert RESPONSES.texts(body) == texts


@pytest.mark.parametrize(
    "body",
    [
        None,
        [output_message("msg_1", "x")],
        {"id": "resp_1", "status": "completed"},
        responses_body(output=None),
        responses_body(output={"type": "message"}),
        responses_body(output="Hello"),
        responses_body("not an item"),
        responses_body(output_message("msg_1", "ok"), None),
        responses_body({**output_message("msg_1", "x"), "content": "Hello"}),
        responses_body({**output_message("msg_1", "x"), "content": None}),
        responses_body({"type": "message", "id": "msg_1", "role": "assistant"}),
    ],
    ids=[
        "null",
        "list",
        "no-output",
        "output-null",
        "output-object",
        "output-string",
        "item-string",
        "item-null",
        "content-string",
        "content-null",
        "content-missing",
    ],
)
def test_responses_malformed_answers_are_not_readable(body: object) -> None:
    assert not RESPONSES.readable(body)


@pytest.mark.parametrize(
    ("body", "facts"),
    [
        (
            responses_body(output_message("msg_1", "x")),
            Facts("resp_67ccd2bed1ec8190", RESPONSES_MODEL, ["completed"], 36, 87),
        ),
        (
            responses_body(status="incomplete", incomplete_details={"reason": "max_output_tokens"}),
            Facts("resp_67ccd2bed1ec8190", RESPONSES_MODEL, ["incomplete"], 36, 87),
        ),
        (
            responses_body(status=None, usage=None, id=None),
            Facts(None, RESPONSES_MODEL, [], None, None),
        ),
        (
            # Chat's usage names are not the Responses API's.
            responses_body(usage={"prompt_tokens": 3, "completion_tokens": 4}),
            Facts("resp_67ccd2bed1ec8190", RESPONSES_MODEL, ["completed"], None, None),
        ),
    ],
    ids=["completed", "incomplete", "bare", "chat-usage-names"],
)
def test_responses_facts(body: dict[str, Any], facts: Facts) -> None:
    assert RESPONSES.facts(body) == facts


# -- anthropic messages ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "texts"),
    [
        (messages_body(text_block("Hi! My name is Claude.")), ["Hi! My name is Claude."]),
        (
            messages_body(
                {**THINKING_BLOCK, "thinking": "hmm"},
                text_block("Let me check."),
                {**TOOL_USE_BLOCK, "input": {"city": "Paris"}},
                text_block("It is sunny."),
            ),
            ["Let me check.\nIt is sunny."],
        ),
        (messages_body(text_block(""), text_block("a"), text_block(""), text_block("b")), ["a\nb"]),
        (messages_body(TOOL_USE_BLOCK), []),
        (messages_body(), []),
        (messages_body(text_block(None), {"type": "text"}, text_block(["x"])), []),
    ],
    ids=["one", "joined-tool-use-ignored", "empty-blocks", "tool-use-only", "none", "odd-text"],
)
def test_messages_texts(body: dict[str, Any], texts: list[str]) -> None:
    assert MESSAGES.readable(body)
    assert MESSAGES.texts(body) == texts


@pytest.mark.parametrize(
    "body",
    [
        None,
        [text_block("x")],
        {"id": "msg_1", "type": "message"},
        messages_body(content=None),
        messages_body(content="Hello"),
        messages_body(content=text_block("x")),
        messages_body("Hello"),
        messages_body(text_block("ok"), None),
    ],
)
def test_messages_malformed_answers_are_not_readable(body: object) -> None:
    assert not MESSAGES.readable(body)


@pytest.mark.parametrize(
    ("body", "facts"),
    [
        (
            messages_body(text_block("x")),
            Facts("msg_013Zva2CMHLNnXjNJJKqJ2EF", CLAUDE_MODEL, ["end_turn"], 2095, 503),
        ),
        (
            messages_body(TOOL_USE_BLOCK, stop_reason="tool_use"),
            Facts("msg_013Zva2CMHLNnXjNJJKqJ2EF", CLAUDE_MODEL, ["tool_use"], 2095, 503),
        ),
        (
            messages_body(stop_reason=None, usage=[1, 2], id=7),
            Facts("7", CLAUDE_MODEL, [], None, None),
        ),
        (
            # OpenAI's usage names are not Anthropic's.
            messages_body(usage={"prompt_tokens": 1, "completion_tokens": 2}),
            Facts("msg_013Zva2CMHLNnXjNJJKqJ2EF", CLAUDE_MODEL, ["end_turn"], None, None),
        ),
    ],
    ids=["end-turn", "tool-use", "odd-types", "openai-usage-names"],
)
def test_messages_facts(body: dict[str, Any], facts: Facts) -> None:
    assert MESSAGES.facts(body) == facts
