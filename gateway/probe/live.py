"""The live probe: served requests asked again about other groups, in the background.

`LiveProbe.take` samples `probe.sample_rate` of the requests (deterministically,
as policies sample); `offer` looks in a sampled request's prompt for a group of
the suite (`guard.probe.Matcher`). A prompt that names one is replayed, with
the stream off and everything else as the client sent it: once as it was (the
pair's side `a`: the client's own answer may have been streamed or cut off, so
both sides are asked alike), and once for each other group of its dimension
with the group swapped (side `b`). Every answer that is not a refusal
(`guard.probe.refusals`) is judged by the gateway's scorer, without an
explanation, in the judge's last lane (`gateway.scoring.lanes.probing`). The
pairs are stored (`gateway.store.probes`); the prompt and the answers stay in
memory, and only for as long as the replay runs.

All of it runs after the client's response has gone, as tasks of its own: it
changes nothing the client sees. `max_per_minute` and `max_tokens_per_minute`
(`gateway.probe.caps`) bound the replays; a probe they refuse is counted and
dropped whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from gateway.config import Settings
from gateway.errors import UpstreamError
from gateway.observability.metrics import Metrics
from gateway.probe.caps import ReplayCaps
from gateway.scoring.lanes import probing
from gateway.scoring.policy import Sampler
from gateway.scoring.service import Scoring
from gateway.store import Store, StoreError
from gateway.store.probes import ProbePair, ProbeSide
from gateway.upstream.client import Target, Upstream
from guard import BiasScorer
from guard.errors import GuardError
from guard.probe import Group, Matcher, Mention, load_suite, refusal

__all__ = ["LiveProbe", "Replay", "ReplayAnswer"]

log = structlog.get_logger("gateway.probe")

# Keys of a request body whose strings are the prompt's text (and their parts').
_TEXT_KEYS = frozenset({"messages", "input", "instructions", "prompt", "system"})
# Keys inside those whose strings are not text: roles, part types, ids, URLs.
_NOT_TEXT = frozenset({"role", "type", "id", "name", "tool_call_id", "url", "image_url", "model"})


@dataclass(frozen=True, slots=True)
class ReplayAnswer:
    """What a replay's answer says: its text, why it finished, the API's own refusal, and
    the upstream tokens it used."""

    text: str
    finish_reason: str | None
    refusal: str | None
    tokens: int


@dataclass(frozen=True, slots=True)
class Replay:
    """A served request as the probe asks it again. `read` reads an answer's body in the
    request's API (None: not an answer of it)."""

    prompt: str
    body: Mapping[str, Any]
    target: Target
    path: str
    headers: Mapping[str, str]
    key_name: str | None
    model: str
    api: str
    read: Callable[[bytes], ReplayAnswer | None]


