"""`WindowSplitter` and `coalesce`: windows over an answer offered event by event."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.scoring.windows import Window, WindowSplitter, coalesce, ends_sentence


def split(
    pieces: list[str], *, window: int = 10, context: int = 4, margin: int = 5
) -> list[Window]:
    """Windows over one text arriving as `pieces`, one event each."""
    splitter = WindowSplitter(window_chars=window, context_chars=context, margin=margin)
    text = ""
    windows = []
    for events, piece in enumerate(pieces, 1):
        text += piece
        closed = splitter.offer([text], events)
        if closed is not None:
            windows.append(closed)
    tail = splitter.finish([text], len(pieces))
    return windows + ([tail] if tail is not None else [])


@pytest.mark.parametrize(
    ("text", "ends"),
    [
        ("It rains.", True),
        ("It rains", False),
        ('He said "no."', True),
        ("Why? ", True),
        ("a list:\n", True),
        ("(see above).)", True),
        ("\u5b8c\u4e86\u3002", True),
        ("3.5 million", False),
        ("", False),
    ],
)
def test_sentence_ends(text: str, ends: bool) -> None:
    assert ends_sentence(text) is ends


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        # Past 10 characters at a sentence end: the window closes there.
        (["Hello there.", " More text."], [(0, 12), (12, 23)]),
        # No sentence end: it waits the margin (5) out, then closes anyway.
        (["abcdefghij", "klm", "nopq"], [(0, 17)]),
        (["abcdefghij", "klmnop", "q"], [(0, 16), (16, 17)]),
        # Under one window: only the tail, the whole text.
        (["short."], [(0, 6)]),
        ([], []),
        # A long event is never split.
        (["x" * 40], [(0, 40)]),
    ],
)
def test_windows_close_at_event_ends(pieces: list[str], expected: list[tuple[int, int]]) -> None:
    assert [(window.start, window.end) for window in split(pieces)] == expected


def test_a_window_carries_the_text_before_it_as_context() -> None:
    first, second = split(["Hello there.", " More text."], context=4)
    assert first.parts[0].context == ""
    assert second.parts[0].context == "ere."
    assert second.parts[0].text == " More text."
    assert (second.parts[0].start, second.parts[0].end) == (12, 23)
    assert second.events == 2


def test_each_text_of_an_answer_has_its_own_part() -> None:
    splitter = WindowSplitter(window_chars=10, context_chars=3, margin=0)
    assert splitter.offer(["abcdef", "ghi"], 1) is None
    window = splitter.offer(["abcdef.", "ghij."], 2)
    assert window is not None
    assert [(part.index, part.text) for part in window.parts] == [(0, "abcdef."), (1, "ghij.")]
    later = splitter.finish(["abcdef.", "ghij. More."], 3)
    assert later is not None
    assert [(part.index, part.text, part.context) for part in later.parts] == [(1, " More.", "ij.")]
    assert (later.start, later.end) == (12, 18)


def test_with_several_texts_the_others_end_at_their_last_sentence_end() -> None:
    """`n` > 1: choices stream in turns, so when one ends a sentence the others are
    mid-sentence; theirs wait for the next window, and so do their events."""
    splitter = WindowSplitter(window_chars=10, context_chars=3, margin=20)
    assert splitter.offer(["One two.", ""], 1) is None
    assert splitter.offer(["One two.", "Red. Blue"], 2) is None  # grew mid-sentence
    first = splitter.offer(["One two. Three.", "Red. Blue"], 3)
    assert first is not None
    assert [(p.index, p.start, p.end, p.text) for p in first.parts] == [
        (0, 0, 15, "One two. Three."),
        (1, 0, 5, "Red. "),
    ]
    # Event 2 carried " Blue", judged in no window yet: only event 1 may go out.
    assert first.events == 1
    second = splitter.offer(["One two. Three.", "Red. Blue sky today."], 4)
    assert second is not None
    assert [(p.index, p.text, p.context) for p in second.parts] == [(1, "Blue sky today.", "d. ")]
    assert second.events == 4  # every text judged to its end: all four


def test_a_text_that_did_not_grow_closes_nothing() -> None:
    splitter = WindowSplitter(window_chars=5, context_chars=0, margin=0)
    assert splitter.offer(["abcdef."], 1) is not None
    assert splitter.offer(["abcdef."], 2) is None
    assert splitter.finish(["abcdef."], 3) is None


@pytest.mark.parametrize(("window", "context", "margin"), [(0, 0, 0), (5, -1, 0), (5, 0, -1)])
def test_bad_sizes_are_refused(window: int, context: int, margin: int) -> None:
    with pytest.raises(ValueError, match="window_chars must be positive"):
        WindowSplitter(window_chars=window, context_chars=context, margin=margin)


@given(
    st.lists(st.text(alphabet="ab .\n\u00e9", min_size=1, max_size=30), max_size=40),
    st.integers(1, 60),
    st.integers(0, 30),
    st.integers(0, 30),
)
def test_windows_tile_the_text_and_stay_bounded(
    pieces: list[str], window: int, context: int, margin: int
) -> None:
    windows = split(pieces, window=window, context=context, margin=margin)
    text = "".join(pieces)
    assert "".join(w.parts[0].text for w in windows) == text
    assert [w.start for w in windows] == [0, *(w.end for w in windows)][: len(windows)]
    longest = max((len(piece) for piece in pieces), default=0)
    for w in windows[:-1]:
        assert window <= w.chars < window + margin + longest
    for w in windows:
        part = w.parts[0]
        assert text[part.start : part.end] == part.text
        assert part.context == text[max(0, part.start - context) : part.start]
    # The text sent to the judge: each window's text once, plus at most its context.
    sent = sum(len(w.parts[0].text) + len(w.parts[0].context) for w in windows)
    assert sent <= len(text) + context * max(0, len(windows) - 1)


def test_waiting_windows_coalesce_up_to_the_bound() -> None:
    windows = split(["aaaaaaaaaa.", "bbbbbbbbbb.", "cccccccccc.", "dd."], context=3)
    assert len(windows) == 4
    waiting = deque(windows)
    joined = coalesce(waiting, max_chars=25)
    assert (joined.start, joined.end, joined.events) == (0, 22, 2)
    assert joined.parts[0].text == "aaaaaaaaaa.bbbbbbbbbb."
    assert joined.parts[0].context == ""
    assert [w.number for w in waiting] == [2, 3]
    rest = coalesce(waiting, max_chars=25)
    assert (rest.start, rest.end, rest.parts[0].context) == (22, 36, "bb.")
    assert not waiting


def test_one_window_is_taken_even_past_the_bound() -> None:
    waiting = deque(split(["x" * 40, "y" * 40]))
    assert coalesce(waiting, max_chars=5).end == 40
    assert len(waiting) == 1
