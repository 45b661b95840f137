"""How much a live probe may replay: `max_per_minute` replays and `max_tokens_per_minute`
upstream tokens, each over the last minute. Pure bookkeeping on an injected clock.

A probe's replays are admitted together or not at all, so that no probe is stored
with half its groups. The tokens of a replay are known only once it is answered:
a probe starts while the last minute's tokens are under the cap, so the cap can be
passed by the replays of the probes in flight, never by a probe started after.

>>> now = [0.0]
>>> caps = ReplayCaps(max_per_minute=5, max_tokens_per_minute=100, clock=lambda: now[0])
>>> caps.admit(3), caps.admit(3)
(None, 'max_per_minute')
>>> caps.spent(120); caps.admit(1)
'max_tokens_per_minute'
>>> now[0] = 60.0; caps.admit(3)
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Literal

__all__ = ["DropReason", "ReplayCaps"]

DropReason = Literal["max_per_minute", "max_tokens_per_minute"]
MINUTE = 60.0


class ReplayCaps:
    def __init__(
        self,
        *,
        max_per_minute: int,
        max_tokens_per_minute: int | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_per_minute = max_per_minute
        self.max_tokens_per_minute = max_tokens_per_minute
        self.clock = clock
        self._sent: deque[float] = deque()
        self._tokens: deque[tuple[float, int]] = deque()
        self._token_sum = 0

    def admit(self, replays: int) -> DropReason | None:
        """Take `replays` from the minute's allowance, or say which cap refuses them all."""
        now = self.clock()
        self._forget(now)
        if len(self._sent) + replays > self.max_per_minute:
            return "max_per_minute"
        cap = self.max_tokens_per_minute
        if cap is not None and self._token_sum >= cap:
            return "max_tokens_per_minute"
        self._sent.extend([now] * replays)
        return None

    def spent(self, tokens: int) -> None:
        """An answered replay used `tokens` upstream tokens."""
        self._tokens.append((self.clock(), tokens))
        self._token_sum += tokens

    def tokens_last_minute(self) -> int:
        self._forget(self.clock())
        return self._token_sum

    def _forget(self, now: float) -> None:
        while self._sent and self._sent[0] <= now - MINUTE:
            self._sent.popleft()
        while self._tokens and self._tokens[0][0] <= now - MINUTE:
            self._token_sum -= self._tokens.popleft()[1]
