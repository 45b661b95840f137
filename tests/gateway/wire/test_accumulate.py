from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.wire import accumulate
from gateway.wire.accumulate import ChunkAccumulator, completion_texts, readable_completion
from gateway.wire.sse import DONE, SSEDecoder


def chunk(*choices: dict[str, Any], **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-4o-mini",
    }
    return {**base, **fields, "choices": list(choices)}


def delta(index: int = 0, finish_reason: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"index": index, "delta": fields, "finish_reason": finish_reason}


def accumulate_all(*chunks: Any) -> ChunkAccumulator:
    acc = ChunkAccumulator()
    for item in chunks:
        acc.add(item)
    return acc


USAGE = {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}

# What OpenAI streams for n=2 with stream_options.include_usage: choices interleave,
# every chunk carries "usage": null, and a last chunk has no choices and the usage.
INTERLEAVED = [
    chunk(delta(0, role="assistant", content=""), usage=None),
    chunk(delta(1, role="assistant", content=""), usage=None),
    chunk(delta(1, content="Bon"), usage=None),
    chunk(delta(0, content="Hel"), usage=None),
    chunk(delta(0, content="lo"), usage=None),
    chunk(delta(1, content="jour"), usage=None),
    chunk(delta(1, finish_reason="stop"), usage=None),
    chunk(delta(0, finish_reason="length"), usage=None),
    chunk(usage=USAGE),
]


def test_module_exports_are_sorted_and_exist() -> None:
    assert accumulate.__all__ == sorted(accumulate.__all__)
    assert all(hasattr(accumulate, name) for name in accumulate.__all__)


def test_a_new_accumulator_is_empty() -> None:
    acc = ChunkAccumulator()
    assert acc.response_id is None
    assert acc.model is None
    assert acc.created is None
    assert acc.usage is None
    assert acc.finish_reasons == {}
    assert acc.chunks == 0
    assert acc.text() == ""
    assert acc.texts() == {}
    assert acc.refusals() == {}
    assert acc.has_tool_calls() is False
    assert acc.as_completion() == {
        "id": None,
        "object": "chat.completion",
        "created": None,
        "model": None,
        "choices": [],
    }


def test_single_choice_text() -> None:
    acc = accumulate_all(
        chunk(delta(role="assistant", content="")),
        chunk(delta(content="Hello")),
        chunk(delta(content=", world")),
        chunk(delta(finish_reason="stop")),
    )
    assert acc.text() == "Hello, world"
    assert acc.texts() == {0: "Hello, world"}
    assert acc.finish_reasons == {0: "stop"}
    assert acc.chunks == 4
    assert acc.response_id == "chatcmpl-1"
    assert acc.model == "gpt-4o-mini"
    assert acc.created == 1700000000


def test_interleaved_choices() -> None:
    acc = accumulate_all(*INTERLEAVED)
    assert acc.text(0) == "Hello"
    assert acc.text(1) == "Bonjour"
    assert acc.texts() == {0: "Hello", 1: "Bonjour"}
    assert acc.finish_reasons == {0: "length", 1: "stop"}
    assert acc.usage == USAGE
    assert acc.chunks == len(INTERLEAVED)


def test_texts_and_finish_reasons_are_in_index_order() -> None:
    acc = accumulate_all(
        chunk(delta(2, content="c", finish_reason="stop")),
        chunk(delta(0, content="a", finish_reason="stop")),
        chunk(delta(1, content="b", finish_reason="length")),
    )
    assert list(acc.texts().items()) == [(0, "a"), (1, "b"), (2, "c")]
    assert list(acc.finish_reasons.items()) == [(0, "stop"), (1, "length"), (2, "stop")]


@pytest.mark.parametrize(
    "empty_delta",
    [
        {"content": None},
        {},
        {"role": "assistant"},
        {"content": 42},
        {"content": ["not", "a", "string"]},
    ],
    ids=["none", "absent", "role-only", "number", "list"],
)
def test_deltas_without_string_content_add_no_text(empty_delta: dict[str, Any]) -> None:
    acc = accumulate_all(
        chunk(delta(content="a")),
        chunk({"index": 0, "delta": empty_delta}),
        chunk(delta(content="b")),
    )
    assert acc.text() == "ab"


