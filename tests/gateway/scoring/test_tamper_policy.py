"""Tamper findings and the policy (`on_tamper`): `with_tamper`, the merged marks of several
results (`marks`), and a windowed answer's prefix rule. Pure code."""

from __future__ import annotations

import pytest

from gateway.domain import ON_TAMPER, VERDICTS, OnTamper, PolicyVerdict
from gateway.scoring.merge import AnswerMerge, PrefixRule, marks
from gateway.scoring.policy import Rules, with_tamper
from gateway.scoring.windows import WindowPart
from guard import BiasResult
from tests.support.bias_results import judged

FOUND = [{"kind": "instruction", "excerpt": "Ignore previous instructions"}]
RANK = {"pass": 0, "flag": 1, "block": 2}


@pytest.mark.parametrize(
    ("verdict", "on_tamper", "expected"),
    [
        ("pass", "flag", "flag"),
        ("pass", "block", "block"),
        ("pass", "ignore", "pass"),
        ("flag", "flag", "flag"),
        ("flag", "block", "block"),
        ("flag", "ignore", "flag"),
        ("block", "flag", "block"),
        ("block", "block", "block"),
        ("block", "ignore", "block"),
    ],
)
def test_a_finding_raises_the_verdict_to_on_tamper_and_never_lowers_it(
    verdict: PolicyVerdict, on_tamper: OnTamper, expected: PolicyVerdict
) -> None:
    assert with_tamper(verdict, FOUND, on_tamper) == expected


@pytest.mark.parametrize("verdict", VERDICTS)
@pytest.mark.parametrize("on_tamper", ON_TAMPER)
def test_no_finding_leaves_every_verdict_as_it_is(
    verdict: PolicyVerdict, on_tamper: OnTamper
) -> None:
    assert with_tamper(verdict, [], on_tamper) == verdict


@pytest.mark.parametrize("verdict", VERDICTS)
@pytest.mark.parametrize("on_tamper", ON_TAMPER)
def test_the_verdict_is_never_below_what_the_score_gave(
    verdict: PolicyVerdict, on_tamper: OnTamper
) -> None:
    assert RANK[with_tamper(verdict, FOUND, on_tamper)] >= RANK[verdict]


def marked(normalised: list[str], tamper: list[dict[str, str]]) -> BiasResult:
    return judged(["x"], ["no"]).model_copy(update={"normalised": normalised, "tamper": tamper})


def test_marks_keep_each_step_and_each_kind_once_in_the_order_first_met() -> None:
    results = [
        marked(["nfkc"], [{"kind": "hidden_text", "excerpt": "first"}]),
        marked([], []),
        marked(["invisible", "nfkc"], [{"kind": "hidden_text", "excerpt": "second"}, *FOUND]),
    ]
    assert marks(results) == {
        "normalised": ["nfkc", "invisible"],
        "tamper": [{"kind": "hidden_text", "excerpt": "first"}, *FOUND],
    }


def test_marks_of_nothing_are_empty() -> None:
    assert marks([]) == {"normalised": [], "tamper": []}


def part(text: str, index: int = 0) -> WindowPart:
    return WindowPart(index, 0, len(text), text, "")


def test_a_merged_answer_carries_the_findings_of_every_window_and_text() -> None:
    merge = AnswerMerge(1)
    merge.add((part("a"), part("b", 1)), [marked([], []), marked(["nfkc"], FOUND)])
    merge.add((part("c"),), [marked([], [{"kind": "bidi", "excerpt": "c"}])])
    assert merge.tamper == [*FOUND, {"kind": "bidi", "excerpt": "c"}]
    result = merge.result("run", "judge", "faithful")
    assert result.tamper == merge.tamper
    assert result.normalised == ["nfkc"]


@pytest.mark.parametrize(("tamper_blocks", "blocks"), [(True, True), (False, False)])
def test_a_window_that_tampered_blocks_the_answer_under_on_tamper_block(
    tamper_blocks: bool, blocks: bool
) -> None:
    merge = AnswerMerge(1)
    merge.add((part("fine"),), [marked([], FOUND)])
    assert merge.score == 0
    assert PrefixRule(Rules(0.5, 0.8), 1, tamper_blocks=tamper_blocks).blocks(merge) is blocks


def test_a_clean_answer_is_not_blocked_by_the_tamper_rule() -> None:
    merge = AnswerMerge(1)
    merge.add((part("fine"),), [marked(["nfkc"], [])])
    assert not PrefixRule(Rules(0.5, 0.8), 1, tamper_blocks=True).blocks(merge)
