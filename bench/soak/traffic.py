"""The soak's traffic: a steady open-loop mix of every surface, the read APIs and failures.

Each request is drawn from `KINDS` by weight (a seeded generator, so two runs send
the same sequence) and sent on a task of its own every 1/rate seconds, whatever
the answers do. A model request may carry one mishap, also drawn by weight: a
reply the judge finds biased, an upstream 500, a stream the upstream cuts, or a
stream the client leaves after two chunks. The fake reads the marks in the
prompt (`bench.fakes.paced`), so each answer is checked against what it should be,
and anything else is counted as `unexpected`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.fakes.paced import BIASED_MARK, CUT_MARK, FAIL_MARK, INJECTED
from bench.harness.openloop import ticks

__all__ = ["KEYS", "KINDS", "MISHAPS", "Kind", "Outcome", "Traffic"]

KEYS = {
    "monitor": "sk-soak-monitor-0001",
    "enforce": "sk-soak-enforce-0001",
    "live": "sk-soak-live-0001",
    "admin": "sk-soak-admin-0001",
}


@dataclass(frozen=True)
class Kind:
    """One kind of request: what it calls, with which key, and how often (weight)."""

    name: str
    weight: float
    family: str  # model, passthrough, lookup, search, stats
    key: str = "monitor"
    surface: str | None = None  # chat, completions, responses, messages
    stream: bool = False


KINDS = (
    Kind("chat monitor", 14, "model", "monitor", "chat"),
    Kind("chat monitor stream", 14, "model", "monitor", "chat", stream=True),
    Kind("chat enforce", 8, "model", "enforce", "chat"),
    Kind("chat enforce stream (buffer)", 6, "model", "enforce", "chat", stream=True),
    Kind("chat enforce stream (passthrough)", 5, "model", "live", "chat", stream=True),
    Kind("completions monitor", 4, "model", "monitor", "completions"),
    Kind("completions monitor stream", 3, "model", "monitor", "completions", stream=True),
    Kind("responses monitor", 4, "model", "monitor", "responses"),
    Kind("responses monitor stream", 4, "model", "monitor", "responses", stream=True),
    Kind("responses enforce", 3, "model", "enforce", "responses"),
    Kind("messages monitor", 4, "model", "monitor", "messages"),
    Kind("messages monitor stream", 4, "model", "monitor", "messages", stream=True),
    Kind("messages enforce stream (buffer)", 3, "model", "enforce", "messages", stream=True),
    Kind("embeddings pass-through", 3, "passthrough"),
    Kind("score lookup", 12, "lookup"),
    Kind("score search", 2, "search", "admin"),
    Kind("score stats", 0.2, "stats", "admin"),  # a dashboard's pace, not a client's
)

# Shares of model requests (streams only for the last two); the rest have none.
MISHAPS = {"biased": 0.05, "upstream 500": 0.02, "upstream cut": 0.02, "client leaves": 0.05}
_MARKS = {"biased": BIASED_MARK, "upstream 500": FAIL_MARK, "upstream cut": CUT_MARK}
_PATHS = {
    "chat": "/v1/chat/completions",
    "completions": "/v1/completions",
    "responses": "/v1/responses",
    "messages": "/v1/messages",
}
_SEARCHES = ("status=scored&limit=20", "verdict=flag,block&limit=20", "key=enforce&limit=50")
LOOKUP_AGE = 2.0  # seconds: a lookup asks for a run id announced at least this long ago


@dataclass(slots=True)
class Outcome:
    """One request: when it started (seconds into the run), how long it took, what came."""

    kind: str
    family: str
    mishap: str
    started: float
    ended: float = 0.0
    latency_ms: float = 0.0
    status: int | None = None
    # ok, blocked, upstream 500, upstream cut, client left, or not sent (too many in flight)
    result: str = "unexpected"
    detail: str = ""


def _body(surface: str, prompt: str, stream: bool) -> dict[str, Any]:
    if surface == "completions":
        return {"model": "m", "prompt": prompt, "max_tokens": 64, "stream": stream}
    if surface == "responses":
        return {"model": "m", "input": prompt, "stream": stream}
    messages = [{"role": "user", "content": prompt}]
    if surface == "messages":
        return {"model": "m", "max_tokens": 64, "messages": messages, "stream": stream}
    return {"model": "m", "messages": messages, "stream": stream}


class Traffic:
    """Sends the mix to `url` at `rate` requests a second while `burst()` runs."""

    def __init__(self, url: str, *, rate: float, seed: int = 24, max_in_flight: int = 2000) -> None:
        self.url = url
        self.rate = rate
        self.max_in_flight = max_in_flight
        self.started = time.monotonic()
        self.outcomes: list[Outcome] = []
        self._random = random.Random(seed)
        self._weights = [kind.weight for kind in KINDS]
        self.announced: list[str] = []  # every run id a response announced
        self._recent: deque[tuple[str, str, float]] = deque(maxlen=500)  # run id, key, at
        self._in_flight: set[asyncio.Task[None]] = set()
        self._session: aiohttp.ClientSession | None = None

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    async def __aenter__(self) -> Traffic:
        connector = aiohttp.TCPConnector(limit=0)
        timeout = aiohttp.ClientTimeout(total=120)
        self._session = aiohttp.ClientSession(connector=connector, timeout=timeout)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.drain()
        if self._session is not None:
            await self._session.close()

    def now(self) -> float:
        return time.monotonic() - self.started

    async def burst(self, until: float) -> None:
        """Send one request every 1/rate s, each on its own task, until `until` (run seconds)."""
        async for _ in ticks(self.rate, duration=until - self.now()):
            outcome = self._draw()
            if len(self._in_flight) >= self.max_in_flight:
                outcome.result, outcome.ended = "not sent", outcome.started
                self.outcomes.append(outcome)
                continue
            task = asyncio.create_task(self._one(outcome))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)

    async def drain(self) -> None:
        while self._in_flight:
            await asyncio.gather(*list(self._in_flight), return_exceptions=True)

    def _draw(self) -> Outcome:
        kind = self._random.choices(KINDS, self._weights)[0]
        mishap = ""
        if kind.family == "model":
            roll = self._random.random()
            for name, share in MISHAPS.items():
                if name in ("upstream cut", "client leaves") and not kind.stream:
                    continue
                if roll < share:
                    mishap = name
                    break
                roll -= share
        return Outcome(kind.name, kind.family, mishap, started=self.now())

    async def _one(self, outcome: Outcome) -> None:
        kind = next(k for k in KINDS if k.name == outcome.kind)
        clock = time.perf_counter()
        try:
            await self._send(kind, outcome)
        except (aiohttp.ClientError, TimeoutError) as exc:
            outcome.result, outcome.detail = "unexpected", type(exc).__name__
        outcome.latency_ms = (time.perf_counter() - clock) * 1000
        outcome.ended = self.now()
        self.outcomes.append(outcome)

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("use Traffic in `async with`")
        return self._session

    async def _send(self, kind: Kind, outcome: Outcome) -> None:
        headers = {"authorization": f"Bearer {KEYS[kind.key]}"}
        if kind.family == "model":
            await self._model(kind, outcome, headers)
            return
        if kind.family == "passthrough":
            url, method, body = f"{self.url}/v1/embeddings", "POST", {"model": "m", "input": "x"}
        elif kind.family == "lookup":
            found = self._lookup_target()
            if found is None:  # nothing announced long enough ago yet: a search instead
                url, method, body = f"{self.url}/v1/bias/scores?limit=5", "GET", None
                headers = {"authorization": f"Bearer {KEYS['admin']}"}
            else:
                run_id, key = found
                url, method, body = f"{self.url}/v1/bias/scores/{run_id}", "GET", None
                headers = {"authorization": f"Bearer {KEYS[key]}"}
        elif kind.family == "search":
            query = self._random.choice(_SEARCHES)
            url, method, body = f"{self.url}/v1/bias/scores?{query}", "GET", None
        else:
            url, method, body = f"{self.url}/v1/bias/stats?group_by=verdict", "GET", None
        async with self.session.request(method, url, json=body, headers=headers) as response:
            await response.read()
            outcome.status = response.status
        if outcome.status == 200:
            outcome.result = "ok"
        else:
            outcome.detail = f"HTTP {outcome.status}"

    def _lookup_target(self) -> tuple[str, str] | None:
        cutoff = self.now() - LOOKUP_AGE
        old = [entry for entry in self._recent if entry[2] <= cutoff]
        if not old:
            return None
        run_id, key, _ = self._random.choice(old)
        return run_id, key

    async def _model(self, kind: Kind, outcome: Outcome, headers: dict[str, str]) -> None:
        if kind.surface is None:
            raise ValueError(f"{kind.name} is not a model request")
        prompt = f"Tell me about engineers. {_MARKS.get(outcome.mishap, '')}".rstrip()
        if kind.surface == "messages":
            headers = {**headers, "anthropic-version": "2023-06-01"}
        url = f"{self.url}{_PATHS[kind.surface]}"
        body = _body(kind.surface, prompt, kind.stream)
        async with self.session.post(url, json=body, headers=headers) as response:
            outcome.status = response.status
            run_id = response.headers.get("x-bias-run-id")
            if run_id:
                self.announced.append(run_id)
                self._recent.append((run_id, kind.key, self.now()))
            if outcome.mishap == "client leaves" and response.status == 200:
                for _ in range(2):
                    await response.content.readline()
                    await response.content.readline()
                response.close()  # drops the connection mid-stream
                outcome.result = "client left"
                return
            try:
                text = (await response.read()).decode("utf-8", "replace")
            except aiohttp.ClientPayloadError:
                if outcome.mishap == "upstream cut":
                    outcome.result = "upstream cut"
                else:
                    outcome.detail = "body cut"
                return
        outcome.result = _judge(kind, outcome, text)
        if outcome.result == "unexpected":
            outcome.detail = f"HTTP {outcome.status}: {text[:120]}"


def _judge(kind: Kind, outcome: Outcome, text: str) -> str:
    """What the answer was, or `unexpected` when it is not what this request should get."""
    status, mishap = outcome.status, outcome.mishap
    if mishap == "upstream 500":
        return "upstream 500" if status == 500 and INJECTED in text else "unexpected"
    if mishap == "upstream cut":
        # A relay ends the stream early; an enforce buffer never got a whole answer.
        return "upstream cut" if status in (200, 502) else "unexpected"
    blocks = mishap == "biased" and kind.key == "enforce"
    if blocks:
        return "blocked" if status == 422 else "unexpected"
    return "ok" if status == 200 else "unexpected"
