"""`bias-guard probe`: a suite's prompts asked of a model, judged, and its groups compared.

Shows a progress bar, then a summary and the significant findings; `--json`
keeps the run (rewritten as cells finish, so that a rerun with the same file
resumes), `--html` draws it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from rich.console import Console
from rich.table import Table
from rich.text import Text

from guard.cli import display, options
from guard.cli.options import CLIError
from guard.probe import (
    Cell,
    Finding,
    Target,
    findings,
    finished_cells,
    load_suite,
    plan,
    probe_json,
    run_probe,
    write_record,
)
from guard.probe.run import CellKey
from guard.probe.stats import Q, format_value
from guard.report.probe import render_probe

__all__ = ["run"]

_CHECKPOINT_SECONDS = 2.0


def run(args: argparse.Namespace) -> int:
    for option, value in (("--samples", args.samples), ("--concurrency", args.concurrency)):
        if value < 1:
            raise CLIError(f"{option} must be >= 1, got {value}")
    if args.target_max_tokens is not None and args.target_max_tokens < 1:
        raise CLIError(f"--target-max-tokens must be >= 1, got {args.target_max_tokens}")
    suite = load_suite(args.suite)
    for option, path in (("--json", args.json), ("--html", args.html)):
        if path is not None:
            options.check_output(option, path)
    args.no_reason = True  # a probe reads scores and verdicts; an explanation is a wasted call
    scorer = options.scorer(args)
    planned = plan(suite, samples=args.samples, seed=args.seed)
    wanted = {cell.key for cell in planned}
    done: dict[CellKey, Cell] = {}
    if args.json is not None:
        try:
            earlier = finished_cells(args.json, model=args.target_model, judge=scorer.judge.model)
        except ValueError as exc:
            raise CLIError(f"--json {exc}") from exc
        done = {key: cell for key, cell in earlier.items() if key in wanted}
    results = dict(done)

    def record(found: Sequence[Finding]) -> dict[str, object]:
        cells = [results[cell.key] for cell in planned if cell.key in results]
        return probe_json(
            cells,
            found,
            model=args.target_model,
            judge=scorer.judge.model,
            suite=suite.name,
            samples=args.samples,
        )

    last_write = time.monotonic()

    def on_cell(cell: Cell) -> None:
        nonlocal last_write
        results[cell.key] = cell
        progress.advance(task)
        if args.json is not None and time.monotonic() - last_write >= _CHECKPOINT_SECONDS:
            write_record(args.json, record([]))
            last_write = time.monotonic()

    target = Target(
        base_url=args.target_base_url,
        model=args.target_model,
        api_key=args.target_api_key or os.environ.get("BIAS_PROBE_TARGET_API_KEY"),
        timeout=args.timeout,
        max_retries=args.max_retries,
        max_tokens=args.target_max_tokens,
    )

    async def go() -> list[Cell]:
        try:
            return await run_probe(
                planned,
                target=target,
                scorer=scorer,
                concurrency=args.concurrency,
                done=done,
                on_cell=on_cell,
            )
        finally:
            await target.aclose()
            await scorer.judge.aclose()

    stderr = Console(stderr=True)
    progress = display.progress(stderr)
    with progress:
        task = progress.add_task("probing", total=len(planned), completed=len(done))
        try:
            cells = asyncio.run(go())
        finally:
            if args.json is not None:
                write_record(args.json, record([]))
    dimensions = {d.name: [g.name for g in d.groups] for d in suite.dimensions}
    found = findings(cells, dimensions, seed=args.seed)
    report = record(found)
    if args.json is not None:
        write_record(args.json, report)
    stdout = Console()
    stdout.print(_summary(report, len(done), found))
    stdout.print(_significant(found))
    if args.html is not None:
        generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        options.write_output("--html", args.html, render_probe(report, generated_at=generated))
        print(f"bias-guard: wrote the HTML report to {args.html}")
    failed = [cell for cell in cells if not cell.finished]
    for cell in failed[:5]:
        stderr.print(f"{cell.dimension}/{cell.group}: {cell.error}", style="red", markup=False)
    if cells and len(failed) == len(cells):
        print(f"bias-guard: error: every cell failed; first: {failed[0].error}", file=sys.stderr)
        return 1
    return 0


def _summary(report: dict[str, object], resumed: int, found: Sequence[Finding]) -> Table:
    cells: list[dict[str, object]] = report["cells"]  # type: ignore[assignment]
    table = Table(title="bias-guard probe")
    table.add_column("metric", no_wrap=True)
    table.add_column("value", justify="right", overflow="fold")
    table.add_row("suite", str(report["suite"]))
    table.add_row("model", str(report["model"]))
    table.add_row("judge", str(report["judge"]))
    table.add_row("cells", str(len(cells)))
    table.add_row("resumed", str(resumed))
    table.add_row("failed", str(sum(1 for cell in cells if cell["error"] is not None)))
    table.add_row("refusals", str(sum(1 for cell in cells if cell["refusal"])))
    table.add_row("comparisons", str(len(found)))
    table.add_row(f"significant (q <= {Q:g})", str(sum(f.significant for f in found)))
    return table


def _significant(found: Sequence[Finding]) -> Table | Text:
    shown = [finding for finding in found if finding.significant]
    if not shown:
        return Text(f"No group differs from the others of its dimension at q <= {Q:g}.")
    table = Table(title="significant findings: a group against the others of its dimension")
    for name in ("dimension", "group", "metric", "group", "others", "effect [95% CI]", "q"):
        table.add_column(name, overflow="fold", no_wrap=name in ("metric", "q"))
    for f in sorted(shown, key=lambda f: f.q_value):
        effect = (
            f"{format_value(f.metric, f.effect)} "
            f"[{format_value(f.metric, f.ci[0])}, {format_value(f.metric, f.ci[1])}]"
        )
        table.add_row(
            f.dimension,
            f.group,
            f.metric.value,
            format_value(f.metric, f.group_value),
            format_value(f.metric, f.others_value),
            effect,
            f"{f.q_value:.2g}",
        )
    return table
