"""The report helpers every scenario shares (`bench.harness.report`), and the machine
line every report names."""

from __future__ import annotations

import doctest

import pytest

from bench.harness import report
from bench.harness.machine import load_average, machine_line
from bench.harness.report import fmt, percentile, table


def test_the_examples_in_the_docstring_hold() -> None:
    failed, tried = doctest.testmod(report)
    assert (failed, tried) == (0, 3)


@pytest.mark.parametrize(
    ("values", "share", "expected"),
    [
        ([5.0], 0.99, 5.0),
        ([3.0, 1.0, 2.0], 0.5, 2.0),
        ([float(n) for n in range(1, 101)], 0.99, 99.01),
        ([0.0, 10.0], 0.25, 2.5),
    ],
)
def test_a_percentile_interpolates_between_ranks(values, share, expected) -> None:
    assert percentile(values, share) == pytest.approx(expected)


def test_a_percentile_rounds_when_asked() -> None:
    assert percentile([1.0, 2.0], 0.5, 0) == 2.0  # 1.5 to even
    assert percentile([1.0, 1.25], 0.5, 2) == 1.12  # 1.125, to two places


def test_a_figure_keeps_its_digits_and_a_flag_is_no_number() -> None:
    assert fmt(2.0, 2) == "2.00"
    assert fmt(True) == "True"
    assert fmt(12_345.0) == "12,345"


def test_a_table_has_one_line_a_row_after_its_header() -> None:
    lines = table(["a", "b"], [[1, 2.5], ["x", None]], digits=1)
    assert lines == ["| a | b |", "|---|---|", "| 1 | 2.5 |", "| x | - |"]


def test_the_machine_line_names_cores_python_and_load() -> None:
    line = machine_line()
    assert " cores (" in line
    assert "; Python 3." in line
    assert len(load_average()) == 3
