"""`bias-guard eval`: a JSONL dataset scored with a progress bar, tables, --out and --html."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console

from guard.cli import display, options
from guard.cli.dataset import read_jsonl
from guard.cli.options import CLIError
from guard.cli.score import result_json
from guard.evals import ItemResult, run_evals
from guard.judge import resolve_judge
from guard.report import render_report

__all__ = ["run", "write_html"]

_SHOWN_FAILURES = 10


def run(args: argparse.Namespace) -> int:
    if args.concurrency < 1:
        raise CLIError("--concurrency must be >= 1")
    stderr = Console(stderr=True)
    dataset = read_jsonl(args.file, needs_target=args.target is None, strict=args.strict)
    scorer = options.scorer(args)
    target = None
    if args.target:
        target = resolve_judge(args.target, base_url=args.target_base_url, api_key=None)
    if args.html is not None:
        # Before any scoring, and before --out creates its file.
        options.check_output("--html", args.html)
    out = _open_out(args.out) if args.out else None
    progress = display.progress(stderr)
    scores: list[float] = []
    tampered: list[int] = []  # the items whose text addressed the judge
    done: list[ItemResult] = []  # for --html only

    def on_item(item: ItemResult) -> None:
        scores.extend(result.score for result in item.scores.values())
        if any(result.tamper for result in item.scores.values()):
            tampered.append(item.index)
        if args.html is not None:
            done.append(item)
        if out is not None:
            row = _item_json(item, line=dataset.lines[item.index], full=args.full)
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
        progress.advance(task)

    async def go() -> dict[str, Any]:
        try:
            return await run_evals(
                dataset.items,
                [scorer],
                target=target,
                on_item_complete=on_item,
                concurrency=args.concurrency,
            )
        finally:
            await scorer.judge.aclose()
            if target is not None:
                await target.aclose()

    with progress:
        task = progress.add_task("scoring", total=len(dataset.items))
        try:
            report = asyncio.run(go())
        finally:
            if out is not None:
                out.close()
    stdout = Console()
    stdout.print(display.summary_table(report, scorer, scores, dataset, args.file, len(tampered)))
    if scores:
        stdout.print(display.categories_table(report["categories"][scorer.id], len(scores)))
    if args.html is not None:
        page = render_report(
            done,
            scorer_id=scorer.id,
            scale=scorer.scale,
            source=str(args.file),
            judge=scorer.judge.model,
            lines=dataset.lines,
            skipped=dataset.skipped,
            generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        )
        write_html(args.html, page)
        print(f"bias-guard: wrote the HTML report to {args.html}")
    for error in report["errors"][:_SHOWN_FAILURES]:
        line = dataset.lines[error["index"]]
        stderr.print(f"line {line}: {error['error']}", style="red", markup=False)
    if len(report["errors"]) > _SHOWN_FAILURES:
        more = len(report["errors"]) - _SHOWN_FAILURES
        hint = " (each is in --out)" if args.out else ""
        stderr.print(f"… and {more} more failures{hint}", style="red", markup=False)
    failed, total = report["summary"]["failedItems"], report["summary"]["totalItems"]
    if total and failed == total:
        first = report["errors"][0]["error"] if report["errors"] else "unknown"
        hint = f" ({options.NO_KEY})" if options.api_key(args) is None else ""
        print(f"bias-guard: error: every item failed; first error: {first}{hint}", file=sys.stderr)
        return 1
    return 0


def write_html(path: Path, page: str) -> None:
    options.write_output("--html", path, page)


def _open_out(path: Path) -> TextIO:
    try:
        return path.open("w", encoding="utf-8")
    except OSError as exc:
        raise CLIError(f"--out {path}: {exc.strerror}") from exc


def _item_json(item: ItemResult, *, line: int, full: bool) -> dict[str, Any]:
    return {
        "index": item.index,
        "line": line,
        "input": item.input,
        "output": item.output,
        "results": {
            name: result_json(result, item.output, full=full)
            for name, result in item.scores.items()
        },
        "errors": item.errors,
    }
