"""The live probe's caps: replays and upstream tokens over a sliding minute."""

from __future__ import annotations

from gateway.probe import ReplayCaps


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_probe_is_admitted_whole_or_not_at_all() -> None:
    clock = Clock()
    caps = ReplayCaps(max_per_minute=10, max_tokens_per_minute=None, clock=clock)
    assert [caps.admit(4) for _ in range(3)] == [None, None, "max_per_minute"]
    assert caps.admit(2) is None  # what is left still fits a smaller probe
    assert caps.admit(1) == "max_per_minute"


def test_replays_leave_the_window_a_minute_after_they_went() -> None:
    clock = Clock()
    caps = ReplayCaps(max_per_minute=3, max_tokens_per_minute=None, clock=clock)
    assert caps.admit(3) is None
    clock.now += 59.9
    assert caps.admit(1) == "max_per_minute"
    clock.now += 0.1
    assert caps.admit(3) is None


def test_no_probe_starts_while_the_minute_s_tokens_are_at_the_cap() -> None:
    clock = Clock()
    caps = ReplayCaps(max_per_minute=100, max_tokens_per_minute=1000, clock=clock)
    assert caps.admit(2) is None
    caps.spent(600)
    assert caps.admit(2) is None  # 600 < 1000: the next probe may start
    caps.spent(600)
    assert caps.tokens_last_minute() == 1200
    assert caps.admit(2) == "max_tokens_per_minute"
    clock.now += 60
    assert caps.tokens_last_minute() == 0
    assert caps.admit(2) is None
