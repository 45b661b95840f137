"""Who gets the next judge slot: lane order, reserved shares, weighted turns by key."""

from __future__ import annotations

import collections

import pytest

from guard.limits import Caller, Lane
from guard.limits.lanes import LaneQueue

ENFORCE, MONITOR, EXPLAIN, PROBE = Lane.ENFORCE, Lane.MONITOR, Lane.EXPLAIN, Lane.PROBE
IDLE = dict.fromkeys(Lane, 0)


def queue_of(*callers: Caller, reserved: dict[Lane, float] | None = None) -> LaneQueue[str]:
    queue: LaneQueue[str] = LaneQueue() if reserved is None else LaneQueue(reserved)
    for number, who in enumerate(callers):
        queue.push(f"{who.lane}:{who.key}:{number}", who)
    return queue


def test_lanes_go_in_order_enforce_monitor_explain_probe() -> None:
    queue = queue_of(Caller(PROBE), Caller(EXPLAIN), Caller(MONITOR), Caller(ENFORCE), reserved={})
    popped = [queue.pop(IDLE, 10) for _ in range(4)]
    assert [item.split(":")[0] if item else None for item in popped] == [
        "enforce",
        "monitor",
        "explain",
        "probe",
    ]
    assert queue.pop(IDLE, 10) is None
    assert len(queue) == 0


def test_a_background_lane_below_its_reserved_share_goes_before_enforce() -> None:
    queue = queue_of(Caller(ENFORCE), Caller(MONITOR), Caller(EXPLAIN))
    # 20 slots: monitor keeps 4 (a fifth), explain 1 (a twentieth).
    running = {ENFORCE: 15, MONITOR: 3, EXPLAIN: 0}
    assert queue.next_lane(running, 20) is MONITOR
    running[MONITOR] = 4
    assert queue.next_lane(running, 20) is EXPLAIN
    running[EXPLAIN] = 1
    assert queue.next_lane(running, 20) is ENFORCE


def test_a_reserved_share_is_at_least_one_slot_when_the_limit_is_small() -> None:
    queue = queue_of(Caller(ENFORCE), Caller(EXPLAIN))
    assert queue.next_lane({ENFORCE: 2, MONITOR: 0, EXPLAIN: 0}, 3) is EXPLAIN
    assert queue.next_lane({ENFORCE: 1, MONITOR: 0, EXPLAIN: 1}, 3) is ENFORCE


@pytest.mark.parametrize(
    ("limit", "floors"),
    [
        (1, {MONITOR: 0, EXPLAIN: 0}),
        (2, {MONITOR: 1, EXPLAIN: 0}),
        (3, {MONITOR: 1, EXPLAIN: 1}),
        (100, {MONITOR: 20, EXPLAIN: 5}),
    ],
)
def test_reserved_shares_always_leave_enforce_a_slot(limit: int, floors: dict[Lane, int]) -> None:
    assert LaneQueue().floors(limit) == floors


def test_without_a_limit_lanes_simply_go_in_order() -> None:
    queue = queue_of(Caller(MONITOR), Caller(ENFORCE))
    assert queue.next_lane(IDLE, None) is ENFORCE


def test_reserved_shares_hold_over_many_turnovers() -> None:
    """Flooded lanes, 20 slots: each slot that comes free goes by the rules; the
    share of slots each lane holds settles at enforce's rest and the reservations."""
    queue: LaneQueue[Lane] = LaneQueue()
    for each in Lane:
        for _ in range(1000):
            queue.push(each, Caller(each))
    running = dict.fromkeys(Lane, 0)
    held: collections.deque[Lane] = collections.deque()
    for _ in range(20):
        popped = queue.pop(running, 20)
        assert popped is not None
        running[popped] += 1
        held.append(popped)
    for _ in range(500):  # the oldest call ends, the next waiter takes its slot
        running[held.popleft()] -= 1
        popped = queue.pop(running, 20)
        assert popped is not None
        running[popped] += 1
        held.append(popped)
    # The probe's lane keeps no share: flooded lanes above it leave it nothing.
    assert running == {ENFORCE: 15, MONITOR: 4, EXPLAIN: 1, PROBE: 0}


def test_keys_take_turns_within_a_lane() -> None:
    queue = queue_of(*(Caller(MONITOR, "big") for _ in range(6)), Caller(MONITOR, "small"))
    order = [queue.pop(IDLE, None) for _ in range(4)]
    keys = [item.split(":")[1] for item in order if item]
    assert keys[:2] in (["big", "small"], ["small", "big"])
    assert keys[2:] == ["big", "big"]  # the small key had nothing more


def test_weights_set_each_keys_share_of_turns() -> None:
    callers = [Caller(ENFORCE, "heavy", 3.0) for _ in range(300)]
    callers += [Caller(ENFORCE, "light", 1.0) for _ in range(300)]
    queue = queue_of(*callers)
    served = collections.Counter(
        item.split(":")[1] for item in (queue.pop(IDLE, None) for _ in range(200)) if item
    )
    assert served == {"heavy": 150, "light": 50}


def test_a_key_that_was_idle_gets_no_burst_when_it_comes_back() -> None:
    queue: LaneQueue[str] = LaneQueue()
    for number in range(50):
        queue.push(f"busy{number}", Caller(MONITOR, "busy"))
    for _ in range(40):
        queue.pop(IDLE, None)
    for number in range(10):
        queue.push(f"back{number}", Caller(MONITOR, "back"))
    served = [queue.pop(IDLE, None) for _ in range(6)]
    assert sum(1 for item in served if item and item.startswith("back")) == 3


def test_a_waiter_that_gave_up_is_taken_out() -> None:
    queue: LaneQueue[str] = LaneQueue()
    who = Caller(ENFORCE, "a")
    queue.push("first", who)
    queue.push("second", who)
    assert queue.remove("first", who)
    assert not queue.remove("first", who)  # no longer there
    assert queue.waiting(ENFORCE) == 1
    assert queue.pop(IDLE, 4) == "second"
    assert len(queue) == 0


@pytest.mark.parametrize(
    "reserved",
    [{MONITOR: -0.1}, {MONITOR: 0.6, EXPLAIN: 0.5}, {ENFORCE: 0.1}, {MONITOR: 1.0}],
)
def test_bad_reserved_shares_are_refused(reserved: dict[Lane, float]) -> None:
    with pytest.raises(ValueError, match="share"):
        LaneQueue(reserved)
