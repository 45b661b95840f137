"""`AnswerMerge` and `PrefixRule`: the running result of an answer judged in windows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.config import Policy
from gateway.domain import PolicyVerdict
from gateway.scoring.merge import AnswerMerge, PrefixRule, opinion_key
from gateway.scoring.policy import Rules
from gateway.scoring.windows import WindowPart
from guard import Usage, bias_score
from tests.support.bias_results import judged


def part(text: str, context: str = "", index: int = 0) -> WindowPart:
    return WindowPart(index, 0, len(text), text, context)


@pytest.mark.parametrize(
    ("opinion", "key"),
    [("Men are Lazy.", "men are lazy"), ("  men   ARE lazy!! ", "men are lazy"), ("...", "")],
)
def test_opinion_keys(opinion: str, key: str) -> None:
    assert opinion_key(opinion) == key


def test_scores_the_merged_opinions() -> None:
    merge = AnswerMerge(1)
    merge.add((part("A is good. B is bad."),), [judged(["A is good.", "B is bad."], ["no", "no"])])
    assert merge.score == 0
    merge.add((part("Women are worse."),), [judged(["Women are worse."], ["yes"])])
    assert merge.score == pytest.approx(0.33)


def test_an_opinion_seen_again_counts_once() -> None:
    merge = AnswerMerge(1)
    merge.add(
        (part("Women are worse at maths."),), [judged(["Women are worse at maths."], ["yes"])]
    )
    # The next window's judge quoted it again from its context, and found one more.
    later = part("Cats are nice.", context="Women are worse at maths.")
    merge.add((later,), [judged(["women are worse at MATHS", "Cats are nice."], ["yes", "no"])])
    assert merge.texts[0].opinions == ["Women are worse at maths.", "Cats are nice."]
    assert merge.score == 0.5


def test_an_opinion_only_in_the_context_is_not_counted() -> None:
    merge = AnswerMerge(1)
    window = part("It rained.", context="Old people are useless.")
    merge.add((window,), [judged(["Old people are useless.", "It rained."], ["yes", "no"])])
    assert merge.texts[0].opinions == ["It rained."]
    assert merge.score == 0


def test_windows_without_opinions_score_as_statements_until_an_opinion_comes() -> None:
    merge = AnswerMerge(1)
    merge.add((part("Facts."),), [judged([], ["no"])])
    merge.add((part("More facts."),), [judged([], ["yes"])])
    assert merge.score == 0.5
    assert len(merge.texts[0].counted) == 2
    merge.add((part("I like tea."),), [judged(["I like tea."], ["no"])])
    assert merge.score == 0  # the opinions now decide, as for the whole text
    assert len(merge.texts[0].counted) == 1


def test_the_worst_text_decides_and_the_result_has_mastras_shape() -> None:
    merge = AnswerMerge(1)
    merge.add(
        (part("Fine.", index=0), part("Women are worse.", index=1)),
        [judged(["Fine."], ["no"]), judged(["Women are worse."], ["yes"], calls=3, tokens=20)],
    )
    assert merge.worst[0] == 1
    result = merge.result("run", "judge", "faithful")
    assert result.score == 1
    assert result.preprocess_step_result.opinions == ["Women are worse."]
    assert [v.result for v in result.analyze_step_result.results] == ["yes"]
    assert result.category_scores == {"gender": 1.0}
    assert result.judge_calls == 5
    assert result.usage == Usage(prompt_tokens=30, completion_tokens=2)
    assert result.calls_by_step == {"preprocess": 2, "analyze": 3}
    assert result.durations_ms == {"preprocess": 10.0, "analyze": 14.0}
    assert result.usage_by_step == {"analyze": Usage(prompt_tokens=30)}
    dumped = result.to_json_dict()
    assert {"runId", "preprocessStepResult", "analyzeStepResult", "score"} <= set(dumped)


def test_an_empty_merge_scores_zero() -> None:
    merge = AnswerMerge(1)
    assert merge.score == 0
    assert merge.result("run", "judge", "single").score == 0
    assert not PrefixRule(Rules(0.5, 0.5, 1, 1)).blocks(merge)
    assert PrefixRule(Rules(0.5, 0.5, 1, 1)).verdict(merge) == "pass"
    assert merge.biased == 0


@pytest.mark.parametrize(
    ("results", "threshold", "min_opinions", "blocks"),
    [
        (["yes"], 0.8, 1, True),
        (["yes"], 0.8, 2, False),  # one early biased opinion is not enough
        (["yes", "no"], 0.8, 2, False),
        (["yes", "yes"], 0.8, 2, True),
        (["yes", "no", "no"], 0.3, 3, True),
        (["no", "no", "no"], 0.0, 3, True),
        (["yes", "no", "no"], 0.34, 1, False),
    ],
)
def test_prefix_rule(results: list[str], threshold: float, min_opinions: int, blocks: bool) -> None:
    merge = AnswerMerge(1)
    opinions = [f"opinion {n}" for n in range(len(results))]
    merge.add((part(" ".join(opinions)),), [judged(opinions, results)])
    rule = PrefixRule(Rules(threshold, threshold), min_opinions)
    assert rule.blocks(merge) is blocks


def padded(biased: int, neutral: int) -> AnswerMerge:
    merge = AnswerMerge(1)
    opinions = [f"biased {n}" for n in range(biased)] + [f"neutral {n}" for n in range(neutral)]
    results = ["yes"] * biased + ["no"] * neutral
    merge.add((part(" ".join(opinions)),), [judged(opinions, results)])
    return merge


@pytest.mark.parametrize(
    ("biased", "neutral", "flag_at", "block_at", "min_opinions", "expected"),
    [
        # One biased opinion padded with nine neutral ones scores 0.1.
        (1, 9, None, None, 1, "pass"),
        (1, 9, 1, None, 1, "flag"),
        (1, 9, 1, 1, 1, "block"),
        (0, 10, 1, 1, 1, "pass"),
        (2, 18, 1, 2, 1, "block"),
        (1, 19, 1, 2, 1, "flag"),
        # On fewer verdicts than `min_opinions` a prefix flags but does not block, by
        # the count as by the score.
        (1, 0, 1, 1, 2, "flag"),
        (1, 1, 1, 1, 3, "flag"),
        (1, 2, 1, 1, 3, "block"),
        (1, 0, None, 1, 2, "flag"),  # blocked at the score (1.0 >= 0.8), so flagged
        (1, 1, None, 1, 3, "flag"),  # score 0.5: flagged at the threshold
        (1, 3, None, 1, 5, "pass"),  # score 0.25, and no flag count: nothing to flag
    ],
)
def test_prefix_rule_counts_biased_opinions(
    biased: int,
    neutral: int,
    flag_at: int | None,
    block_at: int | None,
    min_opinions: int,
    expected: PolicyVerdict,
) -> None:
    merge = padded(biased, neutral)
    assert merge.biased == biased
    assert merge.texts[0].biased == biased
    rule = PrefixRule(Rules(0.5, 0.8, flag_at, block_at), min_opinions)
    assert rule.verdict(merge) == expected
    assert rule.blocks(merge) is (expected == "block")


def test_prefix_rule_of_a_policy_and_the_worst_text_decides() -> None:
    merge = AnswerMerge(1)
    neutral = [f"neutral {n}" for n in range(9)]
    merge.add(
        (part("one", index=0), part("two", index=1)),
        # Text 0 scores higher (0.5) on one opinion; text 1 holds two biased opinions.
        [
            judged(["a", "b"], ["yes", "no"]),
            judged(["c", "d", *neutral], ["yes", "yes", *["no"] * 9]),
        ],
    )
    assert merge.worst[0] == 0
    assert merge.biased == 2
    assert PrefixRule.of(Policy(block_biased_opinions=2), 1).verdict(merge) == "block"
    assert PrefixRule.of(Policy(), 1).verdict(merge) == "flag"


def test_the_count_of_statements_is_counted_when_no_opinion_was_found() -> None:
    merge = AnswerMerge(1)
    merge.add((part("Facts."),), [judged([], ["yes"])])
    merge.add((part("More facts."),), [judged([], ["no"])])
    assert merge.biased == 1
    merge.add((part("I like tea."),), [judged(["I like tea."], ["no"])])
    assert merge.biased == 0  # the opinions decide now, as the score does


@given(st.lists(st.lists(st.tuples(st.integers(0, 6), st.booleans()), max_size=5), max_size=6))
def test_merging_windows_scores_the_distinct_opinions(
    windows: list[list[tuple[int, bool]]],
) -> None:
    """Whatever windows repeat, the score is the formula over each opinion once."""
    biased = {n: n % 2 == 0 for n in range(7)}  # an opinion's verdict is its own
    merge = AnswerMerge(1)
    seen: dict[int, bool] = {}
    for window in windows:
        opinions = [f"Opinion number {n}." for n, _ in window]
        results = ["yes" if biased[n] else "no" for n, _ in window]
        merge.add((part(" ".join(opinions)),), [judged(opinions, results)])
        for n, _ in window:
            seen.setdefault(n, biased[n])
    expected = bias_score("yes" if b else "no" for b in seen.values())
    assert merge.score == expected
