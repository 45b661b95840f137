from __future__ import annotations

from bench.streams.prejudge import Case, long_answer, markdown


def test_the_table_gives_the_wait_in_judge_calls() -> None:
    case = Case("enforce, whole", via_gateway=True)
    case.totals, case.waits, case.judge_calls = [5.0, 6.0, 7.0], [1.0, 2.0, 3.0], [2, 2, 2]
    case.verdicts = {"pass"}
    table = markdown([case], [0.5, 1.0, 1.5])
    assert "in judge calls (p50 1.00 s)" in table
    assert "| enforce, whole | 3 | 6.00 | 2.000 | 2.00 | 2 | pass |" in table


def test_each_long_answer_is_distinct_and_as_long_as_the_scenario_says() -> None:
    first, second = long_answer(1), long_answer(2)
    assert first != second
    assert len(first) == len(second) == 2000
