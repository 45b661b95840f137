"""The gateway next to a direct call and its peers, then with a realistic judge.

`python -m bench peers` (`make bench`) runs every configuration and workload of the
CPU scenario, then the realistic scenario (`bench.peers.realistic`), and writes
bench/results/; `--realistic` or `--no-realistic` runs one of the two.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from bench.harness.loadgen import WrkMissing
from bench.harness.machine import machine_line
from bench.harness.paths import RESULTS
from bench.harness.procs import stop_on_signals
from bench.peers import realistic
from bench.peers.report import markdown, write_all
from bench.peers.runner import CHUNKS, Plan, run_all
from bench.peers.targets import evaluate, realistic_targets


def _versions() -> dict[str, str]:
    found = {}
    for name in ("bias-gateway", "starlette", "uvicorn", "aiohttp", "litellm", "uvloop"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def _source() -> dict[str, object]:
    """The commit measured, and the files that differed from it (read-only git calls)."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.strip()

    changed = [line[3:] for line in git("status", "--porcelain").splitlines()]
    return {
        "commit": git("rev-parse", "--short", "HEAD") or "unknown",
        "uncommitted": [path for path in changed if path.startswith(("gateway/", "guard/"))],
    }


def _meta(now: datetime.datetime, source: dict[str, object]) -> dict[str, object]:
    """When, where and what was measured: the same in both scenarios' results."""
    return {
        "date": now.strftime("%Y-%m-%d-%H%M"),
        "machine": machine_line(),
        "versions": _versions(),
        "source": source,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench peers", description=__doc__)
    parser.add_argument("--duration", type=float, default=8.0, help="seconds per cell (8)")
    parser.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds per cell (2)")
    parser.add_argument("--ttft", type=float, default=3.0, help="seconds of TTFT probe (3)")
    parser.add_argument(
        "--paced-rate", type=float, default=200.0, help="requests/s of the paced c=1 probe (200)"
    )
    parser.add_argument("--only", action="append", help="run only this config (repeatable)")
    parser.add_argument(
        "--realistic",
        action="store_true",
        help="run only the realistic scenario (slow, rate-limited judge; paced open loop)",
    )
    parser.add_argument("--no-realistic", action="store_true", help="run only the CPU scenario")
    parser.add_argument(
        "--realistic-duration", type=float, default=30.0, help="seconds of load per cell (30)"
    )
    parser.add_argument(
        "--realistic-rates",
        default="20,100,300",
        help="comma-separated request rates of the realistic scenario (20,100,300)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    parser.add_argument(
        "--gateway-log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="the gateways' --log-level (info, the default, writes an access line per request)",
    )
    args = parser.parse_args(argv)
    stop_on_signals()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    plan = Plan(
        duration=args.duration,
        warmup=args.warmup,
        ttft_duration=args.ttft,
        paced_rate=args.paced_rate,
        only=frozenset(args.only) if args.only else None,
        gateway_log_level=args.gateway_log_level,
    )
    now = datetime.datetime.now()
    source = _source()  # before the run: that is the code the gateways start with
    if args.realistic:
        return _realistic(args, args.out, now, source)
    try:
        results = run_all(plan)
    except WrkMissing as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bench: interrupted; every process it started was stopped", file=sys.stderr)
        return 130
    results["meta"] = {
        **_meta(now, source),
        "chunks": CHUNKS,
        "plan": {
            "duration": plan.duration,
            "warmup": plan.warmup,
            "ttft_duration": args.ttft,
            "paced_rate": plan.paced_rate,
            "paced_duration": plan.paced_duration,
            "gateway_log_level": plan.gateway_log_level,
        },
        "environment": {
            name: value for name, value in os.environ.items() if name.startswith(("OTEL_", "BIAS_"))
        },
    }
    results["targets"] = [target.to_dict() for target in evaluate(results)]
    paths = write_all(results, args.out)
    print(markdown(results))
    print("wrote " + ", ".join(str(path) for path in paths))
    if args.no_realistic:
        return 0
    return _realistic(args, args.out, now, source)


def _realistic(
    args: argparse.Namespace, out: Path, now: datetime.datetime, source: dict[str, object]
) -> int:
    try:
        rates = tuple(float(rate) for rate in args.realistic_rates.split(","))
    except ValueError:
        print(f"bench: --realistic-rates: not numbers: {args.realistic_rates}", file=sys.stderr)
        return 2
    plan = realistic.RealisticPlan(rates=rates, duration=args.realistic_duration)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-realistic-") as work:
            results = realistic.run_realistic(plan, Path(work))
    except KeyboardInterrupt:
        print("bench: interrupted; every process it started was stopped", file=sys.stderr)
        return 130
    results["meta"] = _meta(now, source)
    results["targets"] = [target.to_dict() for target in realistic_targets(results)]
    paths = realistic.write_results(results, out)
    print(realistic.markdown(results))
    print("wrote " + ", ".join(str(path) for path in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
