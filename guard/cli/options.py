"""The command line's arguments, the scorer they ask for, and the error for bad input."""

from __future__ import annotations

import argparse
import os
from importlib import metadata
from pathlib import Path
from typing import Any

from guard.bias.factory import create_bias_scorer
from guard.bias.scorer import PIPELINES, BiasScorer
from guard.calibration import FORMATS

__all__ = [
    "NO_KEY",
    "CLIError",
    "api_key",
    "check_output",
    "parser",
    "scorer",
    "write_output",
]

# Added to a failed judge call's error when no key was given: a hosted judge refuses
# such calls, and without a network the failure does not say why it was keyless.
NO_KEY = "no API key was set: pass --api-key, or set $BIAS_JUDGE_API_KEY or $OPENAI_API_KEY"


class CLIError(Exception):
    """A problem with the user's input: printed as one line, exit code 2."""


def parser() -> argparse.ArgumentParser:
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
    judge.add_argument(
        "--max-tokens", type=int, help="the longest judge answer, in tokens (default: no bound)"
    )

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
    _calibrate_parser(commands, judge)
    _probe_parser(commands, judge)
    return parser


def _calibrate_parser(commands: Any, judge: argparse.ArgumentParser) -> None:
    calibrate = commands.add_parser(
        "calibrate",
        parents=[judge],
        help="judge labelled texts; precision, recall and F1 at each threshold",
    )
    calibrate.add_argument("file", type=Path, help="labelled texts (see --format)")
    calibrate.add_argument(
        "--format",
        choices=FORMATS,
        default="jsonl",
        help='jsonl: {"text": ..., "label": "biased"|"unbiased"|score} per line (default);'
        " or a CrowS-Pairs CSV, a StereoSet JSON, a BBQ JSONL file",
    )
    calibrate.add_argument(
        "--grid", type=float, default=0.05, help="step between thresholds (default 0.05)"
    )
    calibrate.add_argument(
        "--precision",
        type=float,
        default=0.9,
        help="target precision: the lowest threshold reaching it is reported (default 0.9)",
    )
    calibrate.add_argument(
        "--label-cut",
        type=float,
        help="a JSONL label given as a score is biased from this score up (default: scale/2)",
    )
    calibrate.add_argument("--concurrency", type=int, default=4, help="texts scored at once")
    calibrate.add_argument(
        "--strict",
        action="store_true",
        help="stop at the first malformed record (default: report it and skip it)",
    )
    calibrate.add_argument("--json", type=Path, metavar="PATH", help="write the figures as JSON")
    calibrate.add_argument(
        "--html", type=Path, metavar="PATH", help="write a self-contained HTML page of the figures"
    )


def _probe_parser(commands: Any, judge: argparse.ArgumentParser) -> None:
    probe = commands.add_parser(
        "probe",
        parents=[judge],
        help="ask a model about each group of a suite; compare its answers group by group",
    )
    probe.add_argument("suite", help="a YAML or JSON suite file, or 'builtin'")
    probe.add_argument("--target-base-url", required=True, help="the tested model's endpoint")
    probe.add_argument("--target-model", required=True, help="the tested model's name")
    probe.add_argument(
        "--target-api-key", help="the tested model's API key (default: $BIAS_PROBE_TARGET_API_KEY)"
    )
    probe.add_argument(
        "--target-max-tokens", type=int, help="the longest answer asked of it (default: no bound)"
    )
    probe.add_argument("--samples", type=int, default=10, help="answers per template and group")
    probe.add_argument("--concurrency", type=int, default=4, help="calls in flight at once")
    probe.add_argument("--seed", type=int, default=0, help="sample n is sent seed SEED+n")
    probe.add_argument(
        "--json", type=Path, metavar="PATH", help="write the run here; a rerun resumes from it"
    )
    probe.add_argument(
        "--html", type=Path, metavar="PATH", help="write a self-contained HTML report here"
    )


def check_output(option: str, path: Path) -> None:
    """Fail before any scoring when `path` could not be written where asked."""
    if path.is_dir():
        raise CLIError(f"{option} {path}: is a folder; give a file name")
    folder = path.parent
    if not folder.exists():
        raise CLIError(f"{option} {path}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise CLIError(f"{option} {path}: {folder} is not a folder")


def write_output(option: str, path: Path, text: str) -> None:
    """Write `text` to `path` as UTF-8, or say why it could not be (a `CLIError`)."""
    try:
        with path.open("w", encoding="utf-8", newline="\n") as file:
            file.write(text)
    except OSError as exc:
        raise CLIError(f"{option} {path}: {exc.strerror}") from exc


def scorer(args: argparse.Namespace) -> BiasScorer:
    """The bias scorer the judge options describe."""
    if args.scale <= 0:
        raise CLIError(f"--scale must be > 0, got {args.scale:g}")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise CLIError(f"--max-tokens must be at least 1, got {args.max_tokens}")
    return create_bias_scorer(
        args.model,
        base_url=args.base_url,
        api_key=api_key(args),
        scale=args.scale,
        reason="off" if args.no_reason else "inline",
        pipeline=args.pipeline,
        timeout=args.timeout,
        max_retries=args.max_retries,
        max_tokens=args.max_tokens,
    )


def api_key(args: argparse.Namespace) -> str | None:
    """The judge's key: --api-key, else $BIAS_JUDGE_API_KEY, else $OPENAI_API_KEY, else none.

    None is allowed: a local server may need no key.
    """
    key: str | None = (
        args.api_key or os.environ.get("BIAS_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY")
    )
    return key or None


def _version() -> str:
    try:
        return metadata.version("bias-gateway")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        from guard import __version__

        return f"{__version__} (not installed)"
