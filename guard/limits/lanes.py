"""Who gets the next free judge slot: lanes in order, reserved shares, keys in turn.

Pure bookkeeping, no I/O and no clock, so its order is tested exhaustively.
`LaneQueue.pop` picks the next waiter:

1. a lower lane (monitor, then explain) that holds fewer slots than its reserved
   share of the limit goes first, so background work always progresses;
2. else the most urgent lane with a waiter.

The probe's lane, last, keeps no share: a live probe's replays are judged with
what the other lanes leave, and wait for it.

Calls take about as long whichever lane they are in, so within one call's
duration every slot held now comes free; enforce is handed all of them bar the
reserved shares, which never take every slot. That is how an enforced request
waits no longer than one call for a slot that background work holds.

Within a lane, keys take turns weighted by their `weight` (stride scheduling:
each key has a pass that grows by 1/weight with each slot it is handed, and the
lowest pass goes next). A key that had nothing waiting rejoins at the lane's
current pass, so idleness earns no burst later.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Generic, TypeVar

from guard.limits.context import LANES, Caller, Lane

__all__ = ["DEFAULT_RESERVED", "LaneQueue"]

T = TypeVar("T")

# The least share of the slots kept for each background lane while it has work. Enforce
# gets the rest of every turnover; a fifth keeps the monitor's verdicts coming when
# enforced traffic alone could use the judge, and explanations, which nobody waits
# for, still get a twentieth (at least one slot).
DEFAULT_RESERVED: Mapping[Lane, float] = {Lane.MONITOR: 0.2, Lane.EXPLAIN: 0.05}


class _Keys(Generic[T]):
    """One lane's waiters, a queue per key, served by weighted turns."""

    # Stride scheduling, not the smooth weighted round robin of the gateway's monitor
    # queue (`gateway.scoring.fairness.FairQueue`). A scoring's judge calls come one
    # after another, so the line of a key with few scorings running empties between
    # them; a pass outlives an empty line (a key rejoins at `max(its pass, now)`), so
    # such a key keeps its place in the rotation, where round robin forgets a key's
    # credit once its line empties. The orders also differ on ties and first picks
    # (stride: the oldest key, then alternating), which
    # `test_within_the_enforce_lane_keys_take_turns_by_weight` pins. The weight comes
    # with each call (`Caller.weight`; the gateway sets it from `keys[].weight`), since
    # guard reads no configuration.

    def __init__(self) -> None:
        self.waiting: dict[str, deque[T]] = {}
        self.passes: dict[str, float] = {}
        self.weights: dict[str, float] = {}
        self.now = 0.0  # the pass of the key served last
        self.count = 0

    def push(self, item: T, caller: Caller) -> None:
        queue = self.waiting.get(caller.key)
        if queue is None:
            queue = self.waiting[caller.key] = deque()
            self.passes[caller.key] = max(self.passes.get(caller.key, 0.0), self.now)
        self.weights[caller.key] = caller.weight
        queue.append(item)
        self.count += 1

    def peek(self) -> T:
        return self.waiting[self._next_key()][0]

    def pop(self) -> T:
        key = self._next_key()
        queue = self.waiting[key]
        item = queue.popleft()
        self.count -= 1
        self.now = self.passes[key]
        self.passes[key] += 1.0 / self.weights[key]
        if not queue:
            del self.waiting[key]
        return item

    def remove(self, item: T, caller: Caller) -> bool:
        queue = self.waiting.get(caller.key)
        if queue is None or item not in queue:
            return False
        queue.remove(item)
        self.count -= 1
        if not queue:
            del self.waiting[caller.key]
        return True

    def _next_key(self) -> str:
        return min(self.waiting, key=self.passes.__getitem__)


class LaneQueue(Generic[T]):
    """Waiters for a judge slot, by lane and key; `pop` says who goes next."""

    def __init__(self, reserved: Mapping[Lane, float] = DEFAULT_RESERVED) -> None:
        if any(not 0 <= share < 1 for share in reserved.values()) or sum(reserved.values()) >= 1:
            raise ValueError("reserved shares must be >= 0 and sum to less than 1")
        if reserved.get(Lane.ENFORCE):
            raise ValueError("enforce is first anyway: it has no reserved share")
        self.reserved = dict(reserved)
        self._lanes: dict[Lane, _Keys[T]] = {lane: _Keys() for lane in LANES}

    def __len__(self) -> int:
        return sum(keys.count for keys in self._lanes.values())

    def waiting(self, lane: Lane) -> int:
        return self._lanes[lane].count

    def push(self, item: T, caller: Caller) -> None:
        self._lanes[caller.lane].push(item, caller)

    def remove(self, item: T, caller: Caller) -> bool:
        """Take out a waiter that gave up; False if it is not waiting (it was popped)."""
        return self._lanes[caller.lane].remove(item, caller)

    def next_lane(self, running: Mapping[Lane, int], limit: int | None) -> Lane | None:
        """The lane whose waiter goes next, given the calls `running` in each lane."""
        if limit is not None:
            for lane, floor in self.floors(limit).items():
                if self._lanes[lane].count and running.get(lane, 0) < floor:
                    return lane
        for lane in LANES:
            if self._lanes[lane].count:
                return lane
        return None

    def floors(self, limit: int) -> dict[Lane, int]:
        """The slots each background lane keeps of `limit`: its share, at least one, as
        long as one slot of every turnover is left for enforce."""
        floors: dict[Lane, int] = {}
        left = limit - 1
        for lane, share in self.reserved.items():
            floor = min(left, max(1, math.floor(share * limit))) if share > 0 else 0
            floors[lane] = floor
            left -= floor
        return floors

    def peek(self, running: Mapping[Lane, int], limit: int | None) -> T | None:
        lane = self.next_lane(running, limit)
        return None if lane is None else self._lanes[lane].peek()

    def pop(self, running: Mapping[Lane, int], limit: int | None) -> T | None:
        """The next waiter (taken out), or None when nobody waits."""
        lane = self.next_lane(running, limit)
        return None if lane is None else self._lanes[lane].pop()