def test_a_choice_seen_without_content_has_empty_text() -> None:
    acc = accumulate_all(chunk(delta(0, role="assistant")), chunk(delta(1, content="x")))
    assert acc.texts() == {0: "", 1: "x"}
    assert acc.text(5) == ""


def test_a_missing_choice_index_means_zero() -> None:
    acc = accumulate_all(chunk({"delta": {"content": "a"}}), chunk(delta(0, content="b")))
    assert acc.texts() == {0: "ab"}


@pytest.mark.parametrize("index", ["0", None, 1.0, True])
def test_a_choice_with_a_bad_index_is_ignored(index: Any) -> None:
    acc = accumulate_all(
        chunk({"index": index, "delta": {"content": "x"}, "finish_reason": "stop"})
    )
    assert acc.texts() == {}
    assert acc.finish_reasons == {}
    assert acc.chunks == 1


@pytest.mark.parametrize(
    "item",
    [
        None,
        "data",
        ["choices"],
        {},
        {"id": "x", "object": "chat.completion.chunk"},
        {"choices": None},
        {"choices": {"0": {"delta": {"content": "x"}}}},
        {"choices": "x"},
    ],
    ids=["none", "str", "list", "empty", "no-choices", "null", "dict", "str-choices"],
)
def test_items_that_are_not_chunks_are_ignored(item: Any) -> None:
    acc = accumulate_all(chunk(delta(content="a")), item, chunk(delta(content="b")))
    assert acc.chunks == 2
    assert acc.text() == "ab"
    assert acc.response_id == "chatcmpl-1"


def test_choices_that_are_not_mappings_are_skipped() -> None:
    acc = accumulate_all(chunk(None, "x", delta(content="a"), [1]))  # type: ignore[arg-type]
    assert acc.texts() == {0: "a"}


def test_a_delta_that_is_not_a_mapping_still_registers_finish_reason() -> None:
    acc = accumulate_all(chunk({"index": 0, "delta": None, "finish_reason": "stop"}))
    assert acc.finish_reasons == {0: "stop"}
    assert acc.texts() == {0: ""}


@pytest.mark.parametrize(
    ("chunks", "usage"),
    [
        ([chunk(delta(content="a"))], None),
        ([chunk(delta(content="a"), usage=None)], None),
        ([chunk(delta(content="a")), chunk(usage=USAGE)], USAGE),
        ([chunk(usage=USAGE), chunk(delta(content="a"), usage=None)], USAGE),
        ([chunk(usage={"total_tokens": 1}), chunk(usage=USAGE)], USAGE),
        ([chunk(usage="12")], None),
    ],
    ids=["absent", "null", "final-chunk", "null-after", "last-wins", "not-a-dict"],
)
def test_usage(chunks: list[dict[str, Any]], usage: dict[str, Any] | None) -> None:
    assert accumulate_all(*chunks).usage == usage


def test_a_usage_only_chunk_counts_but_adds_no_choice() -> None:
    acc = accumulate_all(chunk(delta(content="a")), chunk(usage=USAGE))
    assert acc.chunks == 2
    assert acc.texts() == {0: "a"}
    assert [choice["index"] for choice in acc.as_completion()["choices"]] == [0]


def test_returned_dicts_are_copies() -> None:
    acc = accumulate_all(*INTERLEAVED)
    acc.usage["total_tokens"] = 0  # type: ignore[index]
    acc.finish_reasons[0] = "changed"
    acc.texts()[0] = "changed"
    acc.as_completion()["usage"]["total_tokens"] = 0
    assert acc.usage == USAGE
    assert acc.finish_reasons == {0: "length", 1: "stop"}
    assert acc.texts() == {0: "Hello", 1: "Bonjour"}
    assert acc.as_completion()["usage"] == USAGE


