"""The probe's statistics on fixed cells: a planted difference is found with an interval
around it, alike groups are not told apart, and the correction is across everything."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guard.probe import Cell, Finding, Metric, findings

DIMENSIONS = {"origin": ["immigrants", "locals", "expats"], "gender": ["women", "men"]}


def cells(
    dimension: str,
    group: str,
    n: int,
    *,
    refused: int = 0,
    biased: int = 0,
    score: float = 0.5,
    length: int = 80,
    failed: int = 0,
) -> list[Cell]:
    """n cells of one group: the first `refused` refusals, then `biased` biased answers
    scored `score`, then neutral ones; and `failed` more that failed."""
    made = []
    for sample in range(n):
        cell = Cell(dimension, group, 0, sample, f"{group} {sample}", sample, answer="text",
                    length=length)  # fmt: skip
        if sample < refused:
            cell = Cell(**{**cell.to_json(), "refusal": True, "refusal_source": "phrase"})
        elif sample < refused + biased:
            cell = Cell(**{**cell.to_json(), "bias_score": score, "biased_opinions": 1})
        else:
            cell = Cell(**{**cell.to_json(), "bias_score": 0.0, "biased_opinions": 0})
        made.append(cell)
    made += [
        Cell(dimension, group, 0, n + k, f"{group} failed {k}", 0, error="target: down")
        for k in range(failed)
    ]
    return made


def alike(n: int = 30, **kwargs: int) -> list[Cell]:
    """Every group of `DIMENSIONS` with the same cells."""
    return [c for d, groups in DIMENSIONS.items() for g in groups for c in cells(d, g, n, **kwargs)]


def one(found: Iterable[Finding], group: str, metric: Metric) -> Finding:
    (finding,) = [f for f in found if f.group == group and f.metric is metric]
    return finding


def test_a_planted_refusal_rate_and_bias_are_found_and_nothing_else() -> None:
    data = [c for c in alike(biased=1) if c.group != "immigrants"]
    data += cells("origin", "immigrants", 30, refused=12, biased=7)
    found = findings(data, DIMENSIONS, seed=1)
    refusal = one(found, "immigrants", Metric.REFUSAL_RATE)
    assert refusal.significant
    assert (refusal.group_value, refusal.others_value) == (0.4, 0.0)
    assert refusal.ci[0] > 0.2
    assert refusal.ci[1] < 0.6
    share = one(found, "immigrants", Metric.BIASED_SHARE)
    assert share.significant
    assert share.group_value == pytest.approx(7 / 18)
    assert share.ci[0] > 0
    assert share.ci[0] < share.effect < share.ci[1]
    assert one(found, "immigrants", Metric.BIAS_SCORE).significant
    assert not one(found, "immigrants", Metric.LENGTH).significant
    assert not [f for f in found if f.dimension == "gender" and f.significant]


def test_a_side_with_one_judged_answer_gets_no_permutation_test() -> None:
    one = [*cells("origin", "immigrants", 1, biased=1), *cells("origin", "locals", 1)]
    found = findings(one, {"origin": ["immigrants", "locals"]})
    assert {finding.metric for finding in found} == {Metric.REFUSAL_RATE}


def test_groups_with_the_same_answers_are_not_told_apart() -> None:
    found = findings(alike(refused=3, biased=4), DIMENSIONS, seed=2)
    assert len(found) == 5 * 4
    assert all(f.p_value == 1.0 and f.effect == 0 and not f.significant for f in found)
    assert all(f.ci[0] <= 0 <= f.ci[1] for f in found)


def test_a_difference_is_clearer_with_more_answers() -> None:
    def p(n: int) -> float:
        data = cells("gender", "women", n, refused=n // 5) + cells("gender", "men", n)
        return one(
            findings(data, {"gender": ["women", "men"]}), "women", Metric.REFUSAL_RATE
        ).p_value

    assert p(10) > p(30) > p(90)


def test_a_shift_in_mean_score_and_length_is_found_with_an_interval_around_it() -> None:
    data = cells("gender", "women", 40, biased=20, score=0.5, length=120)
    data += cells("gender", "men", 40, biased=20, score=0.1, length=80)
    found = findings(data, {"gender": ["women", "men"]}, seed=3)
    score = one(found, "women", Metric.BIAS_SCORE)
    assert score.effect == pytest.approx(0.2)
    assert score.significant
    assert score.ci[0] < 0.2 < score.ci[1]
    assert score.ci[0] > 0
    length = one(found, "women", Metric.LENGTH)
    assert length.effect == 40
    assert length.ci == (40, 40)
    assert length.significant
    assert not one(found, "women", Metric.BIASED_SHARE).significant  # as many biased each


def test_refusals_are_not_judged_and_failed_cells_are_left_out() -> None:
    data = cells("gender", "women", 10, refused=10) + cells("gender", "men", 10, failed=5)
    found = findings(data, {"gender": ["women", "men"]})
    assert {f.metric for f in found if f.group == "women"} == {Metric.REFUSAL_RATE}
    men = one(found, "men", Metric.REFUSAL_RATE)
    assert (men.group_n, men.others_n) == (10, 10)


def test_an_answer_the_judge_failed_on_counts_for_the_refusal_rate_alone() -> None:
    unjudged = [
        Cell(**{**cell.to_json(), "bias_score": None, "biased_opinions": None,
                "error": "judge: unavailable"})
        for cell in cells("gender", "women", 10, refused=2)
    ]  # fmt: skip
    found = findings(unjudged + cells("gender", "men", 10), {"gender": ["women", "men"]})
    assert {f.metric for f in found if f.group == "women"} == {Metric.REFUSAL_RATE}
    women = one(found, "women", Metric.REFUSAL_RATE)
    assert (women.group_value, women.group_n) == (0.2, 10)


def test_the_correction_is_across_every_comparison() -> None:
    data = [c for c in alike(biased=1) if c.group != "immigrants"]
    data += cells("origin", "immigrants", 30, refused=3)
    found = findings(data, DIMENSIONS, seed=4)
    assert all(f.q_value >= f.p_value for f in found)
    refusal = one(found, "immigrants", Metric.REFUSAL_RATE)
    # Significant alone (p < 0.05), not among the twenty comparisons.
    assert refusal.p_value < 0.05
    assert not refusal.significant


def test_the_same_seed_gives_the_same_figures() -> None:
    data = cells("gender", "women", 30, biased=8) + cells("gender", "men", 30, biased=3)
    assert findings(data, {"gender": ["women", "men"]}, seed=5) == findings(
        data, {"gender": ["women", "men"]}, seed=5
    )


@given(st.integers(1, 40), st.integers(0, 40), st.integers(1, 40), st.integers(0, 40))
def test_a_rate_difference_lies_in_its_interval(n1: int, k1: int, n2: int, k2: int) -> None:
    data = cells("d", "a", n1, refused=min(k1, n1)) + cells("d", "b", n2, refused=min(k2, n2))
    finding = one(findings(data, {"d": ["a", "b"]}), "a", Metric.REFUSAL_RATE)
    assert -1 <= finding.ci[0] <= finding.effect <= finding.ci[1] <= 1
    assert 0 <= finding.p_value <= finding.q_value <= 1
