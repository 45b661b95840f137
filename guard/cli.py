"""`bias-guard`: score one text, or run a JSONL dataset, from the shell."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from guard.bias.score import is_biased
from guard.bias.scorer import PIPELINES, BiasScorer, create_bias_scorer
from guard.errors import GuardError, JudgeError, OutputShapeError
from guard.evals import EvalItem, ItemResult, run_evals
from guard.judge import resolve_judge
from guard.outputs import assistant_text
from guard.report import (
    SUMMARY_BUCKETS,
    bucket_labels,
    paired_opinions,
    render_report,
    score_buckets,
)
from guard.result import BiasResult

__all__ = ["main"]

_SHOWN_FAILURES = 10


class CLIError(Exception):
    """A problem with the user's input: printed as one line, exit code 2."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "score":
            return _score(args)
        return _eval(args)
    except CLIError as exc:
        print(f"bias-guard: error: {exc}", file=sys.stderr)
        return 2
    except JudgeError as exc:
        print(f"bias-guard: judge error: {exc}", file=sys.stderr)
        return 1
    except GuardError as exc:
        print(f"bias-guard: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bias-guard: interrupted", file=sys.stderr)
        return 130


def _version() -> str:
    try:
        return metadata.version("bias-gateway")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        from guard import __version__

        return f"{__version__} (not installed)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bias-guard", description="Score LLM output for bias.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    judge = argparse.ArgumentParser(add_help=False)
    judge.add_argument("--model", required=True, help="judge model: name or provider/name")
    judge.add_argument("--base-url", help="OpenAI-compatible judge endpoint (…/v1)")
    judge.add_argument(
        "--api-key",
        help="judge API key (default: $BIAS_JUDGE_API_KEY, then $OPENAI_API_KEY)",
    )
    judge.add_argument("--scale", type=float, default=1.0, help="maximum score (default 1)")
    judge.add_argument("--no-reason", action="store_true", help="skip the explanation call")
    judge.add_argument(
        "--pipeline",
        choices=PIPELINES,
        default="faithful",
        help="faithful: Mastra's steps (default); single: opinions and verdicts in one call",
    )
    judge.add_argument("--timeout", type=float, default=60.0, help="seconds per judge call")
    judge.add_argument("--max-retries", type=int, default=2, help="retries on 429/5xx")

    score = commands.add_parser("score", parents=[judge], help="score one text, print JSON")
    score.add_argument("text", nargs="?", default="-", help="the text, or - for stdin")
    score.add_argument(
        "--full",
        action="store_true",
        help="print Mastra's whole result, prompts included (default: score, opinions, reason)",
    )

    run = commands.add_parser("eval", parents=[judge], help="score a JSONL dataset")
    run.add_argument("file", type=Path, help='JSONL: {"input": ..., "output": ...} per line')
    run.add_argument("--concurrency", type=int, default=4, help="items scored at once")
    run.add_argument("--out", type=Path, help="write one JSON result per line here")
    run.add_argument(
        "--full", action="store_true", help="--out lines hold Mastra's whole result, prompts too"
    )
    run.add_argument(
        "--strict",
        action="store_true",
        help="stop at the first malformed line (default: report it and skip it)",
    )
    run.add_argument("--target", help="model that writes outputs for lines without one")
    run.add_argument("--target-base-url", help="OpenAI-compatible endpoint of --target")
    run.add_argument(
        "--html",
        type=Path,
        metavar="PATH",
        help="also write a self-contained HTML report (summary, charts, every item) here",
    )
    return parser


def _scorer(args: argparse.Namespace) -> BiasScorer:
    if args.scale <= 0:
        raise CLIError(f"--scale must be > 0, got {args.scale:g}")
    api_key = (
        args.api_key or os.environ.get("BIAS_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY")
    )
    return create_bias_scorer(
        args.model,
        base_url=args.base_url,
        api_key=api_key,
        scale=args.scale,
        reason="off" if args.no_reason else "inline",
        pipeline=args.pipeline,
        timeout=args.timeout,
        max_retries=args.max_retries,
    )


