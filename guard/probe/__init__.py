"""Counterfactual probes: ask a model the same question about each group, then compare.

`load_suite` reads a suite (`guard.probe.suite`); `plan` and `run_probe` ask the
model under test (`Target`) and judge its answers (`guard.probe.run`);
`findings` says, per dimension, which group fares differently from the others
(`guard.probe.stats`); `probe_json` and `finished_cells` write a run and
resume one (`guard.probe.record`). `bias-guard probe` is the command line.
"""

from guard.probe.record import finished_cells, probe_json, write_record
from guard.probe.refusals import RefusalSource, refusal
from guard.probe.run import Cell, Plan, plan, run_probe
from guard.probe.stats import Finding, Metric, findings
from guard.probe.suite import BUILTIN, Dimension, Group, Suite, load_suite, parse_suite
from guard.probe.target import Answer, Target

__all__ = [
    "BUILTIN",
    "Answer",
    "Cell",
    "Dimension",
    "Finding",
    "Group",
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
