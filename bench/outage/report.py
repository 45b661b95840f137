"""The figures of a `bench.outage.run` run, its targets, and its markdown report."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import asdict
from typing import Any

from bench.harness.report import fmt, percentile, table
from bench.outage.load import Request, Sample
from bench.outage.plan import Run

__all__ = ["PHASES", "figures", "render", "targets"]

PHASES = ("before", "during", "after")
STEADY_MARGIN = 5.0  # seconds: a monitor request sent this long before the stop should be final


def _phase(at: float, marks: dict[str, float]) -> str:
    if at < marks["halt"]:
        return "before"
    return "during" if at < marks["resumed"] else "after"


def _latencies(requests: list[Request], marks: dict[str, float]) -> dict[str, dict[str, Any]]:
    """p50/p99 of the answered requests' latency (ms) by phase, per mode and all."""
    table: dict[str, dict[str, Any]] = {}
    for phase in PHASES:
        row: dict[str, Any] = {}
        for mode in ("monitor", "enforce", "all"):
            chosen = [
                r.latency_ms
                for r in requests
                if r.latency_ms is not None
                and r.error is None
                and _phase(r.sent, marks) == phase
                and mode in (r.mode, "all")
            ]
            row[mode] = {
                "n": len(chosen),
                "p50_ms": percentile(chosen, 0.5, 1),
                "p99_ms": percentile(chosen, 0.99, 1),
            }
        table[phase] = row
    return table


def _process_figures(samples: list[Sample], marks: dict[str, float]) -> dict[str, Any]:
    buffered = [s.buffered for s in samples if s.buffered is not None]
    dropped = next((s.dropped for s in reversed(samples) if s.ready is not None), {})
    during = [s for s in samples if marks["halted"] <= s.at < marks["resumed"]]
    back = next(
        (s.at - marks["resumed"] for s in samples if s.at >= marks["resumed"] and s.ready == 200),
        None,
    )
    in_flight = [s.in_flight for s in samples if s.in_flight is not None and s.at < marks["halt"]]
    steady = [s.buffered for s in samples if s.buffered is not None and s.at < marks["halt"]]
    return {
        "buffer_peak": max(buffered, default=None),
        "buffer_peak_before": max(steady, default=None),
        "buffer_last": buffered[-1] if buffered else None,
        "dropped": {reason: int(count) for reason, count in dropped.items()},
        "readyz_during": dict(Counter(str(s.ready) for s in during)),
        "readyz_200_after_s": None if back is None else round(back, 1),
        "scorings_in_flight_peak_before": max(in_flight, default=None),
        "samples": len(samples),
    }


