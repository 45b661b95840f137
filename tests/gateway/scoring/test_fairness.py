"""The fair queue's order: weighted round robin between keys, first in first out within one."""

from __future__ import annotations

from collections import Counter

import pytest

from gateway.scoring.fairness import FairQueue, key_of


def drain(queue: FairQueue[str]) -> list[str]:
    return [queue.pop() for _ in range(len(queue))]


def test_one_key_is_first_in_first_out() -> None:
    queue: FairQueue[str] = FairQueue(lambda key: 1.0)
    for n in range(5):
        queue.push("a", f"a{n}")
    assert drain(queue) == ["a0", "a1", "a2", "a3", "a4"]


def test_equal_keys_take_turns_whatever_order_they_came_in() -> None:
    queue: FairQueue[str] = FairQueue(lambda key: 1.0)
    for n in range(14):
        queue.push("flood", f"f{n}")
    queue.push("small", "s0")
    queue.push("small", "s1")
    assert drain(queue)[:5] == ["f0", "s0", "f1", "s1", "f2"]


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ({"a": 1.0, "b": 1.0}, {"a": 30, "b": 30}),
        ({"a": 2.0, "b": 1.0}, {"a": 40, "b": 20}),
        ({"a": 1.0, "b": 3.0}, {"a": 15, "b": 45}),
        ({"a": 1.0, "b": 1.0, "c": 2.0}, {"a": 15, "b": 15, "c": 30}),
    ],
)
def test_while_every_key_waits_each_is_served_its_weighted_share(
    weights: dict[str, float], expected: dict[str, int]
) -> None:
    queue: FairQueue[str] = FairQueue(weights.__getitem__)
    for key in weights:
        for _ in range(100):
            queue.push(key, key)
    served = Counter(queue.pop() for _ in range(60))
    assert dict(served) == expected


def test_turns_are_spread_out_not_bunched() -> None:
    queue: FairQueue[str] = FairQueue({"a": 3.0, "b": 1.0}.__getitem__)
    for _ in range(8):
        queue.push("a", "a")
        queue.push("b", "b")
    assert "".join(drain(queue)[:8]) == "aabaaaba"


def test_an_idle_key_saves_up_no_turns() -> None:
    queue: FairQueue[str] = FairQueue(lambda key: 1.0)
    queue.push("a", "a0")
    queue.push("b", "b0")
    assert drain(queue) == ["a0", "b0"]
    for n in range(1, 4):
        queue.push("b", f"b{n}")
    assert queue.pop() == "b1"
    for n in range(1, 4):
        queue.push("a", f"a{n}")
    # a, back after idling, alternates with b (which waited longer, so goes first in a
    # tie); it gets no burst of turns for its idle time.
    assert drain(queue) == ["b2", "a1", "b3", "a2", "a3"]


def test_pop_of_an_empty_queue_raises_and_clear_returns_what_waited() -> None:
    queue: FairQueue[str] = FairQueue(lambda key: 1.0)
    with pytest.raises(IndexError):
        queue.pop()
    queue.push("a", "a0")
    queue.push("b", "b0")
    assert queue.waiting("a") == 1
    assert queue.waiting("z") == 0
    assert sorted(queue.clear()) == ["a0", "b0"]
    assert len(queue) == 0


def test_open_mode_shares_one_line() -> None:
    assert key_of(None) == key_of("") == ""
    assert key_of("team-a") == "team-a"