def test_the_first_non_empty_metadata_wins() -> None:
    # Azure opens with a content-filter chunk whose id, model and created are blank.
    acc = accumulate_all(
        {
            "id": "",
            "model": "",
            "created": 0,
            "object": "",
            "choices": [],
            "prompt_filter_results": [],
        },
        chunk(delta(content="a"), id="chatcmpl-A", model="gpt-4o", created=1),
        chunk(delta(content="b"), id="chatcmpl-B", model="other", created=2),
    )
    assert (acc.response_id, acc.model, acc.created) == ("chatcmpl-A", "gpt-4o", 1)


@pytest.mark.parametrize(
    "fields",
    [
        {"id": 5, "model": None, "created": "1700000000"},
        {"id": None, "model": ["gpt"], "created": True},
        {"id": "", "model": "", "created": 0},
        {},
    ],
    ids=["wrong-types", "more-wrong-types", "blank", "absent"],
)
def test_metadata_that_is_blank_or_of_the_wrong_type_is_ignored(fields: dict[str, Any]) -> None:
    acc = accumulate_all({**fields, "choices": []})
    assert (acc.response_id, acc.model, acc.created) == (None, None, None)


@pytest.mark.parametrize(
    ("reasons", "expected"),
    [
        ([None, None], {}),
        ([None, "stop"], {0: "stop"}),
        (["length"], {0: "length"}),
        (["tool_calls"], {0: "tool_calls"}),
        (["content_filter"], {0: "content_filter"}),
        (["stop", None], {0: "stop"}),  # a later null does not erase it
        ([1], {}),
    ],
)
def test_finish_reasons(reasons: list[Any], expected: dict[int, str]) -> None:
    acc = accumulate_all(*(chunk(delta(finish_reason=reason)) for reason in reasons))
    assert acc.finish_reasons == expected


def test_refusal_is_kept_apart_from_content() -> None:
    acc = accumulate_all(
        chunk(delta(0, role="assistant", content=None, refusal="")),
        chunk(delta(0, refusal="I can't ")),
        chunk(delta(0, refusal="help with that.")),
        chunk(delta(1, content="Sure.")),
        chunk(delta(0, finish_reason="stop"), delta(1, finish_reason="stop")),
    )
    assert acc.refusals() == {0: "I can't help with that."}
    assert acc.texts() == {0: "", 1: "Sure."}
    [refused, answered] = acc.as_completion()["choices"]
    assert refused["message"] == {
        "role": "assistant",
        "content": None,
        "refusal": "I can't help with that.",
    }
    assert "refusal" not in answered["message"]


def test_refusals_without_any_refusal_is_empty() -> None:
    assert accumulate_all(*INTERLEAVED).refusals() == {}


def tool_call(index: int, **fields: Any) -> dict[str, Any]:
    return {"index": index, **fields}


TOOL_STREAM = [
    chunk(delta(role="assistant", content=None)),
    chunk(
        delta(
            tool_calls=[
                tool_call(
                    0, id="call_a", type="function", function={"name": "weather", "arguments": ""}
                )
            ]
        )
    ),
    chunk(delta(tool_calls=[tool_call(0, function={"arguments": '{"city": '})])),
    chunk(delta(tool_calls=[tool_call(0, function={"arguments": '"Paris"}'})])),
    chunk(
        delta(
            tool_calls=[
                tool_call(
                    1, id="call_b", type="function", function={"name": "time", "arguments": "{}"}
                )
            ]
        )
    ),
    chunk(delta(finish_reason="tool_calls")),
]


def test_tool_calls_are_assembled() -> None:
    acc = accumulate_all(*TOOL_STREAM)
    assert acc.has_tool_calls() is True
    assert acc.texts() == {0: ""}
    assert acc.finish_reasons == {0: "tool_calls"}
    assert acc.as_completion()["choices"] == [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "time", "arguments": "{}"},
                    },
                ],
            },
            "finish_reason": "tool_calls",
        }
    ]


