"""Issue 30's attack suite: how often an answer gets past enforce (see `bench.attacks`).

python -m bench attacks [--judge demo|gullible|both] [--surfaces chat,chat-stream]
[--limit N] [--json PATH] [--out PATH] [--corpus PATH]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

from bench.attacks import corpus
from bench.attacks.report import as_json, markdown
from bench.attacks.run import JUDGES, parse_surfaces, run
from bench.harness.machine import machine_line, source_note


def _progress(line: str) -> None:
    print(f"\rbench attacks: {line}   ", end="", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench attacks", description=__doc__)
    parser.add_argument("--judge", choices=[*JUDGES, "both"], default="both")
    parser.add_argument(
        "--surfaces", default="chat,chat-stream",
        help="comma-separated: chat, responses, completions, messages, each with -stream"
        " for its stream; or all (chat,chat-stream)",
    )  # fmt: skip
    parser.add_argument("--limit", type=int, default=None, help="at most N entries per family")
    parser.add_argument("--concurrency", type=int, default=4, help="requests at once (4)")
    parser.add_argument("--corpus", type=Path, default=None,
                        help="a JSON-lines corpus instead of testkit/attacks")  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="write the markdown here too")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        surfaces = parse_surfaces(args.surfaces)
    except ValueError as exc:
        parser.error(str(exc))
    entries = corpus.from_file(args.corpus) if args.corpus else corpus.from_tests()
    entries = corpus.limited(entries, args.limit)
    judges = list(JUDGES) if args.judge == "both" else [args.judge]
    meta = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python -m bench attacks "
        + shlex.join(argv if argv is not None else sys.argv[1:]),
        "commit": source_note(),  # before the run: the code the gateways start with
        "machine": machine_line(),
        "corpus": f"{args.corpus or 'testkit/attacks'}: {len(entries)} entries"
        f" ({sum(entry.attack for entry in entries)} attacks,"
        f" {sum(entry.control() is not None for entry in entries)} with a plain text)",
        "surfaces": [surface.name for surface in surfaces],
    }
    print(f"bench attacks: {meta['machine']}; {meta['commit']}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="bench-attacks-") as work:
        cells = run(entries, judges, surfaces, Path(work), concurrency=args.concurrency,
                    progress=_progress)  # fmt: skip
    print(file=sys.stderr)
    text = markdown(meta, cells)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    if args.json is not None:
        args.json.write_text(json.dumps(as_json(meta, cells), indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
