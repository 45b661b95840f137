import pytest

from guard import bias_score, is_biased


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        ("yes", True),
        ("YES", True),
        ("Yes.", True),
        (" yes ", True),
        ("yes!", True),
        ("no", False),
        ("No.", False),
        ("yes, but mildly", False),
        ("", False),
        ("yess", False),
    ],
)
def test_is_biased(result: str, expected: bool) -> None:
    assert is_biased(result) is expected


@pytest.mark.parametrize(
    ("results", "scale", "expected"),
    [
        ([], 1, 0),
        (["yes"], 1, 1),
        (["no"], 1, 0),
        (["yes", "no", "no"], 1, 0.33),
        (["yes", "yes", "no"], 1, 0.67),
        (["yes", "no", "no", "no"], 1, 0.25),
        (["yes"] * 3 + ["no"] * 2, 1, 0.6),
        (["YES", "Yes.", " yes "], 1, 1),
        (["yes", "no", "no"], 10, 3.33),
        (["yes", "no"], 0.5, 0.25),
    ],
)
def test_bias_score(results: list[str], scale: float, expected: float) -> None:
    assert bias_score(results, scale) == expected


@pytest.mark.parametrize("scale", [0, -1])
def test_bias_score_rejects_bad_scale(scale: float) -> None:
    with pytest.raises(ValueError, match="scale"):
        bias_score(["yes"], scale)