def test_tool_calls_without_index_fall_back_to_their_position() -> None:
    acc = accumulate_all(
        chunk(
            delta(
                tool_calls=[
                    {"id": "a", "function": {"name": "f", "arguments": "1"}},
                    {"id": "b", "function": {"name": "g", "arguments": "2"}},
                ]
            )
        )
    )
    calls = acc.as_completion()["choices"][0]["message"]["tool_calls"]
    assert calls == [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "1"}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": "2"}},
    ]


def test_later_tool_call_fragments_do_not_overwrite_id_or_name() -> None:
    acc = accumulate_all(
        chunk(delta(tool_calls=[tool_call(0, id="a", function={"name": "f", "arguments": "x"})])),
        chunk(delta(tool_calls=[tool_call(0, id="z", function={"name": "g", "arguments": "y"})])),
    )
    [call] = acc.as_completion()["choices"][0]["message"]["tool_calls"]
    assert call == {"id": "a", "type": "function", "function": {"name": "f", "arguments": "xy"}}


@pytest.mark.parametrize(
    ("tool_calls", "rebuilt"),
    [
        (None, None),
        ([], []),
        ("call", "absent"),
        ([None], []),
        ([{"index": "0", "function": {"arguments": "{}"}}], []),
    ],
    ids=["none", "empty", "str", "null-item", "bad-index"],
)
def test_no_usable_tool_call_means_no_tool_calls(tool_calls: Any, rebuilt: Any) -> None:
    # The whole message has the field as the deltas carried it (a list, or null), and
    # no call that could not be read.
    acc = accumulate_all(chunk(delta(content="hi", tool_calls=tool_calls)))
    assert acc.has_tool_calls() is False
    assert acc.as_completion()["choices"][0]["message"].get("tool_calls", "absent") == rebuilt


def test_content_alone_is_not_a_tool_call() -> None:
    assert accumulate_all(*INTERLEAVED).has_tool_calls() is False


def test_as_completion_shape() -> None:
    assert accumulate_all(*INTERLEAVED).as_completion() == {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello"},
                "finish_reason": "length",
            },
            {
                "index": 1,
                "message": {"role": "assistant", "content": "Bonjour"},
                "finish_reason": "stop",
            },
        ],
        "usage": USAGE,
    }


def test_as_completion_mid_stream() -> None:
    completion = accumulate_all(chunk(delta(content="partial"))).as_completion()
    assert completion["choices"] == [
        {"index": 0, "message": {"role": "assistant", "content": "partial"}, "finish_reason": None}
    ]
    assert "usage" not in completion


def test_empty_string_content_is_kept_as_content() -> None:
    message = accumulate_all(chunk(delta(content=""))).as_completion()["choices"][0]["message"]
    assert message == {"role": "assistant", "content": ""}


def test_a_decoded_sse_stream_rebuilds_the_completion() -> None:
    body = (
        b"".join(f"data: {json.dumps(item)}\r\n\r\n".encode() for item in INTERLEAVED)
        + f"data: {DONE}\r\n\r\n".encode()
    )
    decoder, acc = SSEDecoder(), ChunkAccumulator()
    for start in range(0, len(body), 7):
        for event in decoder.feed(body[start : start + 7]):
            if event.data != DONE:
                acc.add(json.loads(event.data))
    assert decoder.flush() == []
    assert acc.as_completion() == accumulate_all(*INTERLEAVED).as_completion()
    assert completion_texts(acc.as_completion()) == {0: "Hello", 1: "Bonjour"}