def figures(run: Run) -> dict[str, Any]:
    """Every figure of the report, as JSON-ready values."""
    plan, marks, requests = run.plan, run.marks, run.traffic.requests
    first_final = run.poller.first_final
    statuses = run.poller.statuses
    resumed = marks["resumed"]
    answered = [r for r in requests if r.status == 200]
    errors = [r for r in requests if r.error is not None]
    announced: dict[str, Request] = {}
    repeated = 0
    for request in requests:
        if request.run_id is None:
            continue
        repeated += request.run_id in announced
        announced[request.run_id] = request
    missing = [run_id for run_id in announced if run_id not in statuses]
    not_final_end = [run_id for run_id in announced if run_id not in first_final]
    deadline = resumed + plan.settle
    not_final_at_settle = [
        run_id for run_id in announced if first_final.get(run_id, float("inf")) > deadline
    ]
    all_final = None if not_final_end else max((first_final[i] for i in announced), default=0.0)
    sent_before = [i for i, r in announced.items() if r.sent < resumed]
    backlog_final = (
        None
        if any(i not in first_final for i in sent_before)
        else max((first_final[i] for i in sent_before), default=resumed)
    )
    caught_up = [i for i in sent_before if first_final.get(i, -1.0) > resumed]
    steady = [
        r
        for r in announced.values()
        if r.mode == "monitor" and r.sent < marks["halt"] - STEADY_MARGIN
    ]
    steady_final = [r for r in steady if first_final.get(r.run_id or "", 1e9) < marks["halt"]]
    lags = [first_final[r.run_id or ""] - r.sent for r in steady_final]
    pending_before = [p.pending for p in run.poller.polls if p.at < marks["halt"]]
    processes = {name: _process_figures(s, marks) for name, s in run.sampler.samples.items()}
    dropped_total = sum(sum(p["dropped"].values()) for p in processes.values())
    lates = [r.late for r in requests]
    found: dict[str, Any] = {
        "plan": asdict(plan),
        "marks": {name: round(value, 2) for name, value in marks.items()},
        "outage_s": round(resumed - marks["halt"], 2),
        "stop_s": round(marks["halted"] - marks["halt"], 2),
        "start_s": round(resumed - marks["resume"], 2),
        "sent": len(requests),
        "sent_by_phase": dict(Counter(_phase(r.sent, marks) for r in requests)),
        "offered_rate": (
            round((len(requests) - 1) / (requests[-1].sent - requests[0].sent), 1)
            if len(requests) > 1
            else None
        ),
        "late_p99_ms": percentile([x * 1000 for x in lates], 0.99, 1),
        "late_max_ms": round(max(lates, default=0.0) * 1000, 1),
        "answered_200": len(answered),
        "client_errors": len(errors),
        "errors_by_kind": dict(Counter(r.error for r in errors)),
        "errors_by_phase": dict(Counter(_phase(r.sent, marks) for r in errors)),
        "run_ids_announced": len(announced),
        "run_ids_repeated": repeated,
        "records_missing": len(missing),
        "missing_examples": missing[:5],
        "not_final_at_settle": len(not_final_at_settle),
        "not_final_at_end": len(not_final_end),
        "duplicate_rows": sum(n - 1 for n in run.duplicates.values()),
        "rows": len(statuses),
        "rows_not_announced": len(set(statuses) - set(announced)),
        "statuses": dict(Counter(statuses.get(i, "missing") for i in announced)),
        "all_final_after_restart_s": None if all_final is None else round(all_final - resumed, 1),
        "backlog_final_after_restart_s": (
            None if backlog_final is None else round(max(0.0, backlog_final - resumed), 1)
        ),
        "backlog_records": len(caught_up),
        "backlog_rate": (
            round(len(caught_up) / (backlog_final - resumed), 1)
            if backlog_final is not None and backlog_final > resumed
            else None
        ),
        "buffer_peak_total": sum(p["buffer_peak"] or 0 for name, p in processes.items()),
        "dropped_total": int(dropped_total),
        "processes": processes,
        "latency": _latencies(requests, marks),
        "steady": {
            "monitor_sent": len(steady),
            "monitor_final_before_stop": len(steady_final),
            "lag_p50_s": percentile(lags, 0.5, 1),
            "lag_p99_s": percentile(lags, 0.99, 1),
            "pending_rows_mean": round(statistics.fmean(pending_before), 1)
            if pending_before
            else None,
            "pending_rows_max": max(pending_before, default=None),
        },
        "db_polls": len(run.poller.polls),
        "db_polls_failed": run.poller.failed,
        "cpu": run.cpu,
        "timeline": {
            "polls": [[round(p.at, 2), p.rows, p.pending] for p in run.poller.polls],
            **{
                name: [[round(x.at, 2), x.ready, x.buffered] for x in samples]
                for name, samples in run.sampler.samples.items()
            },
        },
        "judge": run.judge,
        "logs": run.logs,
    }
    found["targets"] = targets(found)
    return found


def targets(found: dict[str, Any]) -> list[dict[str, str]]:
    settle = found["plan"]["settle"]
    errors = found["client_errors"]
    lost = found["records_missing"] + found["dropped_total"]
    kinds = ", ".join(f"{k}: {v}" for k, v in found["errors_by_kind"].items())
    final_s = found["all_final_after_restart_s"]
    return [
        {
            "target": "client-visible errors caused by the store",
            "wanted": "0",
            "measured": f"{errors} of {found['sent']} (every error counted, whatever its cause)"
            + (f": {kinds}" if kinds else ""),
            "status": "met" if errors == 0 else "missed",
        },
        {
            "target": "lost records",
            "wanted": "0",
            "measured": f"{found['records_missing']} of {found['run_ids_announced']} run ids"
            f" without a row, {found['dropped_total']} counted dropped,"
            f" {found['duplicate_rows']} duplicate rows",
            "status": "met" if lost == 0 and found["duplicate_rows"] == 0 else "missed",
        },
        {
            "target": f"every run id final within {settle:g} s of the restart",
            "wanted": f"0 not final at {settle:g} s",
            "measured": f"{found['not_final_at_settle']} not final at {settle:g} s; all final "
            + (f"{final_s} s after the restart" if final_s is not None else "never (by the limit)"),
            "status": "met" if found["not_final_at_settle"] == 0 else "missed",
        },
    ]


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{key} {value}" for key, value in sorted(counts.items())) or "-"


