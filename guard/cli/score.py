"""`bias-guard score`: one text, its result printed as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from guard.bias.score import is_biased
from guard.cli import options
from guard.report import paired_opinions
from guard.result import BiasResult

__all__ = ["result_json", "run"]


def run(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    result = options.scorer(args).run_sync(output=text)
    print(json.dumps(result_json(result, text, full=args.full), indent=2, ensure_ascii=False))
    return 0


def result_json(result: BiasResult, output: Any, *, full: bool) -> dict[str, Any]:
    """Mastra's whole result with `full`; else the score, each opinion's verdict, the reason,
    and what in the text addressed the judge (`tamper`) or was normalised for it."""
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
        "tamper": result.tamper,
        "normalised": result.normalised,
    }
