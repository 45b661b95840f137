"""What reading a stream's text after every event costs.

Windowed enforcing (`stream_policy: windowed`) offers the answer's text so far
to the window splitter after every event. This times one chat answer of
2,000 to 100,000 characters, in 4-character pieces, read event by event by
the surface's reader alone, and read with the splitter offered the texts after
every event (800-character windows), as `gateway.proxy.windowed` does. One
process, no servers; prints a table. Each figure is the best of three runs.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from gateway.proxy.surfaces.chat import ChatReader
from gateway.scoring.windows import WindowSplitter

__all__ = ["main", "measure"]

SIZES = (2_000, 10_000, 50_000, 100_000)
PIECE = 4  # characters an event: about a token
SENTENCE = "Engineers write code, and some of them write it well. "


def _events(chars: int) -> list[str]:
    text = (SENTENCE * (chars // len(SENTENCE) + 1))[:chars]
    return [
        json.dumps(
            {
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": text[at : at + PIECE]}}],
            }
        )
        for at in range(0, chars, PIECE)
    ]


def _best(run: Callable[[], None], times: int = 3) -> float:
    best = float("inf")
    for _ in range(times):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def measure(chars: int) -> tuple[int, float, float, int]:
    """Events, seconds to read them, seconds to read them with windows, windows closed."""
    events = _events(chars)
    closed = 0

    def read() -> None:
        reader = ChatReader()
        for data in events:
            reader.add(None, data)

    def read_with_windows() -> None:
        nonlocal closed
        reader = ChatReader()
        splitter = WindowSplitter(window_chars=800, context_chars=200, margin=200)
        closed = 0
        for count, data in enumerate(events, 1):
            reader.add(None, data)
            if splitter.offer(reader.texts(), count) is not None:
                closed += 1

    return len(events), _best(read), _best(read_with_windows), closed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench stream_texts", description=__doc__)
    parser.parse_args(argv)  # no options: it answers --help and refuses unknown arguments
    print("| characters | events | read | read, windows offered each event | windows |")
    print("|---|---|---|---|---|")
    for chars in SIZES:
        events, read, windowed, closed = measure(chars)
        print(
            f"| {chars:,} | {events:,} | {read * 1000:.1f} ms | {windowed * 1000:.1f} ms"
            f" | {closed} |"
        )


if __name__ == "__main__":
    main()
