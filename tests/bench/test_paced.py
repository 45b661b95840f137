"""The one paced fake's options: what a scenario asks for is what the process it starts gets."""

from __future__ import annotations

import dataclasses

from bench.fakes.paced import Pace, parser


def test_the_defaults_need_no_arguments() -> None:
    assert Pace().argv() == []


def test_the_command_line_gives_back_the_options_it_was_made_from() -> None:
    pace = Pace(chunks=3, ttft=0.0, judge_rps=2.5, judge_429_every=7, long_chars=400, seed=11)
    args = parser().parse_args(["--port", "1", *pace.argv()])
    parsed = Pace(**{field.name: getattr(args, field.name) for field in dataclasses.fields(Pace)})
    assert parsed == pace
    assert "--judge-429-every" in pace.argv()
