"""`gateway.scoring.policy`: verdicts at their threshold and count boundaries, and the sampler."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from gateway.config import Policy
from gateway.domain import PolicyVerdict
from gateway.scoring.policy import Rules, Sampler, rank, verdict_for


def below(value: float) -> float:
    """The largest float under `value`: "just below" with no epsilon to pick."""
    return math.nextafter(value, -math.inf)


# (flag_threshold, block_threshold, scale) with 0 < flag < block <= scale. Every one
# walks the same six points, so the expected verdicts are the same six.
ORDERED = [
    pytest.param(0.5, 0.8, 1.0, id="default-on-1"),
    pytest.param(0.3, 0.6, 1.0, id="low-on-1"),
    pytest.param(5.0, 8.0, 10.0, id="scale-10"),
    pytest.param(30.0, 90.0, 100.0, id="scale-100"),
    pytest.param(0.5, 1.0, 1.0, id="block-only-at-the-top"),
    pytest.param(0.1, 0.2, 0.25, id="scale-under-1"),
]
WALK: list[tuple[str, PolicyVerdict]] = [
    ("zero", "pass"),
    ("below-flag", "pass"),
    ("at-flag", "flag"),
    ("below-block", "flag"),
    ("at-block", "block"),
    ("at-scale", "block"),
]


def point(name: str, flag: float, block: float, scale: float) -> float:
    return {
        "zero": 0.0,
        "below-flag": below(flag),
        "at-flag": flag,
        "below-block": below(block),
        "at-block": block,
        "at-scale": scale,
    }[name]


@pytest.mark.parametrize(("flag", "block", "scale"), ORDERED)
@pytest.mark.parametrize(("where", "expected"), WALK, ids=[where for where, _ in WALK])
def test_verdict_at_each_boundary(
    flag: float, block: float, scale: float, where: str, expected: PolicyVerdict
) -> None:
    score = point(where, flag, block, scale)
    assert verdict_for(score, 0, Rules(flag, block)) == expected


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        pytest.param(0.0, "pass", id="zero"),
        pytest.param(below(0.7), "pass", id="just-below"),
        # Both thresholds are reached at once; block wins over flag.
        pytest.param(0.7, "block", id="at-both"),
        pytest.param(1.0, "block", id="at-scale"),
    ],
)
def test_equal_thresholds_skip_flag(score: float, expected: PolicyVerdict) -> None:
    assert verdict_for(score, 0, Rules(0.7, 0.7)) == expected


@pytest.mark.parametrize(
    ("score", "flag", "block", "expected"),
    [
        # Config allows thresholds of 0 (ge=0): then every score reaches them, even 0.
        pytest.param(0.0, 0.0, 0.5, "flag", id="flag-0-score-0"),
        pytest.param(below(0.5), 0.0, 0.5, "flag", id="flag-0-below-block"),
        pytest.param(0.0, 0.0, 0.0, "block", id="both-0-score-0"),
    ],
)
def test_zero_thresholds_are_always_reached(
    score: float, flag: float, block: float, expected: PolicyVerdict
) -> None:
    assert verdict_for(score, 0, Rules(flag, block)) == expected


def test_the_smallest_positive_score_passes_a_positive_threshold() -> None:
    # A score only just above 0 is still a pass: nothing rounds a tiny score up.
    assert verdict_for(math.ulp(0.0), 0, Rules(math.ulp(1.0), 1)) == "pass"


# The count rules: (biased, flag_biased_opinions, block_biased_opinions) with a score
# that passes on its own, and the verdict the count alone gives.
COUNTS = [
    pytest.param(0, None, None, "pass", id="none-biased-rules-off"),
    pytest.param(5, None, None, "pass", id="many-biased-rules-off"),
    pytest.param(0, 1, None, "pass", id="none-biased-flag-at-1"),
    pytest.param(1, 1, None, "flag", id="one-biased-flag-at-1"),
    pytest.param(9, 1, None, "flag", id="many-biased-flag-at-1-no-block-rule"),
    pytest.param(1, 2, None, "pass", id="below-flag-count"),
    pytest.param(2, 2, None, "flag", id="at-flag-count"),
    pytest.param(1, None, 1, "block", id="block-at-1-without-flag-rule"),
    pytest.param(0, None, 1, "pass", id="none-biased-block-at-1"),
    pytest.param(1, 1, 1, "block", id="equal-counts-skip-flag"),
    pytest.param(1, 1, 3, "flag", id="below-block-count"),
    pytest.param(2, 1, 3, "flag", id="just-below-block-count"),
    pytest.param(3, 1, 3, "block", id="at-block-count"),
    pytest.param(4, 1, 3, "block", id="above-block-count"),
    pytest.param(2, None, 3, "pass", id="below-block-count-without-flag-rule"),
]


@pytest.mark.parametrize(("biased", "flag_at", "block_at", "expected"), COUNTS)
@pytest.mark.parametrize("score", [0.0, 0.1, below(0.5)], ids=["zero", "padded", "below-flag"])
def test_the_count_of_biased_opinions_decides_beside_a_passing_score(
    score: float, biased: int, flag_at: int | None, block_at: int | None, expected: PolicyVerdict
) -> None:
    assert verdict_for(score, biased, Rules(0.5, 0.8, flag_at, block_at)) == expected


@pytest.mark.parametrize(("biased", "flag_at", "block_at", "by_count"), COUNTS)
@pytest.mark.parametrize(
    ("score", "by_score"),
    [(0.5, "flag"), (below(0.8), "flag"), (0.8, "block"), (1.0, "block")],
    ids=["at-flag", "below-block", "at-block", "at-scale"],
)
def test_the_worse_of_score_and_count_wins(
    score: float,
    by_score: PolicyVerdict,
    biased: int,
    flag_at: int | None,
    block_at: int | None,
    by_count: PolicyVerdict,
) -> None:
    expected = max(by_score, by_count, key=rank)
    assert verdict_for(score, biased, Rules(0.5, 0.8, flag_at, block_at)) == expected


def test_the_count_rules_of_a_policy_are_its_own() -> None:
    policy = Policy(flag_biased_opinions=2, block_biased_opinions=4)
    assert Rules.of(policy) == Rules(0.5, 0.8, 2, 4)
    assert verdict_for(0.1, 2, policy) == "flag"
    assert verdict_for(0.1, 4, policy) == "block"
    # Shipped: any biased opinion flags; blocking stays on the threshold.
    assert verdict_for(0.1, 1, Policy()) == "flag"
    assert verdict_for(0.1, 100, Policy()) == "flag"
    assert verdict_for(0.0, 0, Policy()) == "pass"


@pytest.mark.parametrize("biased", [0, 1, 5])
@pytest.mark.parametrize("score", [0.0, 0.5, 0.9])
def test_rules_without_block_never_block(score: float, biased: int) -> None:
    rules = Rules(0.5, 0.8, 1, 1)
    verdict = verdict_for(score, biased, rules.without_block())
    assert verdict != "block"
    assert verdict == ("pass" if verdict_for(score, biased, rules) == "pass" else "flag")


def test_rank_orders_verdicts_by_severity() -> None:
    unordered: list[PolicyVerdict] = ["block", "pass", "flag"]
    assert sorted(unordered, key=rank) == ["pass", "flag", "block"]


# (rate as the float the config holds, the exact share it stands for).
RATES = [
    pytest.param(0.5, Fraction(1, 2), id="0.5"),
    pytest.param(0.3, Fraction(3, 10), id="0.3"),
    pytest.param(0.1, Fraction(1, 10), id="0.1"),
    pytest.param(0.25, Fraction(1, 4), id="0.25"),
    pytest.param(0.7, Fraction(7, 10), id="0.7"),
    pytest.param(1 / 3, Fraction(1, 3), id="1/3"),
    pytest.param(2 / 3, Fraction(2, 3), id="2/3"),
    pytest.param(0.01, Fraction(1, 100), id="0.01"),
    pytest.param(0.001, Fraction(1, 1000), id="0.001"),
    pytest.param(0.999, Fraction(999, 1000), id="0.999"),
]
CALLS = 10_000  # long enough for float drift in the carried fraction to show, if any


@pytest.mark.parametrize(("rate", "share"), RATES)
def test_fractional_rates_take_exactly_floor_of_n_times_rate(rate: float, share: Fraction) -> None:
    # Deterministic, so exact: after every k calls, floor(k * rate) have been taken.
    # Checking each prefix, not just the total, also rules out bunching the takes.
    sampler = Sampler(rate)
    taken = 0
    for k in range(1, CALLS + 1):
        taken += sampler.take()
        assert taken == math.floor(share * k), f"after {k} calls"


def test_rate_0_3_takes_the_documented_calls() -> None:
    sampler = Sampler(0.3)
    taken = [call for call in range(1, 21) if sampler.take()]
    assert taken == [4, 7, 10, 14, 17, 20]


def test_rate_1_takes_every_call() -> None:
    sampler = Sampler(1.0)
    assert all(sampler.take() for _ in range(CALLS))


def test_samplers_keep_separate_carries() -> None:
    # One sampler per policy: traffic on one must not move another's schedule.
    half, tenth = Sampler(0.5), Sampler(0.1)
    half_taken = tenth_taken = 0
    for _ in range(100):
        half_taken += half.take()
        tenth_taken += tenth.take()
        half_taken += half.take()
    assert (half_taken, tenth_taken) == (100, 10)


@pytest.mark.parametrize(
    "rate",
    [0.0, -0.0, -0.5, 1.0000001, 1.5, 2.0, math.inf, -math.inf, math.nan],
    ids=str,
)
def test_rates_outside_0_to_1_are_refused(rate: float) -> None:
    # Rate 0 is refused rather than never taking: `mode: off` is how to score nothing.
    with pytest.raises(ValueError, match=r"sample rate must be in \(0, 1\]"):
        Sampler(rate)


@pytest.mark.parametrize("rate", [math.ulp(0.0), 1e-9, 1.0], ids=str)
def test_rates_at_the_edges_of_0_to_1_are_accepted(rate: float) -> None:
    assert Sampler(rate).rate == rate
