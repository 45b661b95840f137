"""A text in parts: every read is the concatenation of the parts so far."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway.wire.parts import TextParts


def test_an_empty_text_is_false_and_reads_empty() -> None:
    parts = TextParts()
    assert not parts
    assert parts.text() == ""
    parts.append("")
    assert parts  # a part arrived, even an empty one
    assert parts.text() == ""


@given(st.lists(st.tuples(st.text(max_size=8), st.booleans()), max_size=60))
def test_reads_between_appends_see_every_part_so_far(steps: list[tuple[str, bool]]) -> None:
    parts = TextParts()
    appended: list[str] = []
    for part, read in steps:
        parts.append(part)
        appended.append(part)
        if read:
            assert parts.text() == "".join(appended)
    assert parts.text() == "".join(appended)
    assert parts.text() == "".join(appended)  # a second read with nothing new
