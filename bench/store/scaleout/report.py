"""The scale-out report: both parts' tables and whether each target was met."""

from __future__ import annotations

from bench.harness.report import fmt, table
from bench.store.scaleout.enqueue import EnqueueCell
from bench.store.scaleout.plan import (
    CALLS_PER_SCORING,
    CONFIGS,
    ENQUEUE_TARGET_MS,
    SCALING_TARGET,
    Plan,
)
from bench.store.scaleout.scoring import ScoringCell


def _verdict(values: list[bool]) -> str:
    if not values:
        return "not measured"
    if all(values):
        return "met"
    if not any(values):
        return "missed"
    return f"met in {sum(values)} of {len(values)} rounds"


def _by(cells: list[EnqueueCell], config: str, round_: int) -> EnqueueCell | None:
    return next((c for c in cells if c.config == config and c.round == round_), None)


def _slices(values: list[float], digits: int) -> str:
    return ", ".join(f"{value:.{digits}f}" for value in values)


def enqueue_section(cells: list[EnqueueCell], plan: Plan) -> tuple[list[str], list[list[str]]]:
    in_flight = 8 + plan.c1_slices + 32 * plan.c32_slices
    lines = [
        "## 1. Enqueue cost on the request path",
        "",
        "`bias-gateway serve`, one worker, non-streaming chat completions to the fast fake;"
        " in each round the three gateways run side by side on fresh stores and take turns,"
        f" slice by slice, after a {plan.warmup:g} s warm-up each. c=1: `wrk -c1`"
        f" (sequential), {plan.c1_slices} slices of {plan.c1_seconds:g} s, and a paced probe"
        f" at {plan.paced_rate:g} requests/s, {plan.paced_slices} slices of"
        f" {plan.paced_seconds:g} s; c=32: `wrk -c32`, {plan.c32_slices} slices of"
        f" {plan.c32_seconds:g} s. Latencies are the medians of the slices' (ms). CPU in % of"
        " one core during the c=32 slices (`other`: busy CPU of no process of the run);"
        " `CPU ms/req`: the gateway's CPU per request at c=32. `enqueued`: pending work rows"
        " once the gateway stopped, of the requests wrk and the probe counted (wrk does not"
        f" count the requests in flight when it stops: up to {in_flight} more rows than"
        " requests is every request enqueued). `non-200`: chat requests the gateway"
        " answered otherwise, from its access log.",
        "",
    ]
    rows = [
        [
            str(c.round),
            c.config,
            fmt(c.c1_ms("p50_ms"), 3),
            fmt(c.c1_ms("p90_ms"), 3),
            fmt(c.c1_ms("p99_ms"), 3),
            _slices([load.p50_ms for load in c.c1], 3),
            f"{sum(load.requests for load in c.c1):,}",
            fmt(c.paced_ms("p50_ms"), 3),
            fmt(c.paced_ms("p99_ms"), 3),
            fmt(c.c32_rps, 0),
            _slices([load.rps for load in c.c32], 0),
            fmt(_cpu_per_request(c), 3),
            " / ".join(
                fmt(c.cpu_mean(k), 0) for k in ("gateway", "postgres", "fake", "wrk", "other")
            ),
            f"{c.enqueued:,} of {c.sent:,}",
            ", ".join(f"{n} x {status}" for status, n in sorted(c.failed.items())) or "0",
        ]
        for c in cells
    ]
    lines += table([
            "round", "config", "c=1 p50", "c=1 p90", "c=1 p99", "c=1 p50 per slice",
            "c=1 requests", "paced p50", "paced p99", "c=32 req/s", "c=32 req/s per slice",
            "CPU ms/req", "CPU gateway / PG / fake / wrk / other", "enqueued", "non-200",
        ], rows)  # fmt: skip
    overhead_rows = []
    targets = []
    for engine in CONFIGS[1:]:
        met = []
        deltas = []
        for round_ in range(1, plan.rounds + 1):
            off, on = _by(cells, "off", round_), _by(cells, engine, round_)
            if off is None or on is None:
                continue
            delta = on.c1_ms("p50_ms") - off.c1_ms("p50_ms")
            deltas.append(f"{delta:+.3f}")
            met.append(delta <= ENQUEUE_TARGET_MS)
            cpu_on, cpu_off = _cpu_per_request(on), _cpu_per_request(off)
            overhead_rows.append(
                [
                    str(round_),
                    engine,
                    f"{delta:+.3f}",
                    f"{on.paced_ms('p50_ms') - off.paced_ms('p50_ms'):+.3f}",
                    f"{on.c32_rps / off.c32_rps:.2f}" if off.c32_rps else "-",
                    f"{cpu_on - cpu_off:+.3f}" if cpu_on and cpu_off else "-",
                ]
            )
        targets.append(
            [
                f"enqueue, {engine}",
                f"p50(monitor external) - p50(off) <= {ENQUEUE_TARGET_MS} ms at c=1",
                ", ".join(deltas) + " ms" if deltas else "-",
                _verdict(met),
            ]
        )
    lines += [
        "",
        "Monitor (external) minus off, same round:",
        "",
        *table([
                "round", "engine", "c=1 p50 ms (wrk)", "paced p50 ms", "c=32 req/s vs off",
                "c=32 gateway CPU ms/req",
            ], overhead_rows),
    ]  # fmt: skip
    return lines, targets