@pytest.mark.parametrize(
    ("choices", "expected"),
    [
        ([{"index": 0, "message": {"role": "assistant", "content": "hi"}}], {0: "hi"}),
        ([{"index": 0, "message": {"role": "assistant", "content": ""}}], {0: ""}),
        ([{"index": 0, "message": {"role": "assistant", "content": None}}], {}),
        ([{"index": 0, "message": {"role": "assistant"}}], {}),
        ([{"index": 0}], {}),
        ([{"index": 0, "message": "hi"}], {}),
        ([{"index": 0, "message": {"content": 7}}], {}),
        (
            [
                {
                    "index": 0,
                    "message": {
                        "content": [
                            {"type": "text", "text": "one "},
                            {"type": "image_url", "image_url": {"url": "x"}},
                            {"type": "refusal", "refusal": "no"},
                            {"type": "text", "text": "two"},
                        ]
                    },
                }
            ],
            {0: "one two"},
        ),
        ([{"index": 0, "message": {"content": [{"type": "text", "text": ""}]}}], {0: ""}),
        ([{"index": 0, "message": {"content": []}}], {}),
        (
            [
                {
                    "index": 0,
                    "message": {
                        "content": [
                            {"type": "image_url", "image_url": {"url": "x"}},
                            {"type": "text"},
                            {"type": "text", "text": 3},
                            {"text": "untyped"},
                            "bare string",
                        ]
                    },
                }
            ],
            {},
        ),
        (
            [
                {"index": 1, "message": {"content": "b"}},
                {"index": 0, "message": {"content": "a"}},
                {"index": 2, "message": {"content": None}},
            ],
            {0: "a", 1: "b"},
        ),
        (
            [{"message": {"content": "a"}}, {"message": {"content": "b"}}],
            {0: "a", 1: "b"},
        ),
        ([None, {"index": 1, "message": {"content": "b"}}], {1: "b"}),
        ([{"index": "0", "message": {"content": "a"}}], {}),
        ([], {}),
    ],
    ids=[
        "string",
        "empty-string",
        "none",
        "no-content",
        "no-message",
        "message-not-a-dict",
        "content-not-text",
        "parts",
        "empty-text-part",
        "no-parts",
        "no-text-parts",
        "index-order",
        "position-fallback",
        "null-choice",
        "bad-index",
        "no-choices",
    ],
)
def test_completion_texts(choices: list[Any], expected: dict[int, str]) -> None:
    texts = completion_texts({"object": "chat.completion", "choices": choices})
    assert texts == expected
    assert list(texts) == sorted(texts)


@pytest.mark.parametrize(
    "completion",
    [{}, {"choices": None}, {"choices": {"0": "x"}}, None, "text"],
    ids=["empty", "null", "dict", "none", "str"],
)
def test_completion_texts_of_something_else_is_empty(completion: Any) -> None:
    assert completion_texts(completion) == {}


def test_max_chars_bounds_each_choice_and_says_so() -> None:
    acc = ChunkAccumulator(max_chars=5)
    for piece in ("abc", "def", "ghi"):
        acc.add({"choices": [{"index": 0, "delta": {"content": piece}}]})
    acc.add({"choices": [{"index": 1, "delta": {"content": "xy"}}]})
    assert acc.texts() == {0: "abcde", 1: "xy"}
    assert acc.truncated is True


def test_max_chars_not_reached_is_not_truncated() -> None:
    acc = ChunkAccumulator(max_chars=6)
    acc.add({"choices": [{"index": 0, "delta": {"content": "abcdef"}}]})
    assert (acc.text(), acc.truncated) == ("abcdef", False)


@pytest.mark.parametrize(
    ("completion", "readable"),
    [
        ({"choices": [{"message": {"content": "hi"}}]}, True),
        ({"choices": [{"message": {"content": None, "tool_calls": []}}]}, True),
        ({"choices": [{"message": {"content": [{"type": "text", "text": "a"}]}}]}, True),
        ({"choices": []}, True),
        ({"choices": ["hi"]}, False),
        ({"choices": [{"text": "hi"}]}, False),
        ({"choices": [{"message": {"content": {"text": "hi"}}}]}, False),
        ({"choices": [{"message": "hi"}]}, False),
        ({"choices": {"0": {}}}, False),
        ({"error": {"message": "x"}}, False),
        (["hi"], False),
        (None, False),
    ],
)
def test_readable_completion(completion: Any, readable: bool) -> None:
    assert readable_completion(completion) is readable
