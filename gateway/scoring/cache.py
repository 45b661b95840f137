"""A content-hash cache of bias results, so an identical response text is judged once.

Keys hash the judge model, the scorer options and the text, so a change of
judge or scale never reuses an old verdict. Concurrent requests for the same
text share one judge run instead of racing to fill the cache.

Entries are kept as JSON text, not as `BiasResult` models: a model is a dozen
or more objects the garbage collector tracks, a string is none, and thousands of
cached models made every full collection a pause of the event loop that showed
in monitor mode's tail latency. A hit pays for it with a parse.

What leaves the process (`on_add`: the score store, shared by every gateway on
PostgreSQL) holds no text unless content capture is on (`keep_text`): an entry
is stored as its verdicts only (`without_text`), which is all a hit on another
gateway, or after a restart, needs to decide an answer, and an explanation
entry (`explanation_key`) is not stored at all. The entries held here in memory
keep what the judge said.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable

from guard import BiasResult, BiasScorer

__all__ = ["ScoreCache", "cache_key", "explanation_key", "without_text"]

# How long a scoring waits for the shared cache (a database round trip, normally a
# millisecond or so) before it asks the judge instead.
_LOOKUP_SECONDS = 1.0
# How the scorer reads a text (`guard.integrity`: the judged view it judges, the tamper
# findings it reports). Keys are of the raw text, of which both are a pure function;
# a new reading gets new keys, so no entry made before it replays without its marks.
_READING = "judged-view-1"
_EXPLANATION = ":reason"  # after a hex digest; no NUL, which PostgreSQL text refuses


def cache_key(scorer: BiasScorer, text: str) -> str:
    """The content hash of `text` under everything that shapes its verdicts.

    The judge model, the pipeline, the scorer's prompt version (which changes
    with any prompt, schema, category or reason language), the scale and the
    whole-text rule, and how the text is read (`_READING`): a change in any of them
    never replays an old verdict. The explanation is not part of it: it is added to
    an entry once it is known.
    """
    options = (
        f"{scorer.judge.model}\0{scorer.pipeline}\0{scorer.prompt_version}\0{scorer.scale}"
        f"\0{scorer.judge_whole_text_when_no_opinions}\0{_READING}\0"
    )
    return hashlib.sha256((options + text).encode()).hexdigest()


def explanation_key(key: str) -> str:
    """The key of the explained result of the text whose verdicts are at `key`."""
    return key + _EXPLANATION


def without_text(result: BiasResult) -> BiasResult:
    """`result` with nothing the judged text gave it: no prompts, no explanation, and
    its opinions, the verdicts' reasons and the tamper excerpts emptied (each still
    there, so the counts hold). The score, verdicts, categories, tamper kinds and
    cost stay: what decides an answer."""
    preprocess = result.preprocess_step_result
    analyze = result.analyze_step_result
    return result.model_copy(
        update={
            "preprocess_prompt": None,
            "analyze_prompt": None,
            "generate_reason_prompt": None,
            "reason": None,
            "preprocess_step_result": preprocess.model_copy(
                update={"opinions": ["" for _ in preprocess.opinions]}
            ),
            "analyze_step_result": analyze.model_copy(
                update={
                    "results": [
                        verdict.model_copy(update={"reason": ""}) for verdict in analyze.results
                    ]
                }
            ),
            "tamper": [{**finding, "excerpt": ""} for finding in result.tamper],
        }
    )


class ScoreCache:
    """An in-memory LRU of `BiasResult`s by content hash."""

    def __init__(
        self,
        maxsize: int,
        *,
        on_add: Callable[[str, str], None] | None = None,
        lookup: Callable[[str], Awaitable[str | None]] | None = None,
        keep_text: bool = False,
    ) -> None:
        """`on_add(key, entry)` sees each new entry (JSON text), e.g. to persist it:
        without `keep_text`, only verdict entries, as `without_text` leaves them;
        `lookup(key)` is asked on a local miss, e.g. a store shared by several
        gateways, before the result is computed here."""
        if maxsize < 1:
            raise ValueError("maxsize must be >= 1")
        self.maxsize = maxsize
        self.on_add = on_add
        self.lookup = lookup
        self.keep_text = keep_text
        self._results: OrderedDict[str, str] = OrderedDict()
        self._inflight: dict[str, asyncio.Future[BiasResult]] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._results)

    def preload(self, entries: Iterable[tuple[str, str]]) -> None:
        """Fill the cache with `(key, entry)` pairs, oldest first (as `on_add` saw them)."""
        for key, entry in entries:
            self._put(key, entry)

    def _put(self, key: str, entry: str) -> None:
        self._results[key] = entry
        self._results.move_to_end(key)
        if len(self._results) > self.maxsize:
            self._results.popitem(last=False)

    def put(self, key: str, result: BiasResult) -> None:
        """Store (or replace) the result for `key`, e.g. once its explanation is known."""
        entry = result.model_dump_json()
        self._put(key, entry)
        if self.on_add is None:
            return
        if self.keep_text:
            self.on_add(key, entry)
        elif not key.endswith(_EXPLANATION):
            # An explanation is the judge's words about the text; one that is not kept
            # is asked for again where it is missed, the verdicts are not.
            self.on_add(key, without_text(result).model_dump_json())

    async def get_or_run(
        self, key: str, run: Callable[[], Awaitable[BiasResult]]
    ) -> tuple[BiasResult, bool]:
        """The cached result for `key`, or `run()`'s; the flag says whether it was cached."""
        cached = self._results.get(key)
        if cached is not None:
            self._results.move_to_end(key)
            self.hits += 1
            return BiasResult.model_validate_json(cached), True
        pending = self._inflight.get(key)
        if pending is not None:
            self.hits += 1
            return await asyncio.shield(pending), True
        future: asyncio.Future[BiasResult] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            shared = await self._shared(key)
            if shared is not None:
                self.hits += 1
                future.set_result(shared)
                return shared, True
            self.misses += 1
            result = await run()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            # Waiters see the same failure; nothing is cached.
            future.set_exception(exc)
            future.exception()  # mark retrieved: a lone failure has no waiter to read it
            raise
        finally:
            del self._inflight[key]
        future.set_result(result)
        self.put(key, result)
        return result, False

    async def _shared(self, key: str) -> BiasResult | None:
        """The entry another gateway stored, kept here too; None without one (or on a
        lookup failure: the judge then runs, as it would with no shared cache)."""
        if self.lookup is None:
            return None
        try:
            # A slow database costs a scoring this much at most, then the judge runs.
            async with asyncio.timeout(_LOOKUP_SECONDS):
                entry = await self.lookup(key)
            result = None if entry is None else BiasResult.model_validate_json(entry)
        except Exception:  # a store hiccup must never fail a scoring
            return None
        if result is not None and entry is not None:
            self._put(key, entry)
        return result
