from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from guard import OutputShapeError, assistant_text
from guard.outputs import valid_text

COMPLETION: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "from a completion"},
            "finish_reason": "stop",
        }
    ],
}


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("plain", "plain"),
        ("", ""),
        ({"text": "from text key"}, "from text key"),
        (COMPLETION, "from a completion"),
        (ChatCompletion.model_validate(COMPLETION), "from a completion"),
        (
            [
                {"role": "user", "content": "question"},
                {"role": "assistant", "content": "first"},
                {"role": "tool", "content": "tool output"},
                {"role": "assistant", "content": [{"type": "text", "text": "second"}]},
            ],
            "first\n\nsecond",
        ),
        ({"role": "assistant", "content": "one message"}, "one message"),
    ],
)
def test_assistant_text(output: Any, expected: str) -> None:
    assert assistant_text(output) == expected


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (42, "cannot score output of type int"),
        ({"foo": "bar"}, "cannot score output"),
        ({"choices": []}, "no choices"),
        (
            {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": []}}]},
            "no text content",
        ),
        ([{"role": "user", "content": "only the user"}], "no assistant text"),
        ([], "no assistant text"),
        ([42], "expected a message object"),
    ],
)
def test_assistant_text_rejects_shapes_without_text(output: Any, message: str) -> None:
    with pytest.raises(OutputShapeError, match=message):
        assistant_text(output)


def test_output_shape_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):  # noqa: PT011  (the subclass relation is the point)
        assistant_text(3.5)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("a \ud800 b", "a \N{REPLACEMENT CHARACTER} b"),
        ("\udfff\ud800", "\N{REPLACEMENT CHARACTER}\N{REPLACEMENT CHARACTER}"),
        ("\ud83d\ude00", "\N{GRINNING FACE}"),  # a pair written as two code points is joined
        ("", ""),
    ],
)
def test_valid_text(text: str, expected: str) -> None:
    assert valid_text(text) == expected
    valid_text(text).encode("utf-8")


def test_assistant_text_repairs_lone_surrogates() -> None:
    assert assistant_text({"text": "x\ud800"}) == "x\N{REPLACEMENT CHARACTER}"
