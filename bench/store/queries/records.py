"""A score store's worth of records, made up with a fixed seed: keys, models, statuses and
categories in the proportions a busy gateway sees.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass

from bench.harness.report import progress
from gateway.store.records import COLUMNS
from guard import AnalyzeStepResult, BiasResult, PreprocessStepResult, Usage, Verdict

DAY = 86400.0
DAYS = 30
BATCH = 25_000
SEED = 20261201
KEYS = tuple(f"team-{i:02d}" for i in range(1, 21))
KEY_WEIGHTS = tuple(1 / i**0.7 for i in range(1, 21))
THE_KEY = KEYS[4]  # a middling key, 5.9 % of the records
MODELS = (
    "gpt-4o-mini",
    "gpt-4o",
    "gpt-4.1-mini",
    "gpt-4.1",
    "claude-sonnet-4",
    "claude-haiku-4",
    "llama-3.1-70b",
    "mistral-large",
)


MODEL_WEIGHTS = (30, 18, 14, 12, 10, 8, 5, 3)
THE_MODEL = "claude-sonnet-4"
STATUSES = ("scored", "skipped", "error", "dropped", "pending")
STATUS_WEIGHTS = (70, 17, 6, 6, 1)
CATEGORIES = ("gender", "political", "racial_ethnic", "geographical", "other", "age")
CATEGORY_WEIGHTS = (34, 22, 18, 12, 9, 5)
APIS = ("chat.completions", "responses", "messages", "completions")
API_WEIGHTS = (80, 10, 8, 2)
SKIP_REASONS = ("empty", "too_long", "unreadable", "not_text")
ERROR_REASONS = ("JudgeTimeout", "JudgeRateLimited", "JudgeBadOutput", "internal")
DROP_REASONS = ("queue_full", "gateway_restarted", "drain_deadline")
_SENTINEL = 0.123456789  # the score in a result template, replaced per record
_TEXT = (
    "the response says that people from the northern region are usually less careful with"
    " money than those in the capital and that managers should keep this in mind when hiring"
    " new staff for positions of trust while the report also notes that older workers adapt"
    " slowly to new software tools although the data it cites do not support this claim and"
    " several studies found no such difference between groups of any age or background"
)


_WORDS = tuple(_TEXT.split())


log = progress("store_queries")


def _sentence(rng: random.Random, low: int, high: int) -> str:
    start = rng.randrange(len(_WORDS))
    words = [_WORDS[(start + i) % len(_WORDS)] for i in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


@dataclass(frozen=True)
class _Template:
    text: str  # the result's JSON, runId "@RUN@" and score _SENTINEL to replace
    calls: int
    tokens: int


class Records:
    """The rows of `COLUMNS`, in batches; the same seed gives the same rows."""

    def __init__(self, count: int, end: float, seed: int = SEED) -> None:
        self.count = count
        self.end = end
        self.start = end - DAYS * DAY
        self.seed = seed
        self._templates: dict[tuple[str, ...], list[_Template]] = {}
        self._index = {name: i for i, name in enumerate(COLUMNS)}
        self.sizes: list[int] = []

    def _template(self, rng: random.Random, categories: tuple[str, ...]) -> _Template:
        pool = self._templates.setdefault(categories, [])
        if len(pool) < 8:
            opinions = [_sentence(rng, 10, 24) for _ in range(rng.randint(2, 6))]
            biased = min(len(opinions), max(1, len(categories))) if categories else 0
            results = [
                Verdict(
                    result="yes" if i < biased else "no",
                    reason=_sentence(rng, 8, 18),
                    categories=list(categories) if i < biased else [],
                )
                for i in range(len(opinions))
            ]
            single = rng.random() < 0.1
            steps = ("assess",) if single else ("preprocess", "analyze", "generate_reason")
            usage = {
                step: Usage(
                    prompt_tokens=rng.randint(300, 1400), completion_tokens=rng.randint(40, 400)
                )
                for step in steps
            }
            calls = {step: 1 + (rng.random() < 0.04) for step in steps}
            result = BiasResult(
                run_id="@RUN@",
                preprocess_step_result=PreprocessStepResult(opinions=opinions),
                preprocess_prompt=None,
                analyze_step_result=AnalyzeStepResult(results=results),
                analyze_prompt=None,
                score=_SENTINEL,
                reason=_sentence(rng, 20, 45),
                generate_reason_prompt=None,
                scale=1.0,
                judge_model="gpt-4o-mini",
                judge_calls=sum(calls.values()),
                durations_ms={step: round(rng.uniform(300, 2500), 3) for step in steps},
                usage=sum(usage.values(), Usage()),
                calls_by_step=calls,
                usage_by_step=usage,
                pipeline="single" if single else "faithful",
                category_scores={
                    category: round(biased / len(opinions), 2) for category in categories
                },
            )
            data = result.to_json_dict()
            for key in ("preprocessPrompt", "analyzePrompt", "generateReasonPrompt"):
                data.pop(key, None)
            data["cached"] = False
            text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            pool.append(_Template(text, result.judge_calls, result.usage.total_tokens))
            return pool[-1]
        return pool[rng.randrange(len(pool))]

    def _categories(self, rng: random.Random) -> tuple[str, ...]:
        first = rng.choices(CATEGORIES, CATEGORY_WEIGHTS)[0]
        if rng.random() < 0.3:
            second = rng.choices(CATEGORIES, CATEGORY_WEIGHTS)[0]
            if second != first:
                return (first, second)
        return (first,)

    def batches(self, size: int = BATCH) -> Iterator[list[tuple[object, ...]]]:
        rng = random.Random(self.seed)
        step = (self.end - self.start) / self.count
        at = self._index
        width = len(COLUMNS)
        for first in range(0, self.count, size):
            n = min(size, self.count - first)
            statuses = rng.choices(STATUSES, STATUS_WEIGHTS, k=n)
            keys = rng.choices(KEYS, KEY_WEIGHTS, k=n)
            models = rng.choices(MODELS, MODEL_WEIGHTS, k=n)
            apis = rng.choices(APIS, API_WEIGHTS, k=n)
            batch: list[tuple[object, ...]] = []
            for j in range(n):
                created = self.start + (first + j + rng.random()) * step
                run_id = "%08x-%04x-4%03x-%04x-%012x" % (  # noqa: UP031 (a uuid4's shape, fast)
                    rng.getrandbits(32),
                    rng.getrandbits(16),
                    rng.getrandbits(12),
                    0x8000 | rng.getrandbits(14),
                    rng.getrandbits(48),
                )
                row: list[object] = [None] * width
                status = statuses[j]
                stream = rng.random() < 0.4
                row[at["run_id"]] = run_id
                row[at["status"]] = status
                row[at["created_at"]] = created
                row[at["model"]] = models[j]
                row[at["api"]] = apis[j]
                row[at["key_name"]] = keys[j]
                row[at["mode"]] = "enforce" if rng.random() < 0.15 else "monitor"
                row[at["stream"]] = stream
                row[at["partial"]] = stream and rng.random() < 0.02
                row[at["truncated"]] = rng.random() < 0.01
                row[at["response_id"]] = f"chatcmpl-{rng.getrandbits(96):024x}"
                row[at["request_id"]] = f"{rng.getrandbits(128):032x}"
                row[at["attempts"]] = 0
                if "trace_id" in at:
                    row[at["trace_id"]] = f"{rng.getrandbits(128):032x}"
                if status != "pending":
                    row[at["updated_at"]] = created + rng.uniform(0.5, 4.0)
                if status == "scored":
                    roll = rng.random()
                    if roll < 0.80:
                        verdict = "pass"
                        score = rng.choice((0.14, 0.2, 0.25, 0.33)) if rng.random() < 0.025 else 0.0
                    elif roll < 0.92:
                        verdict, score = "flag", rng.choice((0.5, 0.6, 0.67, 0.75))
                    else:
                        verdict, score = "block", rng.choice((0.8, 0.83, 1.0, 1.0))
                    categories = self._categories(rng) if score > 0 else ()
                    template = self._template(rng, categories)
                    result = template.text.replace("@RUN@", run_id).replace(
                        repr(_SENTINEL), repr(score)
                    )
                    self.sizes.append(len(result))
                    row[at["score"]] = score
                    row[at["verdict"]] = verdict
                    row[at["reason"]] = _sentence(rng, 20, 45)
                    row[at["reason_status"]] = "done"
                    row[at["judge_calls"]] = template.calls
                    row[at["judge_tokens"]] = template.tokens
                    row[at["result"]] = result
                    if categories:
                        row[at["categories"]] = json.dumps(list(categories))
                elif status == "error":
                    row[at["status_reason"]] = rng.choice(ERROR_REASONS)
                    row[at["judge_calls"]] = rng.randint(1, 3)
                    row[at["judge_tokens"]] = rng.randint(0, 3000)
                elif status == "skipped":
                    row[at["status_reason"]] = rng.choice(SKIP_REASONS)
                elif status == "dropped":
                    row[at["status_reason"]] = rng.choice(DROP_REASONS)
                batch.append(tuple(row))
            yield batch
