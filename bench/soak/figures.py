"""The soak's figures and its verdicts: what the requests came to, the issue's four
targets, and the harness's own checks, judged on a run's results (so a committed run
can be judged again)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from bench.harness.report import percentile
from bench.soak.traffic import KINDS, Outcome

__all__ = ["ANSWERED", "RESULTS", "checks", "summarize", "targets"]

ANSWERED = frozenset({"ok", "blocked", "upstream 500"})  # model answers whose latency counts
RESULTS = (
    "ok", "blocked", "upstream 500", "upstream cut", "client left", "unexpected", "not sent",
)  # fmt: skip
RSS_GROWTH = 0.10
LATE_MS = 250.0  # the harness's own loop this late means it, not the gateway, set the pace
P99_RATIO = 1.2


def _latencies(outcomes: Iterable[Outcome]) -> list[float]:
    return [o.latency_ms for o in outcomes if o.family == "model" and o.result in ANSWERED]


def _reads(outcomes: Iterable[Outcome]) -> list[float]:
    return [o.latency_ms for o in outcomes if o.family in ("lookup", "search", "stats")]


def summarize(
    outcomes: Sequence[Outcome], laid: Sequence[tuple[float, float, str]], window: float
) -> dict[str, Any]:
    """What the requests came to: by kind, by cycle (a burst and its gap), and the
    model answers' p99 over the first and the last `window` seconds (by start)."""
    by_kind: dict[str, Any] = {}
    for kind in KINDS:
        mine = [o for o in outcomes if o.kind == kind.name]
        timed = _latencies(mine) if kind.family == "model" else [o.latency_ms for o in mine]
        by_kind[kind.name] = {
            "sent": len(mine),
            "results": dict(Counter(o.result for o in mine)),
            "p50_ms": percentile(timed, 0.5, 1),
            "p99_ms": percentile(timed, 0.99, 1),
        }
    cycles = []
    bursts = [(start, stop) for start, stop, phase in laid if phase == "burst"]
    ends = [stop for _, stop, phase in laid if phase == "gap"]
    for index, ((start, _), end) in enumerate(zip(bursts, ends, strict=True)):
        mine = [o for o in outcomes if start <= o.started < end]
        cycles.append(
            {
                "cycle": index + 1,
                "start": start,
                "sent": len(mine),
                "results": dict(Counter(o.result for o in mine)),
                "p50_ms": percentile(_latencies(mine), 0.5, 1),
                "p99_ms": percentile(_latencies(mine), 0.99, 1),
                "reads_p99_ms": percentile(_reads(mine), 0.99, 1),
            }
        )
    end = laid[-1][1] if laid else 0.0
    first = [o for o in outcomes if o.started < window]
    last = [o for o in outcomes if o.started >= end - window]
    unexpected = Counter(f"{o.kind}: {o.detail}" for o in outcomes if o.result == "unexpected")
    return {
        "results": dict(Counter(o.result for o in outcomes)),
        "sent": len(outcomes),
        "by_kind": by_kind,
        "cycles": cycles,
        "unexpected": dict(unexpected.most_common(10)),
        "windows": {
            "seconds": window,
            "first_p99_ms": percentile(_latencies(first), 0.99, 1),
            "last_p99_ms": percentile(_latencies(last), 0.99, 1),
            "first_answers": len(_latencies(first)),
            "last_answers": len(_latencies(last)),
            "first_reads_p99_ms": percentile(_reads(first), 0.99, 1),
            "last_reads_p99_ms": percentile(_reads(last), 0.99, 1),
        },
    }


def _span(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:.0f} s"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _target(name: str, wanted: str, measured: str, met: bool | None) -> dict[str, str]:
    status = "not measured" if met is None else ("met" if met else "missed")
    return {"name": name, "wanted": wanted, "measured": measured, "status": status}


