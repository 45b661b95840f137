"""`bias-guard`: score one text, run a JSONL dataset, calibrate on labelled texts, or probe a model.

`main` parses the arguments (`guard.cli.options`) and runs a command:
`score` (`guard.cli.score`), `eval` (`guard.cli.evaluate`, which reads its
input with `guard.cli.dataset` and shows its progress and tables with
`guard.cli.display`) or `calibrate` (`guard.cli.calibrate`, on
`guard.calibration`), or `probe` (`guard.cli.probe`, on `guard.probe`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from guard.cli import calibrate, evaluate, score
from guard.cli.options import NO_KEY, CLIError, api_key, parser
from guard.errors import GuardError, JudgeError, JudgeTimeout, JudgeUnavailable

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "score":
            return score.run(args)
        if args.command == "calibrate":
            return calibrate.run(args)
        if args.command == "probe":
            # Imported for this command only: scipy's statistics take seconds to load,
            # which every other command would wait for.
            from guard.cli import probe

            return probe.run(args)
        return evaluate.run(args)
    except CLIError as exc:
        print(f"bias-guard: error: {exc}", file=sys.stderr)
        return 2
    except JudgeError as exc:
        keyless = isinstance(exc, JudgeUnavailable | JudgeTimeout) and api_key(args) is None
        hint = f" ({NO_KEY})" if keyless else ""
        print(f"bias-guard: judge error: {exc}{hint}", file=sys.stderr)
        return 1
    except GuardError as exc:
        print(f"bias-guard: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bias-guard: interrupted", file=sys.stderr)
        return 130
