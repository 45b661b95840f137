"""The running result of an answer judged window by window. Pure code.

Each window's `BiasResult` adds its opinions to the answer's; an opinion met
again (the judge quoted it from the context, or a coalesced window repeats it)
counts once. The score is Mastra's formula over the merged verdicts, so the
score of a prefix is the policy's input for that prefix:

- opinions found anywhere: biased opinions / all opinions;
- none found: each window was judged as one statement (Mastra's fallback for a
  text without opinions), and the score is over those statements.

`PrefixRule` gives a prefix its verdict, by the policy's rules (`verdict_for`:
the score, and the count of biased opinions so far), except that a prefix
blocks only when it rests on at least `min_opinions` verdicts, so one early
biased opinion need not block an answer whose whole text would only be flagged.
Under `on_tamper: block`, any window whose text addressed the judge blocks.

`marks` gathers what several results found in their texts (`normalised`,
`tamper`): the answer's marks are every window's and every text's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gateway.domain import PolicyVerdict
from gateway.scoring.policy import Rules, VerdictRules, rank, verdict_for
from gateway.scoring.windows import WindowPart
from guard import BiasResult, Usage, Verdict, bias_score, is_biased
from guard.bias.categories import category_scores
from guard.result import AnalyzeStepResult, PreprocessStepResult

__all__ = ["AnswerMerge", "PrefixRule", "TextMerge", "marks", "opinion_key"]

_NOT_WORD = re.compile(r"[\W_]+")


def opinion_key(opinion: str) -> str:
    """An opinion as compared for sameness: lower case, words only."""
    return _NOT_WORD.sub(" ", opinion.casefold()).strip()


def marks(results: Iterable[BiasResult]) -> dict[str, Any]:
    """The `normalised` steps and `tamper` findings of `results` together, each once
    (a finding by its kind, the first excerpt kept), in the order first met."""
    normalised: dict[str, None] = {}
    tamper: dict[str, dict[str, str]] = {}
    for result in results:
        normalised.update(dict.fromkeys(result.normalised))
        for finding in result.tamper:
            tamper.setdefault(finding["kind"], finding)
    return {"normalised": list(normalised), "tamper": list(tamper.values())}


@dataclass(slots=True)
class TextMerge:
    """The merged verdicts of one text (a choice, an output message)."""

    scale: float
    opinions: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    statements: list[Verdict] = field(default_factory=list)  # windows without opinions
    _keys: set[str] = field(default_factory=set)

    def add(self, part: WindowPart, result: BiasResult) -> None:
        opinions = result.preprocess_step_result.opinions
        verdicts = result.analyze_step_result.results
        if not opinions:
            self.statements.extend(verdicts)
            return
        own_text, context = opinion_key(part.text), opinion_key(part.context)
        for opinion, verdict in zip(opinions, verdicts, strict=False):
            key = opinion_key(opinion)
            if not key or key in self._keys:
                continue
            if key in context and key not in own_text:
                continue  # the context's opinion, judged with the window it came in
            self._keys.add(key)
            self.opinions.append(opinion)
            self.verdicts.append(verdict)

    @property
    def counted(self) -> list[Verdict]:
        """The verdicts the score is over."""
        return self.verdicts if self.verdicts else self.statements

    @property
    def score(self) -> float:
        return bias_score((verdict.result for verdict in self.counted), self.scale)

    @property
    def biased(self) -> int:
        """How many of the counted verdicts are biased."""
        return sum(is_biased(verdict.result) for verdict in self.counted)


class AnswerMerge:
    """The merged result of every text of an answer; the worst text decides, as it
    does for a whole answer."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self.texts: dict[int, TextMerge] = {}
        self.results: list[BiasResult] = []

    def add(self, parts: tuple[WindowPart, ...], results: list[BiasResult]) -> None:
        for part, result in zip(parts, results, strict=True):
            self.texts.setdefault(part.index, TextMerge(self.scale)).add(part, result)
            self.results.append(result)

    @property
    def worst(self) -> tuple[int, TextMerge | None]:
        """The text with the highest score, and its position among the answer's texts."""
        if not self.texts:
            return 0, None
        index = max(sorted(self.texts), key=lambda i: self.texts[i].score)
        return index, self.texts[index]

    @property
    def score(self) -> float:
        return self.worst[1].score if self.worst[1] is not None else 0.0

    @property
    def biased(self) -> int:
        """The most biased opinions any one text has so far."""
        return max((text.biased for text in self.texts.values()), default=0)

    @property
    def tamper(self) -> list[dict[str, str]]:
        """What any window of any text found addressed to the judge."""
        found: list[dict[str, str]] = marks(self.results)["tamper"]
        return found

    def result(self, run_id: str, judge_model: str, pipeline: str) -> BiasResult:
        """The whole answer's result in Mastra's shape: the deciding text's merged opinions
        and verdicts, the cost of every window's judgement, and every window's marks."""
        merged = self.worst[1] or TextMerge(self.scale)
        verdicts = merged.counted
        usage = Usage()
        calls = 0
        durations: dict[str, float] = {}
        calls_by_step: dict[str, int] = {}
        usage_by_step: dict[str, Usage] = {}
        for result in self.results:
            usage += result.usage
            calls += result.judge_calls
            for step, ms in result.durations_ms.items():
                durations[step] = round(durations.get(step, 0.0) + ms, 3)
            for step, count in result.calls_by_step.items():
                calls_by_step[step] = calls_by_step.get(step, 0) + count
            for step, used in result.usage_by_step.items():
                usage_by_step[step] = usage_by_step.get(step, Usage()) + used
        return BiasResult(
            run_id=run_id,
            preprocess_step_result=PreprocessStepResult(opinions=list(merged.opinions)),
            preprocess_prompt=None,
            analyze_step_result=AnalyzeStepResult(results=list(verdicts)),
            analyze_prompt=None,
            score=merged.score,
            reason=None,
            generate_reason_prompt=None,
            scale=self.scale,
            judge_model=judge_model,
            judge_calls=calls,
            durations_ms=durations,
            usage=usage,
            calls_by_step=calls_by_step,
            usage_by_step=usage_by_step,
            pipeline=pipeline,
            category_scores=category_scores(
                [verdict.categories for verdict in verdicts],
                len(verdicts),
                self.scale,
            ),
            **marks(self.results),
        )


@dataclass(frozen=True, slots=True)
class PrefixRule:
    """The verdict on the answer so far: the worst of its texts' verdicts under `rules`,
    where a text on fewer than `min_opinions` verdicts may flag but not block; any
    tamper finding blocks when `tamper_blocks` (`on_tamper: block`)."""

    rules: Rules
    min_opinions: int = 1
    tamper_blocks: bool = False

    @classmethod
    def of(
        cls, policy: VerdictRules, min_opinions: int, *, tamper_blocks: bool = False
    ) -> PrefixRule:
        return cls(Rules.of(policy), min_opinions, tamper_blocks)

    def verdict(self, merge: AnswerMerge) -> PolicyVerdict:
        if self.tamper_blocks and merge.tamper:
            return "block"
        verdicts = [self._verdict(text) for text in merge.texts.values()]
        return max(verdicts, key=rank, default="pass")

    def blocks(self, merge: AnswerMerge) -> bool:
        return self.verdict(merge) == "block"

    def _verdict(self, text: TextMerge) -> PolicyVerdict:
        enough = len(text.counted) >= self.min_opinions
        rules = self.rules if enough else self.rules.without_block()
        return verdict_for(text.score, text.biased, rules)