def render(date: str, source: str, machine: list[str], found: dict[str, Any]) -> str:
    plan, marks = found["plan"], found["marks"]
    steady, judge = found["steady"], found["judge"]
    lines = [
        f"# A PostgreSQL outage under load ({date})",
        "",
        f"`python -m bench outage` (`bench/outage/run.py` says what runs and why). Code: {source}.",
        "",
        *(f"- {line}" for line in machine),
        f"- load: {plan['rate']:g} req/s open loop (offered {fmt(found['offered_rate'], 1)}; a"
        f" send late by up to {fmt(found['late_max_ms'], 1)} ms, p99 {fmt(found['late_p99_ms'], 1)}"
        " ms), alternating monitor and enforce keys, whole and streamed answers, two gateways;"
        f" upstream first byte {plan['ttft']:g} s then {plan['chunks']} chunks"
        f" {plan['chunk_interval'] * 1000:g} ms apart; judge {plan['judge_latency']:g} s ±"
        f" {plan['jitter'] * 100:g} % a call, `judge.max_concurrency: {plan['max_concurrency']}`",
        f"- timeline (s from the first request): PostgreSQL stopped at {marks['halt']:g}"
        f" (`pg_ctl stop` took {found['stop_s']:g} s), started at {marks['resume']:g}, accepting"
        f" at {marks['resumed']:g} (the restart; {found['outage_s']:g} s after the stop); load"
        f" stopped at {marks['stopped']:g}; polling ended at {marks['settled']:g}",
        "",
        "## What the clients saw",
        "",
        *table(
            ["requests sent", "by phase", "answered 200", "client-visible errors", "by kind"],
            [
                [
                    fmt(found["sent"], 1),
                    _counts(found["sent_by_phase"]),
                    fmt(found["answered_200"], 1),
                    fmt(found["client_errors"], 1),
                    _counts(found["errors_by_kind"]),
                ]
            ],
        ),
        "",
        "Latency of the answered requests, ms, by when they were sent (during: from the stop"
        " to the restart):",
        "",
    ]
    rows = []
    for phase in PHASES:
        row = found["latency"][phase]
        cells = [phase, fmt(row["all"]["n"], 1)]
        for mode in ("monitor", "enforce", "all"):
            cells += [fmt(row[mode]["p50_ms"], 1), fmt(row[mode]["p99_ms"], 1)]
        rows.append(cells)
    lines += table(["phase", "answered", "monitor p50", "monitor p99", "enforce p50", "enforce p99",
         "all p50", "all p99"], rows)  # fmt: skip
    lines += ["", "## What the store kept", ""]
    lines += table(["run ids announced", "records missing", f"not final at {plan['settle']:g} s",
         "duplicate rows", "final statuses", "restart to all final s",
         "restart to the outage's backlog final s", "backlog records", "backlog scored/s"], [[
            fmt(found["run_ids_announced"], 1), fmt(found["records_missing"], 1),
            fmt(found["not_final_at_settle"], 1), fmt(found["duplicate_rows"], 1),
            _counts(found["statuses"]), fmt(found["all_final_after_restart_s"], 1),
            fmt(found["backlog_final_after_restart_s"], 1), fmt(found["backlog_records"], 1),
            fmt(found["backlog_rate"], 1),
        ]])  # fmt: skip
    lines += [
        "",
        f"Each process, from its `/metrics` and `/readyz` every {plan['sample_interval']:g} s:",
        "",
    ]
    proc_rows = []
    for name, p in found["processes"].items():
        logs = found["logs"].get(name, {})
        proc_rows.append(
            [
                name,
                fmt(p["buffer_peak"], 0),
                fmt(p["buffer_peak_before"], 0),
                _counts(p["dropped"]),
                _counts(p["readyz_during"]),
                fmt(p["readyz_200_after_s"], 1),
                f"{logs.get('store_unavailable', '-')} / {logs.get('store_back', '-')}"
                f" / {logs.get('errors', '-')}",
            ]
        )
    lines += table(["process", "bias_store_buffered_records peak", "its peak before the stop",
         "bias_store_records_dropped_total",
         "/readyz during the outage", "/readyz 200 again after the restart, s",
         "log: store unavailable / back / errors"], proc_rows)  # fmt: skip
    lines += [
        "",
        "## Scoring in the steady state (before the stop)",
        "",
        f"Monitor requests sent more than {STEADY_MARGIN:g} s before the stop:"
        f" {steady['monitor_sent']}, of which {steady['monitor_final_before_stop']} were"
        f" final before it; from the request to its final record p50 {fmt(steady['lag_p50_s'], 1)}"
        f" s, p99 {fmt(steady['lag_p99_s'], 1)} s. Pending rows in the database: mean"
        f" {fmt(steady['pending_rows_mean'], 1)}, max {fmt(steady['pending_rows_max'], 1)}."
        " The judge"
        f" answered {fmt(judge.get('judge_calls'), 1)} calls in the run (p50"
        f" {fmt(judge.get('service_ms_p50'), 0)} ms, peak {fmt(judge.get('peak_in_flight'), 1)} in"
        f" flight, {fmt(judge.get('rate_limited'), 1)} 429s); the scorer's peak of scorings in"
        " flight before the stop: "
        f"{fmt(found['processes'].get('scorer', {}).get('scorings_in_flight_peak_before'), 0)}.",
        "",
        "CPU, % of one core (other: busy CPU of no process of the run):",
        "",
    ]
    names = list(next(iter(found["cpu"].values()), {}))
    lines += table(
        ["phase", *names],
        [[phase, *(fmt(cpu.get(n), 0) for n in names)] for phase, cpu in found["cpu"].items()],
    )
    lines += ["", "## Targets", ""]
    lines += table(
        ["target", "wanted", "measured", ""],
        [[t["target"], t["wanted"], t["measured"], t["status"]] for t in found["targets"]],
    )
    return "\n".join([*lines, ""])
