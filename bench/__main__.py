"""`python -m bench <scenario> [options]`: run one scenario; with no scenario, list them.

Each scenario is a module of one of `bench`'s packages with a `main(argv)` of its own;
this passes it the arguments after the scenario's name, so `python -m bench calls
--requests 50` calls `bench.micro.calls.main(["--requests", "50"])`. A scenario's line
in the list is the first line of its module's docstring, read from the file: listing
imports none of them.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

# Scenario name: the module whose `main(argv)` runs it.
SCENARIOS = {
    "peers": "bench.peers.run",
    "calls": "bench.micro.calls",
    "profile": "bench.peers.profile",
    "scaleout": "bench.store.scaleout.run",
    "judge_lanes": "bench.judge.lanes",
    "judge_shedding": "bench.judge.shedding",
    "judge_transport": "bench.judge.transport",
    "stream_lanes": "bench.judge.stream_lanes",
    "long_answer": "bench.streams.long_answer",
    "prejudge": "bench.streams.prejudge",
    "large_answer": "bench.streams.large_answer",
    "stream_texts": "bench.micro.stream_texts",
    "log_pipeline": "bench.micro.log_pipeline",
    "outage": "bench.outage.run",
    "reload": "bench.outage.reload",
    "soak": "bench.soak.run",
    "store_commit": "bench.store.commit",
    "store_drivers": "bench.store.drivers.run",
    "store_queries": "bench.store.queries.run",
    "integrity": "bench.micro.integrity",
    "tamper_corpus": "bench.attacks.tamper_corpus",
    "tamper_model": "bench.attacks.tamper_model",
    "attacks": "bench.attacks.__main__",
    "probe": "bench.micro.probe",
    "live_probe": "bench.judge.live_probe",
    "monitor_overhead": "bench.peers.monitor_overhead",
    "reviews": "bench.store.reviews",
    "canary": "bench.judge.canary",
}

# Servers the scenarios start, which also run alone; not scenarios themselves.
FAKES = ("bench.fakes.server", "bench.fakes.paced")

_HERE = Path(__file__).resolve().parent


def summary(module: str) -> str:
    """The first line of `module`'s docstring, read from its file."""
    path = _HERE.joinpath(*module.split(".")[1:]).with_suffix(".py")
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return docstring.partition("\n")[0]


def listing() -> str:
    width = max(len(name) for name in SCENARIOS)
    lines = [
        "usage: python -m bench <scenario> [options]",
        "       python -m bench <scenario> --help   (the scenario's own options)",
        "",
        "scenarios:",
        *(f"  {name:<{width}}  {summary(module)}" for name, module in SCENARIOS.items()),
        "",
        "The fakes the scenarios start run alone too: "
        + ", ".join(f"python -m {fake}" for fake in FAKES)
        + ".",
        "How to run each, and what it measures: bench/README.md.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print(listing())
        return 0
    if not args:
        print(listing(), file=sys.stderr)
        print("\npython -m bench: name a scenario", file=sys.stderr)
        return 2
    name, rest = args[0], args[1:]
    if name not in SCENARIOS:
        print(
            f"python -m bench: no scenario {name!r}; python -m bench --help lists them",
            file=sys.stderr,
        )
        return 2
    code = importlib.import_module(SCENARIOS[name]).main(rest)
    # Some scenarios return an exit status, the others None once done.
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
