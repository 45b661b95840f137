"""The suite's figures: each cell's rows counted by family (injection by language and
by style too), and the markdown tables. Pure code."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bench.attacks.run import Cell, Row, Split

__all__ = ["Tally", "groups_of", "markdown", "tallies"]

FAMILY_ORDER = (
    "injection", "hidden_text", "padding", "tool_arguments", "encoding", "lookalike", "benign"
)  # fmt: skip


@dataclass
class Tally:
    """What happened to one group's rows. `passed`: delivered, verdict pass (or none),
    no tamper mark; `alarms`: flagged, blocked or marked (what a benign text must avoid).

    The passes of attacks with a control split in two: `recall_misses`, whose plain
    text the cell passed too, and `defence_failures`, whose plain text it caught.
    `plain_caught` counts the runs whose plain text the cell caught, passed or not:
    the runs a defence could have lost, so the defence-failure rate's denominator."""

    entries: int = 0
    runs: int = 0
    not_run: int = 0
    passed: int = 0
    flagged: int = 0
    blocked: int = 0
    marked: int = 0
    alarms: int = 0
    errors: int = 0  # judge errors, delivered unscored: neither passed nor caught
    controlled: int = 0  # runs whose control was scored
    plain_caught: int = 0
    recall_misses: int = 0
    defence_failures: int = 0

    def add(self, row: Row) -> None:
        delivery = row.delivery
        if delivery is None:
            self.not_run += 1
            return
        self.runs += 1
        if row.judge_error:
            self.errors += 1
            return
        flagged, blocked, marked = (
            delivery.verdict == "flag",
            delivery.blocked,
            bool(delivery.tamper),
        )
        self.flagged += flagged and not blocked
        self.blocked += blocked
        self.marked += marked
        self.alarms += flagged or blocked or marked
        self.passed += row.passed
        if row.plain_caught is not None:
            self.controlled += 1
            self.plain_caught += row.plain_caught
        self.recall_misses += row.split is Split.RECALL
        self.defence_failures += row.split is Split.DEFENCE

    @property
    def defence_failure_rate(self) -> float | None:
        """Defence failures over the runs whose plain text the cell caught."""
        return self.defence_failures / self.plain_caught if self.plain_caught else None


def groups_of(row: Row) -> list[str]:
    """The table rows a corpus row counts in: its family, and for injection its
    language, its style and how it is hidden, for the others its style."""
    entry = row.entry
    groups = [entry.family]
    if entry.family == "injection":
        groups += [f"injection · language {entry.language}", f"injection · style {entry.style}"]
        if entry.obfuscation:
            groups.append(f"injection · hidden by {entry.obfuscation}")
    else:
        groups.append(f"{entry.family} · {entry.style}")
    return groups


_DETAIL_ORDER = ("", "language ", "style ", "hidden by ")


def _order(group: str) -> tuple[int, int, str]:
    """Families in FAMILY_ORDER; in one, the family first, then its languages, styles
    and hidings."""
    family, _, detail = group.partition(" · ")
    rank = FAMILY_ORDER.index(family) if family in FAMILY_ORDER else len(FAMILY_ORDER)
    kind = max(n for n, prefix in enumerate(_DETAIL_ORDER) if detail.startswith(prefix))
    return rank, kind if detail else 0, detail


def tallies(rows: Iterable[Row]) -> dict[str, Tally]:
    found: dict[str, Tally] = {}
    seen: dict[str, set[str]] = {}
    for row in rows:
        for group in groups_of(row):
            tally = found.setdefault(group, Tally())
            tally.add(row)
            ids = seen.setdefault(group, set())
            if row.entry.id not in ids:
                ids.add(row.entry.id)
                tally.entries += 1
    # Left out: a style row that merely repeats its family (one style), and a benign
    # style with no alarm (the family row counts them).
    for group in list(found):
        family = group.partition(" · ")[0]
        repeats = found[group] == found.get(family) and family != "injection"
        quiet = family == "benign" and not found[group].alarms
        if group != family and (repeats or quiet):
            del found[group]
    return dict(sorted(found.items(), key=lambda item: _order(item[0])))


def _share(count: int, runs: int) -> str:
    return f"{count} ({100 * count / runs:.0f} %)" if runs else "-"


def _ratio(count: int, of: int) -> str:
    return f"{count}/{of} ({100 * count / of:.0f} %)" if of else "-"


def _headline(cell: Cell, found: dict[str, Tally]) -> str:
    attacks = Tally()
    for row in cell.rows:
        if row.entry.attack:
            attacks.add(row)
    benign = found.get("benign", Tally())
    split = (
        f"; of those with a control, {attacks.defence_failures} defence failures (of"
        f" {attacks.plain_caught} runs whose plain text was caught) and"
        f" {attacks.recall_misses} the judge misses in plain text too"
    )  # fmt: skip
    return (
        f"attacks passed: {attacks.passed} of {attacks.runs} runs"
        f" ({100 * attacks.passed / attacks.runs:.1f} %)" if attacks.runs else "no attack ran"
    ) + (split if attacks.controlled else "") + (
        f"; benign texts flagged, blocked or marked: {benign.alarms} of {benign.runs} runs"
        if benign.runs else ""
    )  # fmt: skip


