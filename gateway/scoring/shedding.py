"""Overload sheds evenly: which monitored responses to score when the judge cannot keep up. Pure.

Without it, a queue that fills skips whatever arrives next (`overloaded`), so the
scored sample is whichever responses came first, and one key's flood decides
whose responses go unscored. The `Shedder` instead gives each API key a rate,
the share of its responses scored, and picks them with the policy sampler's
fraction carried forward (`gateway.scoring.policy.Sampler`): deterministic, and
spread evenly over the key's traffic. The rest are skipped `overload_sampled`,
and every record made while a key's rate is below 1 carries that rate.

Every `interval` seconds the rates are worked out again from what the last
interval showed:

- capacity: monitor scorings finished a second, measured while the queue held a
  backlog throughout (the judge was the limit); while it did not, capacity is at
  least what was done, and the rates rise until a backlog shows again;
- demand: each key's responses a second (smoothed);
- the allowance: capacity, plus what brings the queue towards `target_wait`
  seconds of work (at most half the queue) within `_HORIZON` seconds, so a
  backlog above that shrinks and one below it is let grow; that correction is
  at most `_CORRECTION` of the capacity either way, so a backlog left by a stall
  is worked off over several seconds instead of by shedding nearly everything
  at once, which would score the traffic of those seconds far less than the rest;
- the allowance is shared out by weight (`keys[].weight`), max-min fair: a key
  asking less than its share is scored in full, and what it leaves goes to the
  others. A key's rate is its allowance over its demand, at most 1.

Until the queue has first held a backlog, every rate is 1.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gateway.scoring.policy import Sampler

__all__ = ["LogThrottle", "Shedder", "water_fill"]

_HORIZON = 5.0  # seconds over which the backlog is brought to its target
_CORRECTION = 0.1  # the most the backlog moves the allowance, as a share of capacity
_SMOOTHING = 0.3  # weight of the newest interval in the smoothed capacity and demand
_MIN_RATE = 0.01  # a key under overload still has some of its traffic scored
_IDLE = 0.01  # responses a second below which a key is forgotten


def water_fill(
    total: float, demands: Mapping[str, float], weight: Callable[[str], float]
) -> dict[str, float]:
    """Share `total` among `demands`, max-min fair by weight: no key gets more than it
    asks, and what one leaves is shared among the rest by their weights.

    >>> water_fill(300.0, {"big": 280.0, "small": 20.0}, lambda key: 1.0)
    {'small': 20.0, 'big': 280.0}
    >>> water_fill(150.0, {"big": 280.0, "small": 20.0}, lambda key: 1.0)
    {'small': 20.0, 'big': 130.0}
    """
    shares: dict[str, float] = {}
    left = max(0.0, total)
    asking = {key: demand for key, demand in demands.items() if demand > 0}
    while asking:
        weights = sum(weight(key) for key in asking)
        content = [key for key, demand in asking.items() if demand <= left * weight(key) / weights]
        if not content:
            for key in asking:
                shares[key] = left * weight(key) / weights
            break
        for key in content:
            shares[key] = asking.pop(key)
            left -= shares[key]
    return shares


@dataclass(slots=True)
class _Key:
    sampler: Sampler
    arrivals: int = 0
    demand: float | None = None  # responses a second, smoothed


class Shedder:
    """Per-key scoring rates, retuned every `interval` seconds from the queue's load."""

    def __init__(
        self,
        *,
        target_wait: float,
        size: int,
        weight: Callable[[str], float],
        clock: Callable[[], float] = time.monotonic,
        interval: float = 1.0,
    ) -> None:
        self.target_wait = target_wait
        self.size = size
        self.weight = weight
        self.clock = clock
        self.interval = interval
        self.capacity: float | None = None  # scorings a second, once a backlog showed it
        self._keys: dict[str, _Key] = {}
        self._since = clock()
        self._done = 0
        self._least_depth: int | None = None  # the smallest queue depth seen this interval

    def admit(self, key: str, depth: int) -> tuple[bool, float]:
        """Whether to score `key`'s next response, and the key's rate now; `depth` is
        how many jobs wait in the queue."""
        self._retune(depth)
        entry = self._keys.get(key)
        if entry is None:
            entry = self._keys[key] = _Key(Sampler(1.0))
        entry.arrivals += 1
        return entry.sampler.take(), entry.sampler.rate

    def done(self) -> None:
        """A monitor scoring finished (its judge work, whatever it came to)."""
        self._done += 1

    def rate(self, key: str) -> float:
        entry = self._keys.get(key)
        return entry.sampler.rate if entry is not None else 1.0

    def rates(self) -> dict[str, float]:
        return {key: entry.sampler.rate for key, entry in self._keys.items()}

    def _retune(self, depth: int) -> None:
        least = self._least_depth
        self._least_depth = depth if least is None else min(least, depth)
        now = self.clock()
        elapsed = now - self._since
        if elapsed < self.interval:
            return
        throughput = self._done / elapsed
        if self._least_depth > 0:  # a backlog all along: the judge set the pace
            self.capacity = _smoothed(self.capacity, throughput)
        elif self.capacity is not None:
            self.capacity = max(self.capacity, throughput)
        demands: dict[str, float] = {}
        for key, entry in list(self._keys.items()):
            entry.demand = _smoothed(entry.demand, entry.arrivals / elapsed)
            entry.arrivals = 0
            if entry.demand < _IDLE and entry.sampler.rate == 1:
                del self._keys[key]
            else:
                demands[key] = entry.demand
        self._since, self._done, self._least_depth = now, 0, depth
        if self.capacity is None:
            return
        target = min(self.size / 2, self.capacity * self.target_wait)
        correction = (target - depth) / _HORIZON
        bound = _CORRECTION * self.capacity
        allowance = self.capacity + min(bound, max(-bound, correction))
        shares = water_fill(allowance, demands, self.weight)
        for key, demand in demands.items():
            rate = 1.0 if demand <= 0 else shares.get(key, 0.0) / demand
            self._keys[key].sampler.retune(min(1.0, max(_MIN_RATE, rate)))


def _smoothed(previous: float | None, latest: float) -> float:
    if previous is None:
        return latest
    return previous + _SMOOTHING * (latest - previous)


class LogThrottle:
    """Lets an event through at most once per `seconds`; counts the ones held back (the
    warning that responses go unscored, logged once a second at most)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._last = float("-inf")
        self._held = 0

    def ready(self) -> int | None:
        now = time.monotonic()
        if now - self._last < self.seconds:
            self._held += 1
            return None
        held, self._held, self._last = self._held, 0, now
        return held