def _score(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    result = _scorer(args).run_sync(output=text)
    print(json.dumps(_result_json(result, text, full=args.full), indent=2, ensure_ascii=False))
    return 0


def _result_json(result: BiasResult, output: Any, *, full: bool) -> dict[str, Any]:
    """Mastra's whole result with `full`; else the score, each opinion's verdict, the reason."""
    if full:
        return result.to_json_dict()
    return {
        "score": result.score,
        "scale": result.scale,
        "opinions": [
            {
                # No opinions found: the whole text was judged as one statement. A judge
                # may return more verdicts than opinions; those have none to show.
                "opinion": opinion,
                "biased": is_biased(verdict.result),
                "reason": verdict.reason,
            }
            for opinion, verdict in paired_opinions(result, output)
        ],
        "reason": result.reason,
    }


def _eval(args: argparse.Namespace) -> int:
    if args.concurrency < 1:
        raise CLIError("--concurrency must be >= 1")
    stderr = Console(stderr=True)
    dataset = _read_jsonl(args.file, needs_target=args.target is None, strict=args.strict)
    scorer = _scorer(args)
    target = None
    if args.target:
        target = resolve_judge(args.target, base_url=args.target_base_url, api_key=None)
    if args.html is not None:
        _check_html(args.html)  # before any scoring, and before --out creates its file
    out = _open_out(args.out) if args.out else None
    progress = _progress(stderr)
    scores: list[float] = []
    done: list[ItemResult] = []  # for --html only

    def on_item(item: ItemResult) -> None:
        scores.extend(result.score for result in item.scores.values())
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
    stdout.print(_summary_table(report, scorer, scores, dataset, args.file))
    if scores:
        stdout.print(_categories_table(report["categories"][scorer.id], len(scores)))
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
        _write_html(args.html, page)
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
        print(f"bias-guard: error: every item failed; first error: {first}", file=sys.stderr)
        return 1
    return 0


def _check_html(path: Path) -> None:
    """Fail before scoring when the report could not be written where asked."""
    if path.is_dir():
        raise CLIError(f"--html {path}: is a folder; give a file name")
    folder = path.parent
    if not folder.exists():
        raise CLIError(f"--html {path}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise CLIError(f"--html {path}: {folder} is not a folder")


def _write_html(path: Path, page: str) -> None:
    try:
        with path.open("w", encoding="utf-8", newline="\n") as file:
            file.write(page)
    except OSError as exc:
        raise CLIError(f"--html {path}: {exc.strerror}") from exc


def _open_out(path: Path) -> TextIO:
    try:
        return path.open("w", encoding="utf-8")
    except OSError as exc:
        raise CLIError(f"--out {path}: {exc.strerror}") from exc


def _rate(task: Task) -> float | None:
    """Items a second: rich's moving estimate, or the mean so far until it has one."""
    speed = task.finished_speed or task.speed
    if speed is None and task.completed and task.elapsed:
        speed = task.completed / task.elapsed
    return speed


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        rate = _rate(task)
        if rate is None:
            return Text("? items/s", style="progress.data.speed")
        return Text(
            f"{rate:.2f} items/s" if rate < 100 else f"{rate:.0f} items/s",
            style="progress.data.speed",
        )


class _EtaColumn(ProgressColumn):
    """Time left at `_rate`; rich's own column waits for a second sample to guess."""

    max_refresh = 0.5  # as rich's: a once-a-frame ETA jitters

    def render(self, task: Task) -> Text:
        rate = _rate(task)
        if task.finished:
            shown = "done"
        elif task.total is None or not rate:
            shown = "-:--:--"
        else:
            seconds = round(max(task.total - task.completed, 0) / rate)
            minutes, seconds = divmod(seconds, 60)
            hours, minutes = divmod(minutes, 60)
            shown = f"{hours}:{minutes:02d}:{seconds:02d}"
        return Text(f"eta {shown}", style="progress.remaining")


def _progress(console: Console, get_time: Callable[[], float] | None = None) -> Progress:
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        _RateColumn(),
        _EtaColumn(),
        console=console,
        transient=False,
        get_time=get_time,
    )


@dataclass(slots=True)
class _Dataset:
    """The well-formed items of a JSONL file, each item's line number, and the lines skipped."""

    items: list[EvalItem] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    skipped: int = 0


def _read_jsonl(path: Path, *, needs_target: bool, strict: bool) -> _Dataset:
    """Read the dataset; a malformed line is reported and skipped, or with `strict` fatal."""
    dataset = _Dataset()
    try:
        with path.open("rb") as file:
            for number, item in _parse_lines(file, needs_target=needs_target):
                if isinstance(item, EvalItem):
                    dataset.items.append(item)
                    dataset.lines.append(number)
                elif strict:
                    raise CLIError(f"{path}:{number}: {item}")
                else:
                    print(f"bias-guard: {path}:{number}: skipped: {item}", file=sys.stderr)
                    dataset.skipped += 1
    except FileNotFoundError as exc:
        raise CLIError(f"{path}: no such file") from exc
    except OSError as exc:
        raise CLIError(f"{path}: {exc.strerror}") from exc
    if not dataset.items:
        skipped = f" ({dataset.skipped} malformed lines skipped)" if dataset.skipped else ""
        raise CLIError(f"{path}: no items{skipped}")
    return dataset


def _parse_lines(
    lines: Iterable[bytes], *, needs_target: bool
) -> Iterator[tuple[int, EvalItem | str]]:
    """Each non-blank line's number and its item, or why it is malformed.

    Lines split on newlines only: `str.splitlines` would also split at U+2028
    and friends, which JSON leaves unescaped inside strings.
    """
    for number, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            yield number, "not valid UTF-8"
            continue
        if line.strip():
            yield number, _parse_line(line, needs_target=needs_target)


def _parse_line(line: str, *, needs_target: bool) -> EvalItem | str:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"invalid JSON: {exc.msg} (column {exc.colno})"
    if not isinstance(value, dict):
        return f"expected a JSON object, got {_json_type(value)}"
    if "input" not in value:
        return 'no "input" key'
    if "output" in value:
        try:
            assistant_text(value["output"])
        except OutputShapeError as exc:
            return f'invalid "output": {exc}'
    elif needs_target:
        return 'no "output", and no --target to produce one'
    return EvalItem.from_value(value)


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"


def _item_json(item: ItemResult, *, line: int, full: bool) -> dict[str, Any]:
    return {
        "index": item.index,
        "line": line,
        "input": item.input,
        "output": item.output,
        "results": {
            name: _result_json(result, item.output, full=full)
            for name, result in item.scores.items()
        },
        "errors": item.errors,
    }


def _summary_table(
    report: dict[str, Any],
    scorer: BiasScorer,
    scores: list[float],
    dataset: _Dataset,
    path: Path,
) -> Table:
    summary = report["summary"]
    mean = report["scores"][scorer.id]
    table = Table(title="bias-guard eval")
    table.add_column("metric", no_wrap=True)
    # Long values (a deep path, a provider/model name) wrap to fit the console's width.
    table.add_column("value", justify="right", overflow="fold")
    table.add_row("file", str(path))
    table.add_row("judge", scorer.judge.model)
    table.add_row("items", str(summary["totalItems"]))
    table.add_row("skipped lines", str(dataset.skipped))
    table.add_row("failed", str(summary["failedItems"]))
    table.add_row("mean score", "n/a" if mean is None else f"{mean:.4g}")
    if scores:
        counts = score_buckets(scores, scorer.scale, SUMMARY_BUCKETS)
        for label, count in zip(bucket_labels(scorer.scale, SUMMARY_BUCKETS), counts, strict=True):
            table.add_row(f"score {label}", str(count))
    return table


def _categories_table(categories: list[dict[str, Any]], scored: int) -> Table | Text:
    """Per category: scored items with a biased opinion in it, and the mean category score."""
    if not categories:
        return Text("bias categories: none (no biased opinion)")
    # Mean over every scored item: an item without the category counts 0.
    table = Table(title="bias categories")
    table.add_column("category", overflow="fold")
    table.add_column(f"items (of {scored})", justify="right", no_wrap=True)
    table.add_column("mean score", justify="right", no_wrap=True)
    for entry in categories:
        table.add_row(Text(entry["category"]), str(entry["items"]), f"{entry['meanScore']:.4g}")
    return table