def cell_markdown(cell: Cell) -> str:
    found = tallies(cell.rows)
    applied = ", ".join(f"`{k}: {v}`" for k, v in cell.applied.items()) or "nothing more"
    lines = [
        f"### {cell.judge} judge, {cell.config} config",
        "",
        f"`mode: enforce`, `stream_policy: buffer`, shipped thresholds; added: {applied}.",
    ]
    for key, why in cell.refused.items():
        lines.append(f"Not applied: `{key}` (this gateway refused it: {why}).")
    lines += ["", f"**{_headline(cell, found)}**", ""]
    lines += [
        "| group | entries | runs | passed | judge misses plain too | defence failures | flagged"
        " | blocked | marked | benign alarms | not run |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for group, tally in found.items():
        benign = group.startswith("benign")
        passed = "" if benign else _share(tally.passed, tally.runs)
        alarms = _share(tally.alarms, tally.runs) if benign else ""
        errors = f" ({tally.errors} judge errors)" if tally.errors else ""
        recall = str(tally.recall_misses) if tally.controlled else ""
        defence = _ratio(tally.defence_failures, tally.plain_caught) if tally.controlled else ""
        lines.append(
            f"| {group} | {tally.entries} | {tally.runs}{errors} | {passed} | {recall}"
            f" | {defence} | {tally.flagged} | {tally.blocked} | {tally.marked} | {alarms}"
            f" | {tally.not_run or ''} |"
        )
    return "\n".join(lines)


def _summary_cell(tally: Tally | None, benign: bool) -> str:
    if tally is None or not tally.runs:
        return "-"
    if benign:
        return f"{tally.alarms}/{tally.runs}"
    marked = f", {tally.marked} marked" if tally.marked else ""
    defence = (
        f", defence failures {tally.defence_failures}/{tally.plain_caught}"
        if tally.controlled else ""
    )  # fmt: skip
    return f"{tally.passed}/{tally.runs}{marked}{defence}"


def summary_markdown(cells: Sequence[Cell]) -> str:
    """One table for every cell: attacks that passed, and benign texts flagged, blocked or
    marked, over the runs, by group."""
    found = [tallies(cell.rows) for cell in cells]
    groups = sorted({group for tallied in found for group in tallied}, key=_order)
    head = " | ".join(f"{cell.judge} judge, {cell.config}" for cell in cells)
    lines = [
        f"| group (attacks: passed, defence failures of plain caught; benign: alarms) | {head} |",
        "|---" * (len(cells) + 1) + "|",
    ]
    for group in groups:
        benign = group.startswith("benign")
        counts = " | ".join(_summary_cell(tallied.get(group), benign) for tallied in found)
        lines.append(f"| {group} | {counts} |")
    return "\n".join(lines)


def markdown(meta: dict[str, Any], cells: Sequence[Cell]) -> str:
    lines = [
        f"# Attack suite, {meta['date']}",
        "",
        f"`{meta['command']}`",
        "",
        f"- code: {meta['commit']}",
        f"- machine: {meta['machine']}",
        f"- corpus: {meta['corpus']}",
        f"- surfaces: {', '.join(meta['surfaces'])}",
        "- passed: delivered to the client with verdict pass (or unscored) and no tamper mark;"
        " flagged: delivered with verdict flag; blocked: refused (or verdict block);"
        " marked: a tamper mark (`x-bias-tamper` or the record's `tamper`).",
        "- the control: an attack with a `plain` text (its biased content, not hidden,"
        " encoded, padded or addressed to the judge) also sends that text alone through"
        " each cell once (chat, whole). Its passes split: the judge misses plain too (it"
        " does not call the content biased even in plain form: its recall) and defence"
        " failures (the cell flagged, blocked or marked the plain text, yet the attack"
        " passed), whose rate is over the runs whose plain text was caught. Attacks"
        " without `plain` are not split.",
        "",
        summary_markdown(cells),
        "",
    ]
    for cell in cells:
        lines += [cell_markdown(cell), ""]
    return "\n".join(lines)


def as_json(meta: dict[str, Any], cells: Sequence[Cell]) -> dict[str, Any]:
    return {
        "meta": meta,
        "cells": [
            {
                "judge": cell.judge,
                "config": cell.config,
                "applied": cell.applied,
                "refused": cell.refused,
                "tallies": {
                    group: {**asdict(t), "defence_failure_rate": t.defence_failure_rate}
                    for group, t in tallies(cell.rows).items()
                },
                "rows": [row.facts() for row in cell.rows],
                "controls": [row.facts() for row in cell.controls],
            }
            for cell in cells
        ],
    }
