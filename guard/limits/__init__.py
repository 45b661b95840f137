"""How fast a judge may be called: slots by lane and key, budgets, 429 pauses.

A real judge rate-limits, and the calls of one gateway compete for it: an
enforced response waits for its verdict, monitor verdicts are recorded after
the fact, and explanations are read later still. A `JudgeLimiter` is shared
by every call of one judge client:

- at most `max_concurrency` calls are in flight, or the number an
  `AdaptiveLimit` finds the judge sustains (`max_concurrency: auto`);
- a free slot goes to the most urgent lane (`Lane`: enforce, monitor,
  explain), except that each background lane keeps a reserved share, and
  within a lane to the keys in turn, by weight (`guard.limits.lanes`);
- `requests_per_minute` and `tokens_per_minute` are token buckets that refill
  continuously (tokens are estimated before a call and settled after it); the
  request budget is paced, a twentieth of a second's worth at once at most;
- a 429 pauses every call, never longer than `max_pause`, then one probe call
  goes first, and the rest once it was let in (`guard.limits.pauses`).

The lane and key of a call, and how long it may wait, are context variables
set by the code that starts a scoring (`calling_as`, `deadline`), so the
`Judge` protocol stays as it is. Past the deadline a call raises
`JudgeTimeout`, which enforce mode turns into its `on_judge_error` policy.

    limiter = JudgeLimiter(max_concurrency=64, requests_per_minute=500)
    with calling_as(Lane.ENFORCE, "team-a"), deadline(30):
        async with limiter.call(estimated_tokens=900) as call:
            reply = ...  # one HTTP request
            call.settle(reply.usage.prompt_tokens + reply.usage.completion_tokens)
"""

from guard.limits.adaptive import AdaptiveLimit
from guard.limits.budgets import estimate_tokens
from guard.limits.context import LANES, Caller, Lane, caller, calling_as, deadline, remaining
from guard.limits.lanes import DEFAULT_RESERVED
from guard.limits.limiter import JudgeLimiter, LimiterStats
from guard.limits.pauses import DEFAULT_MAX_PAUSE

__all__ = [
    "DEFAULT_MAX_PAUSE",
    "DEFAULT_RESERVED",
    "LANES",
    "AdaptiveLimit",
    "Caller",
    "JudgeLimiter",
    "Lane",
    "LimiterStats",
    "caller",
    "calling_as",
    "deadline",
    "estimate_tokens",
    "remaining",
]