def _cpu_per_request(cell: EnqueueCell) -> float | None:
    """The gateway's CPU per request at c=32, in ms (its process, writer thread included)."""
    cpu = cell.cpu_mean("gateway")
    rps = cell.c32_rps
    return cpu / 100 / rps * 1000 if cpu is not None and rps else None


def scoring_section(cells: list[ScoringCell], plan: Plan) -> tuple[list[str], list[list[str]]]:
    lines = [
        "## 2. Scoring throughput, one and two scorers (PostgreSQL)",
        "",
        f"{plan.items} pending items enqueued through a gateway, then the scorers started at"
        f" once; judge {plan.judge_latency:g} s ± {plan.judge_jitter:.0%} a call,"
        f" {CALLS_PER_SCORING} calls a scoring, `judge.max_concurrency: {plan.concurrency}`"
        " and `judge.cache_size: 0` per scorer. `steady`: scorings/s between the 10th and"
        " 90th percentile completions; `overall`: all items over first claim to last"
        " completion. `in flight`: each scorer's mean scorings in flight over the steady"
        " window (from its /metrics every 0.25 s). CPU in % of one core, from the scorers"
        " being ready to the last completion.",
        "",
    ]
    rows = []
    for c in cells:
        w = c.watched
        cpu = " / ".join(
            fmt(w.cpu.get(k), 0)
            for k in [*(f"scorer {i + 1}" for i in range(c.scorers)), "judge", "postgres", "other"]
        )
        rows.append(
            [
                str(c.round),
                str(c.scorers),
                fmt(c.steady_rate, 2),
                fmt(c.overall_rate, 2),
                fmt(c.span, 1),
                " + ".join(str(n) for n in w.claimed),
                " / ".join(fmt(v, 1) for v in c.mean_in_flight()) or "-",
                str(w.judge.get("peak_in_flight", "-")),
                str(w.judge.get("judge_calls", "-")),
                fmt(w.judge.get("service_ms_p50"), 0),
                cpu,
                ", ".join(f"{k} {v}" for k, v in sorted(w.statuses.items())),
            ]
        )
    lines += table([
            "round", "scorers", "steady scorings/s", "overall scorings/s", "first claim to done s",
            "claimed each", "in flight each", "judge peak in flight", "judge calls",
            "judge call p50 ms", "CPU scorers / judge / PG / other", "statuses",
        ], rows)  # fmt: skip
    ratio_rows = []
    met = []
    for round_ in range(1, plan.rounds + 1):
        pair = {c.scorers: c for c in cells if c.round == round_}
        if 1 not in pair or 2 not in pair:
            continue
        one, two = pair[1], pair[2]
        steady = two.steady_rate / one.steady_rate if one.steady_rate and two.steady_rate else None
        overall = (
            two.overall_rate / one.overall_rate if one.overall_rate and two.overall_rate else None
        )
        if steady is not None:
            met.append(steady >= SCALING_TARGET)
        ratio_rows.append(
            [
                str(round_),
                fmt(one.steady_rate, 2),
                fmt(two.steady_rate, 2),
                f"{fmt(steady, 2)}x",
                f"{fmt(overall, 2)}x",
            ]
        )
    lines += [
        "",
        *table(
            ["round", "1 scorer steady/s", "2 scorers steady/s", "ratio steady", "ratio overall"],
            ratio_rows,
        ),
    ]
    measured = ", ".join(row[3] for row in ratio_rows) or "-"
    target = [
        "scaling, 2 scorers",
        f">= {SCALING_TARGET}x one scorer's scorings/s (steady)",
        measured,
        _verdict(met),
    ]
    return lines, [target]


def render(
    date: str,
    source: str,
    machine: list[str],
    enqueue: list[EnqueueCell],
    scoring: list[ScoringCell],
    plan: Plan,
) -> str:
    lines = [
        f"# Scale-out: enqueue cost and scorer scaling ({date})",
        "",
        "`python -m bench scaleout` (`bench/store/scaleout/run.py` says what runs and why). Code: "
        f"{source}. The machine is shared and noisy (±20 % between runs): the configurations"
        " take turns and every round is shown.",
        "",
        *(f"- {line}" for line in machine),
        "",
    ]
    targets: list[list[str]] = []
    if enqueue:
        section, found = enqueue_section(enqueue, plan)
        lines += [*section, ""]
        targets += found
    if scoring:
        section, found = scoring_section(scoring, plan)
        lines += [*section, ""]
        targets += found
    lines += ["## Targets", "", *table(["target", "wanted", "measured", ""], targets), ""]
    return "\n".join(lines)
