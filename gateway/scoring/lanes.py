"""Which lane a scoring's judge calls go in, and for which key (`guard.limits.lanes`).

An enforced response waits for its verdict: its calls go first. Monitor verdicts
come next, then explanations, which someone reads later if at all, with the canary's
checks of a new judge, which nobody waits for, and a live probe's replayed answers
(`gateway.probe`) last. Within a lane the keys take turns, weighted by
`keys[].weight`, so one key's flood gets no more than its share of the judge while
others wait.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from gateway.config import Settings
from gateway.observability.metrics import Metrics
from gateway.scoring.request import ScoreRequest
from guard.judge import Judge
from guard.limits import LANES, JudgeLimiter, Lane, caller, calling_as, deadline

__all__ = [
    "awaited",
    "enforcing",
    "explaining",
    "monitoring",
    "observe_limiter",
    "probing",
    "rechecking",
]


def _weight(request: ScoreRequest, settings: Settings) -> float:
    return settings.key_weight(request.key_name)


def enforcing(request: ScoreRequest, settings: Settings) -> contextlib.AbstractContextManager[None]:
    """Judge calls inside are an enforced response's: the first lane."""
    return calling_as(Lane.ENFORCE, request.key_name, _weight(request, settings))


@contextlib.contextmanager
def awaited(request: ScoreRequest, settings: Settings, seconds: float | None) -> Iterator[None]:
    """Judge calls inside are ones a client's response waits for: enforce's lane, for the
    request's key and its weight, each given up `seconds` from now. Whatever an enforced
    response waits for, a whole answer or a window of a stream, is judged inside."""
    with deadline(seconds), enforcing(request, settings):
        yield


def monitoring(
    request: ScoreRequest, settings: Settings
) -> contextlib.AbstractContextManager[None]:
    """Judge calls inside are a monitor job's verdicts."""
    return calling_as(Lane.MONITOR, request.key_name, _weight(request, settings))


def probing(key_name: str | None, settings: Settings) -> contextlib.AbstractContextManager[None]:
    """Judge calls inside judge a live probe's replayed answers, for the key whose request
    was replayed: the last lane, below monitor and explanations."""
    return calling_as(Lane.PROBE, key_name, settings.key_weight(key_name))


@contextlib.contextmanager
def explaining(*, deferred: bool = False) -> Iterator[None]:
    """Judge calls inside write an explanation: the last lane, for the same key. One an
    enforced response waits for (`reason: inline`) stays in enforce's lane, unless it
    is `deferred` (the response has gone)."""
    who = caller()
    if who.lane is Lane.ENFORCE and not deferred:
        yield
        return
    with calling_as(Lane.EXPLAIN, who.key or None, who.weight):
        yield


def rechecking(
    request: ScoreRequest, settings: Settings
) -> contextlib.AbstractContextManager[None]:
    """Judge calls inside judge a labelled record again, to check a new judge against
    the reviewers (`gateway.server.canary`): nobody waits for them, so the last lane."""
    return calling_as(Lane.EXPLAIN, request.key_name, _weight(request, settings))


def observe_limiter(judge: Judge, metrics: Metrics) -> None:
    """Set the judge limiter's gauges: calls in flight, the concurrency limit, and each
    lane's calls, time waited and time answering."""
    limiter = getattr(judge, "limiter", None)
    if isinstance(limiter, JudgeLimiter):
        metrics.judge_in_flight.set(limiter.stats.in_flight)
        metrics.judge_concurrency_limit.set(limiter.limit or 0)
        for lane in LANES:
            metrics.judge_lane_calls.labels(lane.value).set(limiter.stats.calls[lane])
            metrics.judge_lane_wait_seconds.labels(lane.value).set(limiter.stats.waited[lane])
            answering = limiter.stats.answering[lane]
            metrics.judge_lane_answer_seconds.labels(lane.value).set(answering)
