import pytest

from guard.parsing import extract_json, unwrap_reason


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"opinions": ["a"]}', {"opinions": ["a"]}),
        ('```json\n{"opinions": ["a"]}\n```', {"opinions": ["a"]}),
        ('```\n{"opinions": []}\n```', {"opinions": []}),
        (
            'Here you go:\n{"results": [{"result": "no", "reason": "r"}]}\nThanks',
            {"results": [{"result": "no", "reason": "r"}]},
        ),
        ('{"opinions": ["a", "b",],}', {"opinions": ["a", "b"]}),
        (
            '{"opinions": ["has } brace", "and \\" quote"]}',
            {"opinions": ["has } brace", 'and " quote']},
        ),
        ('{"a": 1, "extra": {"nested": [1, 2]}}', {"a": 1, "extra": {"nested": [1, 2]}}),
        ('noise {not json} then {"ok": true}', {"ok": True}),
        ('[{"result": "yes"}]', [{"result": "yes"}]),
    ],
)
def test_extract_json(text: str, expected: object) -> None:
    assert extract_json(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A list repeated until max_tokens cut it: its whole entries.
        ('{"opinions": ["a", "b", "a", "b", "a', {"opinions": ["a", "b", "a", "b"]}),
        ('{"opinions": ["a", "b"', {"opinions": ["a"]}),
        ('{"opinions": ["a, still a", "b\\" and', {"opinions": ["a, still a"]}),
        # The last whole verdict, not the one cut before its reason.
        (
            '{"results": [{"result": "no", "categories": [], "reason": "r"}, {"result": "no", "',
            {"results": [{"result": "no", "categories": [], "reason": "r"}]},
        ),
    ],
)
def test_an_answer_cut_inside_its_json_keeps_its_whole_entries(text: str, expected: object) -> None:
    assert extract_json(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "no json here", "{broken", "```json\n{oops}\n```", '{"opinions": ['],
)
def test_extract_json_raises_when_nothing_parses(text: str) -> None:
    with pytest.raises(ValueError, match="no JSON"):
        extract_json(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The score is 0 because nothing is biased.", "The score is 0 because nothing is biased."),
        ('{"reason": "The score is 1 because X."}', "The score is 1 because X."),
        ('```json\n{"reason": "Fenced."}\n```', "Fenced."),
        ('```\n{"explanation": "Other key."}\n```', "Other key."),
        ("```\nJust prose in a fence.\n```", "Just prose in a fence."),
        ("  padded  ", "padded"),
        ('{"score": 1}', '{"score": 1}'),
    ],
)
def test_unwrap_reason(text: str, expected: str) -> None:
    assert unwrap_reason(text) == expected
