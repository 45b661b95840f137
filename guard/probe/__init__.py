"""Counterfactual probes: ask a model the same question about each group, then compare.

`load_suite` reads a suite (`guard.probe.suite`); `plan` and `run_probe` ask the
model under test (`Target`) and judge its answers (`guard.probe.run`);
`Matcher` finds a suite's group in a live prompt and swaps it (`guard.probe.match`);
`findings` says, per dimension, which group fares differently from the others
(`guard.probe.stats`); `probe_json` and `finished_cells` write a run and
resume one (`guard.probe.record`). `bias-guard probe` is the command line.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from guard.probe.match import Matcher, Mention
from guard.probe.refusals import RefusalSource, refusal
from guard.probe.run import Cell, Plan, plan, run_probe
from guard.probe.suite import BUILTIN, Dimension, Group, Suite, load_suite, parse_suite
from guard.probe.target import Answer, Target

if TYPE_CHECKING:
    from guard.probe.record import finished_cells, probe_json, write_record
    from guard.probe.stats import Finding, Metric, findings

# The statistics load scipy, which a gateway that only matches prompts never needs:
# they are imported when first asked for.
_LAZY = {
    "Finding": "guard.probe.stats",
    "Metric": "guard.probe.stats",
    "findings": "guard.probe.stats",
    "finished_cells": "guard.probe.record",
    "probe_json": "guard.probe.record",
    "write_record": "guard.probe.record",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "BUILTIN",
    "Answer",
    "Cell",
    "Dimension",
    "Finding",
    "Group",
    "Matcher",
    "Mention",
    "Metric",
    "Plan",
    "RefusalSource",
    "Suite",
    "Target",
    "findings",
    "finished_cells",
    "load_suite",
    "parse_suite",
    "plan",
    "probe_json",
    "refusal",
    "run_probe",
    "write_record",
]
