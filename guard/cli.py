"""`bias-guard`: score one text, or run a JSONL dataset, from the shell."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from guard.bias.scorer import PIPELINES, BiasScorer, create_bias_scorer
from guard.errors import GuardError, JudgeError
from guard.evals import EvalItem, ItemResult, run_evals
from guard.judge import resolve_judge

__all__ = ["main"]

_BUCKETS = 5


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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bias-guard", description="Score LLM output for bias.")
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

    run = commands.add_parser("eval", parents=[judge], help="score a JSONL dataset")
    run.add_argument("file", type=Path, help='JSONL: {"input": ..., "output": ...} per line')
    run.add_argument("--concurrency", type=int, default=4, help="items scored at once")
    run.add_argument("--out", type=Path, help="write one JSON result per line here")
    run.add_argument("--target", help="model that writes outputs for lines without one")
    run.add_argument("--target-base-url", help="OpenAI-compatible endpoint of --target")
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
    print(json.dumps(result.to_json_dict(), indent=2, ensure_ascii=False))
    return 0


def _eval(args: argparse.Namespace) -> int:
    if args.concurrency < 1:
        raise CLIError("--concurrency must be >= 1")
    items = _read_jsonl(args.file, needs_target=args.target is None)
    scorer = _scorer(args)
    target = None
    if args.target:
        target = resolve_judge(args.target, base_url=args.target_base_url, api_key=None)
    out = args.out.open("w", encoding="utf-8") if args.out else None
    stderr = Console(stderr=True)
    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=False,
    )

    scores: list[float] = []

    def on_item(item: ItemResult) -> None:
        scores.extend(result.score for result in item.scores.values())
        if out is not None:
            out.write(json.dumps(_item_json(item), ensure_ascii=False) + "\n")
            out.flush()
        progress.advance(task)

    async def go() -> dict[str, Any]:
        try:
            return await run_evals(
                items,
                [scorer],
                target=target,
                on_item_complete=on_item,
                concurrency=args.concurrency,
            )
        finally:
            await scorer.judge.aclose()

    with progress:
        task = progress.add_task("scoring", total=len(items))
        try:
            report = asyncio.run(go())
        finally:
            if out is not None:
                out.close()
    Console().print(_summary_table(report, scorer, scores))
    for error in report["errors"][:10]:
        stderr.print(f"line {error['index'] + 1}: {error['error']}", style="red", markup=False)
    failed, total = report["summary"]["failedItems"], report["summary"]["totalItems"]
    if total and failed == total:
        first = report["errors"][0]["error"] if report["errors"] else "unknown"
        print(f"bias-guard: error: every item failed; first error: {first}", file=sys.stderr)
        return 1
    return 0


def _read_jsonl(path: Path, *, needs_target: bool) -> list[EvalItem]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise CLIError(f"{path}: no such file") from exc
    except OSError as exc:
        raise CLIError(f"{path}: {exc.strerror}") from exc
    items: list[EvalItem] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CLIError(f"{path}:{number}: invalid JSON: {exc.msg}") from exc
        if not isinstance(value, dict) or "input" not in value:
            raise CLIError(f'{path}:{number}: each line needs an "input" key')
        if "output" not in value and needs_target:
            raise CLIError(f'{path}:{number}: no "output", and no --target to produce one')
        items.append(EvalItem.from_value(value))
    if not items:
        raise CLIError(f"{path}: no items")
    return items


def _item_json(item: ItemResult) -> dict[str, Any]:
    return {
        "index": item.index,
        "input": item.input,
        "output": item.output,
        "results": {name: result.to_json_dict() for name, result in item.scores.items()},
        "errors": item.errors,
    }


def _summary_table(report: dict[str, Any], scorer: BiasScorer, scores: list[float]) -> Table:
    summary = report["summary"]
    mean = report["scores"][scorer.id]
    table = Table(title="bias-guard eval")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("items", str(summary["totalItems"]))
    table.add_row("failed", str(summary["failedItems"]))
    table.add_row("mean score", "n/a" if mean is None else f"{mean:.4g}")
    if scores:
        width = scorer.scale / _BUCKETS
        counts = [0] * _BUCKETS
        for value in scores:
            counts[min(int(value / width), _BUCKETS - 1)] += 1
        for bucket, count in enumerate(counts):
            low, high = bucket * width, (bucket + 1) * width
            closing = "]" if bucket == _BUCKETS - 1 else ")"
            table.add_row(f"score [{low:.3g}, {high:.3g}{closing}", str(count))
    return table
