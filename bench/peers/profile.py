"""Profile one gateway configuration under load with py-spy; print the hottest frames.

    .venv/bin/pip install py-spy
    .venv/bin/python -m bench profile --mode off --concurrency 32 [--stream] [--seconds 8]

Writes the collapsed stacks (flamegraph input) to $TMPDIR/bench-profile-*.txt
and prints the frames with the most samples, by own time and including callees.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

from bench.fakes.server import start_fake
from bench.harness.loadgen import run_wrk
from bench.harness.procs import Processes
from bench.peers.configs import Context, deploy_gateway
from bench.peers.runner import CHUNKS, chat_body


def hot_frames(
    collapsed: str, top: int
) -> tuple[list[tuple[str, int]], list[tuple[str, int]], int]:
    """(own-time frames, inclusive frames, total samples) from py-spy's `raw` output."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    return own.most_common(top), inclusive.most_common(top), total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench profile", description=__doc__)
    parser.add_argument("--mode", choices=["off", "monitor", "enforce"], default="off")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    py_spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if py_spy is None:
        print(
            "bench.peers.profile: py-spy not found; .venv/bin/pip install py-spy", file=sys.stderr
        )
        return 2
    label = f"{args.mode}-{'stream' if args.stream else 'nonstream'}-c{args.concurrency}"
    out = Path(tempfile.gettempdir()) / f"bench-profile-{label}.txt"
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp, Processes() as procs:
        work_dir = Path(tmp)
        fake = start_fake(procs, work_dir, chunks=CHUNKS)
        judge = start_fake(procs, work_dir, chunks=CHUNKS, name="judge")
        ctx = Context(procs, work_dir, fake, judge=judge)
        gateway = deploy_gateway(ctx, args.mode)
        url = gateway.server.url + "/v1/chat/completions"
        body = chat_body(args.stream)
        run_wrk(url, body, connections=args.concurrency, duration=2, work_dir=work_dir)
        spy = [py_spy, "record", "--pid", str(gateway.server.popen.pid), "--format", "raw"]
        spy += ["--duration", str(round(args.seconds)), "--rate", "250", "--output", str(out)]
        load = threading.Thread(
            target=run_wrk,
            args=(url, body),
            kwargs={
                "connections": args.concurrency,
                "duration": args.seconds + 1,
                "work_dir": work_dir,
            },
        )
        load.start()
        try:
            subprocess.run(spy, check=True, capture_output=True, timeout=args.seconds + 60)
        finally:
            load.join(timeout=args.seconds + 60)
    own, inclusive, total = hot_frames(out.read_text(), args.top)
    print(f"# {label}: {total} samples, stacks in {out}")
    for title, rows in (("own time", own), ("including callees", inclusive)):
        print(f"\n## {title}")
        for frame, count in rows:
            print(f"{100 * count / total:5.1f}%  {frame}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
