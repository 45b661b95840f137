"""`bias-guard calibrate`: labelled texts judged once, figures at every threshold.

Reads the file (`guard.calibration.read_labelled`), scores each text with a
progress bar, then prints the summary, every threshold's precision, recall,
F1 and share flagged, the confusion table and the categories at the chosen
threshold; `--json` and `--html` write the same figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from datetime import UTC, datetime

from rich.console import Console
from rich.table import Table
from rich.text import Text

from guard.calibration import (
    CalibrationReport,
    CountRow,
    Counts,
    LabelledSet,
    ThresholdRow,
    build_report,
    judge_texts,
    read_labelled,
)
from guard.cli import display, options
from guard.cli.options import CLIError
from guard.report import render_calibration

__all__ = ["run"]

_SHOWN_FAILURES = 10


def run(args: argparse.Namespace) -> int:
    _check(args)
    stderr = Console(stderr=True)
    labelled = read_labelled(
        args.file, args.format, scale=args.scale, label_cut=args.label_cut, strict=args.strict
    )
    for skipped in labelled.skipped:
        print(
            f"bias-guard: {args.file}:{skipped.location}: skipped: {skipped.why}", file=sys.stderr
        )
    for output, path in (("--json", args.json), ("--html", args.html)):
        if path is not None:
            options.check_output(output, path)  # before any scoring
    scorer = options.scorer(args)
    progress = display.progress(stderr)

    async def go() -> CalibrationReport:
        try:
            judged = await judge_texts(
                labelled.items,
                scorer,
                concurrency=args.concurrency,
                on_judged=lambda _: progress.advance(task),
            )
        finally:
            await scorer.judge.aclose()
        return build_report(
            labelled,
            judged,
            source=str(args.file),
            judge=scorer.judge.model,
            scale=scorer.scale,
            grid=args.grid,
            target_precision=args.precision,
            label_cut=_label_cut(args),
        )

    with progress:
        task = progress.add_task("scoring", total=len(labelled.items))
        report = asyncio.run(go())
    _print(report, Console(), stderr, json_written=args.json is not None)
    if args.json is not None:
        document = json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"
        options.write_output("--json", args.json, document)
        print(f"bias-guard: wrote the figures to {args.json}")
    if args.html is not None:
        generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        options.write_output(
            "--html", args.html, render_calibration(report, generated_at=generated)
        )
        print(f"bias-guard: wrote the HTML page to {args.html}")
    if not report.run.scored:
        first = report.run.failed[0].error if report.run.failed else "unknown"
        hint = f" ({options.NO_KEY})" if options.api_key(args) is None else ""
        print(f"bias-guard: error: every text failed; first error: {first}{hint}", file=sys.stderr)
        return 1
    return 0


def _check(args: argparse.Namespace) -> None:
    """Refuse bad options before anything is read or scored."""
    if not (math.isfinite(args.scale) and args.scale > 0):
        raise CLIError(f"--scale must be > 0, got {args.scale:g}")
    if not (math.isfinite(args.grid) and 0 < args.grid <= args.scale):
        raise CLIError(
            f"--grid must be > 0 and at most the scale ({args.scale:g}), got {args.grid:g}"
        )
    if args.scale / args.grid > 10_000:
        raise CLIError(f"--grid {args.grid:g} makes more than 10000 thresholds")
    if not 0 < args.precision <= 1:
        raise CLIError(f"--precision must be in (0, 1], got {args.precision:g}")
    if args.concurrency < 1:
        raise CLIError("--concurrency must be >= 1")
    if args.label_cut is not None:
        if args.format != "jsonl":
            raise CLIError("--label-cut applies to --format jsonl only")
        if not 0 <= args.label_cut <= args.scale:
            raise CLIError(f"--label-cut must be within 0..{args.scale:g}, got {args.label_cut:g}")


def _label_cut(args: argparse.Namespace) -> float | None:
    if args.format != "jsonl":
        return None
    return args.scale / 2 if args.label_cut is None else float(args.label_cut)


def _print(
    report: CalibrationReport, stdout: Console, stderr: Console, *, json_written: bool
) -> None:
    calibration = report.calibration
    stdout.print(_summary_table(report))
    stdout.print(_thresholds_table(calibration.rows, calibration.chosen))
    stdout.print(_opinions_table(calibration.count_rows))
    chosen = calibration.chosen
    if chosen is None:
        stdout.print(Text("confusion table: none (no biased text was flagged at any threshold)"))
    else:
        stdout.print(_confusion_table(chosen, calibration.chosen_by))
        if calibration.categories:
            stdout.print(_categories_table(report, chosen))
    scored = report.run.scored
    if scored and report.biased in (0, len(scored)):
        missing = "biased" if report.biased == 0 else "unbiased"
        stderr.print(f"note: no scored text is labelled {missing}", style="yellow", markup=False)
    failed = report.run.failed
    for judged in failed[:_SHOWN_FAILURES]:
        where = judged.item.location if judged.item.line is None else f"line {judged.item.line}"
        stderr.print(f"{where}: {judged.error}", style="red", markup=False)
    if len(failed) > _SHOWN_FAILURES:
        more = f"… and {len(failed) - _SHOWN_FAILURES} more failures"
        hint = " (each is in --json)" if json_written else ""
        stderr.print(more + hint, style="red", markup=False)


def _summary_table(report: CalibrationReport) -> Table:
    calibration = report.calibration
    usage = report.run.usage
    labelled: LabelledSet = report.labelled
    scored = len(report.run.scored)
    table = Table(title="bias-guard calibrate")
    table.add_column("metric", overflow="fold")
    table.add_column("value", justify="right", overflow="fold")
    rows = [
        ("file", report.source),
        ("format", labelled.format),
        ("judge", report.judge),
        ("texts", str(len(labelled.items))),
        ("scored", f"{scored} ({report.biased} biased, {scored - report.biased} unbiased)"),
        ("failed (not in the figures)", str(len(report.run.failed))),
        ("skipped records", str(len(labelled.skipped))),
        *((f"left out: {why}", str(n)) for why, n in sorted(labelled.left_out.items())),
        ("judge calls", str(report.run.judge_calls)),
        ("judge tokens", str(usage.prompt_tokens + usage.completion_tokens)),
        ("wall time", f"{report.run.seconds:.1f} s"),
        ("best F1", _pick(calibration.best)),
        (f"precision >= {calibration.target_precision:g} from", _pick(calibration.reaching)),
    ]
    for name, value in rows:
        table.add_row(Text(name), Text(value))
    return table


def _pick(row: ThresholdRow | None) -> str:
    if row is None:
        return "none"
    counts = row.counts
    return f"{row.threshold:g} (P {_fraction(counts.precision)}, R {_fraction(counts.recall)})"


def _thresholds_table(rows: list[ThresholdRow], chosen: ThresholdRow | None) -> Table:
    table = Table(title="by threshold (flagged at score >= threshold)")
    for name in ("threshold", "precision", "recall", "F1", "flagged", "tp", "fp", "fn", "tn"):
        table.add_column(name, justify="right", no_wrap=True)
    for row in rows:
        counts = row.counts
        table.add_row(
            f"{row.threshold:g}",
            *_ratios(counts),
            *(str(n) for n in (counts.tp, counts.fp, counts.fn, counts.tn)),
            style="bold" if chosen is not None and row.threshold == chosen.threshold else None,
        )
    return table


def _opinions_table(rows: list[CountRow]) -> Table:
    table = Table(title="by biased opinions (flagged at >= n biased opinions, whatever the score)")
    for name in ("n", "precision", "recall", "F1", "flagged", "tp", "fp", "fn", "tn"):
        table.add_column(name, justify="right", no_wrap=True)
    for row in rows:
        counts = row.counts
        table.add_row(
            str(row.at_least),
            *_ratios(counts),
            *(str(n) for n in (counts.tp, counts.fp, counts.fn, counts.tn)),
        )
    return table


def _confusion_table(chosen: ThresholdRow, chosen_by: str | None) -> Table:
    why = "target precision" if chosen_by == "precision" else "best F1"
    counts = chosen.counts
    table = Table(title=f"confusion at {chosen.threshold:g} ({why})")
    for name in ("label", "flagged", "not flagged", "total"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_row("biased", str(counts.tp), str(counts.fn), str(counts.tp + counts.fn))
    table.add_row("unbiased", str(counts.fp), str(counts.tn), str(counts.fp + counts.tn))
    table.add_row(
        "total", str(counts.tp + counts.fp), str(counts.fn + counts.tn), str(counts.total)
    )
    return table


def _categories_table(report: CalibrationReport, chosen: ThresholdRow) -> Table:
    at = report.calibration.category_at(chosen.threshold)
    table = Table(title=f"by category at {chosen.threshold:g}", pad_edge=False)
    # The failed column only when something failed: the table then fits 80 columns.
    failures = bool(report.run.failed)
    table.add_column("category", overflow="fold", min_width=12)
    for name in ("items", "biased", *(("failed",) if failures else ()), "precision", "recall"):
        table.add_column(name, justify="right", no_wrap=True)
    for name in ("F1", "flagged"):
        table.add_column(name, justify="right", no_wrap=True)
    for figures in report.categories():
        failed = (str(figures.failed),) if failures else ()
        table.add_row(
            Text(figures.category),
            str(figures.items),
            str(figures.biased),
            *failed,
            *_ratios(at[figures.category]),
        )
    return table


def _ratios(counts: Counts) -> tuple[str, str, str, str]:
    return (
        _fraction(counts.precision),
        _fraction(counts.recall),
        _fraction(counts.f1),
        _fraction(counts.flagged),
    )


def _fraction(value: float | None) -> str:
    return "n/a" if value is None else f"{round(value, 4):g}"