def _returns(samples: list[dict[str, Any]], field: str, name: str) -> dict[str, str]:
    """Every gap's end (and the rest after the run) against the gateway at rest before the
    load; a gap that ends with requests still in flight has not returned either."""
    before = [s for s in samples if s["phase"] == "before" and s[field] is not None]
    ends = [s for s in samples if s["gap_end"] and s[field] is not None]
    if not before or not ends:
        return _target(name, "", "no sample before the load or at a gap's end", None)
    baseline = before[0][field]
    gaps = [s for s in ends if s["phase"] != "after"]
    after = [s[field] for s in ends if s["phase"] == "after"]
    over = [s for s in ends if s[field] > baseline]
    busy = [s for s in over if s.get("client_in_flight")]
    peak = max(s[field] for s in samples if s[field] is not None)
    measured = f"{baseline:g} before the load"
    if gaps:
        values = [s[field] for s in gaps]
        measured += f"; {min(values):g}-{max(values):g} at the ends of the {len(gaps)} gaps"
    if after:
        measured += f"; {after[0]:g} once the load was over and every record final"
    measured += f"; peak {peak:g} in the bursts"
    if over:
        times = ", ".join(f"{s['t']:g} s" for s in over[:5])
        measured += f"; above it at {len(over)} ({times})"
        if busy:
            measured += f", {len(busy)} of them with requests still in flight"
    return _target(
        name, f"every gap ends at <= {baseline:g}, the value at rest", measured, not over
    )


def targets(results: dict[str, Any]) -> list[dict[str, str]]:
    """The issue's four soak targets, judged on `results` (so a committed run can be again)."""
    samples = results["samples"]
    warmup = results["plan"]["warmup_s"]
    ends = [s for s in samples if s["gap_end"] and s["t"] >= warmup]
    if len(ends) >= 2:
        base, final = ends[0], ends[-1]
        growth = final["rss_mb"] / base["rss_mb"] - 1
        peak = max(s["rss_mb"] for s in samples if s["t"] >= warmup)
        rss = _target(
            "RSS after warm-up",
            f"grows by under {RSS_GROWTH:.0%}",
            f"{base['rss_mb']:.1f} MB at {base['t']:g} s (first gap after the {warmup:.0f} s"
            f" warm-up), {final['rss_mb']:.1f} MB at {final['t']:g} s ({growth:+.1%});"
            f" peak {peak:.1f} MB",
            growth < RSS_GROWTH,
        )
    else:
        rss = _target("RSS after warm-up", f"grows by under {RSS_GROWTH:.0%}", "too short", None)
    windows = results["windows"]
    first, last = windows["first_p99_ms"], windows["last_p99_ms"]
    span = _span(windows["seconds"])
    name = f"p99 latency, last {span} vs first {span}"
    if first and last:
        end = results["phases"][-1][1]
        busy = [(t, others) for t, _, others in results["machine_cpu"][1:]]
        early = [o for t, o in busy if t <= windows["seconds"]]
        late = [o for t, o in busy if t > end - windows["seconds"]]
        p99 = _target(
            name,
            f"within {P99_RATIO:g}x",
            f"{last:g} / {first:g} ms = {last / first:.2f}x (model answers:"
            f" {windows['last_answers']} and {windows['first_answers']}; other processes'"
            f" CPU, mean: {_mean(late):.0f} % and {_mean(early):.0f} % of a core)",
            last <= P99_RATIO * first,
        )
    else:
        p99 = _target(name, f"within {P99_RATIO:g}x", "-", None)
    return [
        rss,
        _returns(samples, "fds", "open file descriptors return to their baseline between bursts"),
        _returns(samples, "tasks", "asyncio tasks return to their baseline between bursts"),
        p99,
    ]


def checks(results: dict[str, Any]) -> list[dict[str, str]]:
    """What the harness checks besides the targets: answers as expected, records final,
    and a client that kept its pace (else the figures are the client's, not the gateway's)."""
    store = results["store"]
    unexpected = results["results"].get("unexpected", 0)
    not_sent = results["results"].get("not sent", 0)
    pending = sum(n for label, n in store["statuses"].items() if label.startswith("pending"))
    lags = [s["lag_ms"] for s in results["samples"]]
    late = sum(1 for lag in lags if lag > LATE_MS)
    return [
        _target(
            "every answer is what its request should get",
            "0 unexpected",
            f"{unexpected} unexpected of {results['sent'] - not_sent} sent",
            unexpected == 0,
        ),
        _target(
            "every announced run id has a final record",
            "0 missing, 0 pending",
            f"{store['announced_without_record']} missing and {pending} pending of"
            f" {store['announced']}; settled {store['settled_s']} s after the last answer",
            store["announced_without_record"] == 0 and pending == 0,
        ),
        _target(
            "the client kept its pace",
            f"every request sent; its loop never > {LATE_MS:g} ms late",
            f"{not_sent} not sent (over {results['plan']['max_in_flight']} in flight);"
            f" loop late by up to {max(lags, default=0):g} ms, > {LATE_MS:g} ms in {late} of"
            f" {len(lags)} samples; scheduled samples skipped: {results['samples_skipped']}",
            not_sent == 0 and late == 0,
        ),
    ]