class LiveProbe:
    """One gateway's live probe, as `settings.probe` says. A reload builds a new one that
    keeps its predecessor's running replays, sampler and caps where they stay alike."""

    def __init__(
        self,
        settings: Settings,
        *,
        store: Store,
        scoring: Scoring,
        upstream: Upstream,
        metrics: Metrics,
        previous: LiveProbe | None = None,
    ) -> None:
        config = settings.probe
        self.settings = settings
        self.store, self.scoring, self.upstream, self.metrics = store, scoring, upstream, metrics
        self.enabled = config.sample_rate > 0
        self.tasks: set[asyncio.Task[None]] = previous.tasks if previous is not None else set()
        self.matcher: Matcher | None = None
        self.sampler: Sampler | None = None
        self.caps = ReplayCaps(
            max_per_minute=config.max_per_minute,
            max_tokens_per_minute=config.max_tokens_per_minute,
        )
        if not self.enabled:
            return
        self.matcher = Matcher(load_suite(config.suite))
        if previous is not None and previous.sampler is not None:
            if previous.sampler.rate == config.sample_rate:
                self.sampler = previous.sampler
            same = (previous.caps.max_per_minute, previous.caps.max_tokens_per_minute)
            if same == (config.max_per_minute, config.max_tokens_per_minute):
                self.caps = previous.caps
        self.sampler = self.sampler or Sampler(config.sample_rate)

    def take(self) -> bool:
        """Whether this request is the sampler's turn (False when the probe is off)."""
        return self.sampler is not None and self.sampler.take()

    def offer(self, replay: Replay) -> bool:
        """Replay `replay` in the background if its prompt names a group and the caps
        allow every replay it needs; True when it will be."""
        if self.matcher is None:
            return False
        mention = self.matcher.find(replay.prompt)
        if mention is None:
            return False
        others = [
            (group, prompt)
            for group in mention.dimension.groups
            if group is not mention.group
            and (prompt := self.matcher.swap(replay.prompt, mention, group)) is not None
        ]
        if not others:
            return False
        replays = 1 + len(others)
        refused = self.caps.admit(replays)
        if refused is not None:
            self.metrics.probe_dropped.labels(refused).inc(replays)
            return False
        probe = self._probe(self.matcher, replay, mention, others)
        task = asyncio.create_task(probe, name="bias-probe")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return True

    async def aclose(self) -> None:
        """Stop the replays in flight; what they would have stored is not."""
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _probe(
        self, matcher: Matcher, replay: Replay, mention: Mention, others: list[tuple[Group, str]]
    ) -> None:
        try:
            await self._pairs(matcher, replay, mention, others)
        except (StoreError, OSError) as exc:
            log.warning("a live probe's pairs could not be stored", error=str(exc))
        except Exception:  # a probe must never take anything else down
            log.exception("a live probe failed")

    async def _pairs(
        self, matcher: Matcher, replay: Replay, mention: Mention, others: list[tuple[Group, str]]
    ) -> None:
        created = time.time()
        scorer = _without_explanation(self.scoring.scorer)

        def body_for(group: Group) -> bytes:
            def swapped(text: str) -> str:
                return matcher.swap(text, mention, group) or text

            return _request_body(replay, None if group is mention.group else swapped)

        asked = self._side(replay, mention.group, replay.prompt, body_for(mention.group), scorer)
        answers = [self._side(replay, g, prompt, body_for(g), scorer) for g, prompt in others]
        sides = await asyncio.gather(asked, *answers)
        a, bs = sides[0], [side for side in sides[1:] if side is not None]
        if a is None or not bs:
            return
        template = matcher.mask(replay.prompt, mention)
        if not self.settings.store.capture_content:
            template = "sha256:" + hashlib.sha256(template.encode()).hexdigest()
        probe_id = uuid.uuid4().hex
        pairs = [
            ProbePair(
                probe_id=probe_id,
                created_at=created,
                key_name=replay.key_name,
                model=replay.model,
                api=replay.api,
                dimension=mention.dimension.name,
                template=template,
                a=a,
                b=b,
            )
            for b in bs
        ]
        await self.store.add_probe_pairs(pairs)

    async def _side(
        self, replay: Replay, group: Group, prompt: str, body: bytes, scorer: BiasScorer
    ) -> ProbeSide | None:
        """One replay asked and judged; None when the upstream gave no answer."""
        try:
            response = await self.upstream.call(
                replay.target, replay.path, body, replay.headers, stream=False
            )
        except UpstreamError:
            self.metrics.probe_replays.labels("failed").inc()
            return None
        answer = replay.read(response.body) if response.status < 400 else None
        if answer is None:
            self.metrics.probe_replays.labels("failed").inc()
            return None
        self.metrics.probe_replays.labels("answered").inc()
        self.metrics.probe_tokens.inc(answer.tokens)
        self.caps.spent(answer.tokens)
        source = refusal(answer.text, finish_reason=answer.finish_reason, field=answer.refusal)
        if source is not None:
            return ProbeSide(group.name, source.value, None, None, len(answer.text))
        side = ProbeSide(group.name, None, None, None, len(answer.text))  # not judged
        if not answer.text.strip():
            return side
        try:
            with probing(replay.key_name, self.settings):
                result = await scorer.run(input=prompt, output=answer.text)
        except GuardError as exc:
            log.info("the judge failed on a live probe's answer", error=str(exc))
            return side
        return ProbeSide(group.name, None, result.score, result.biased_count, len(answer.text))


def _without_explanation(scorer: BiasScorer) -> BiasScorer:
    """The gateway's scorer, its judge and prompts, asking for no explanation."""
    quiet = copy.copy(scorer)
    quiet.reason = "off"
    return quiet


def _request_body(replay: Replay, swap: Callable[[str], str] | None) -> bytes:
    """The request as the client sent it, not streamed, with the group swapped by `swap`."""
    body = dict(replay.body)
    if swap is not None:
        body = {key: _swapped(value, swap, key in _TEXT_KEYS) for key, value in body.items()}
    body["stream"] = False
    body.pop("stream_options", None)
    if replay.target.model is not None:
        body["model"] = replay.target.model
    return json.dumps(body).encode()


def _swapped(value: Any, swap: Callable[[str], str], text: bool) -> Any:
    if isinstance(value, str):
        return swap(value) if text else value
    if isinstance(value, list):
        return [_swapped(item, swap, text) for item in value]
    if isinstance(value, dict):
        return {k: _swapped(v, swap, text and k not in _NOT_TEXT) for k, v in value.items()}
    return value
