"""`GET /ui`: the dashboard, server-rendered with Jinja2 from the search and stats queries.

- `/ui`: an overview of a window: verdicts over time, the score distribution,
  the top categories, models and keys (keys for admin keys and open mode only).
- `/ui/records`: the latest flagged and blocked responses (or any filter the
  list API takes), a page at a time; each row opens `/ui/records/{run_id}`:
  score, verdict, categories, each opinion with its verdict and reason, the
  explanation, the trace id, and the prompt and completion only when content
  capture stored them.
- `/ui/whatif`: a GET form of thresholds (flag, block) and filters; how the
  window's scored records would have been decided with them, beside the verdicts
  they were given, overall and by key (admin keys and open mode only), model and
  category, with the newest of those they would flag and block
  (`gateway.api.whatif`, the same counts as `GET /v1/bias/whatif`).
- `/ui/review` and `/ui/agreement`: the review queue and the agreement of the judge
  with the reviewers (`gateway.api.ui.review`, `gateway.api.ui.agreement`).
- `/ui/probe`: the live probe's findings over a window (admin keys and open mode
  only), a chart per dimension as the CLI's report draws it, every comparison,
  and what the replays may spend (`gateway.api.probe`, the same figures as
  `GET /v1/bias/probe/findings`).
- `/ui/login`: with keys configured nothing is shown without one
  (`gateway.api.ui.signin`); every page then reads only what that key may
  (`gateway.api.search.Viewer`).

Everything the pages need ships with the package: templates, styles and charts
(`guard.report.charts`, inline SVG, shared with the eval report). Nothing is
fetched at run time.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.api.probe import probe_record
from gateway.api.search import parse_score_query
from gateway.api.ui.agreement import agreement_page
from gateway.api.ui.rendering import COOKIE, render_page, to_login
from gateway.api.ui.rendering import gateway_of as _gateway
from gateway.api.ui.rendering import viewer_of_cookie as _viewer
from gateway.api.ui.review import review_form, review_page, review_script
from gateway.api.ui.signin import login, login_form, logout
from gateway.api.whatif import parse_whatif_query
from gateway.domain import TAMPER_KINDS, VERDICTS
from gateway.errors import GatewayError, NotFound
from gateway.store.probes import ProbeQuery
from gateway.store.queries import TIME_BUCKETS, ScoreQuery, StatsQuery, encode_cursor
from guard.report.charts import bar_chart, stacked_columns
from guard.report.probe import FINDING_COLUMNS, finding_row, probe_charts

__all__ = ["COOKIE", "ui_routes"]

WINDOWS = {"1h": (3600, "minute"), "24h": (86400, "hour"), "7d": (7 * 86400, "day"),
           "30d": (30 * 86400, "day")}  # fmt: skip


def ui_routes() -> list[Route]:
    return [
        Route("/ui", overview, methods=["GET"]),
        Route("/ui/records", records, methods=["GET"]),
        Route("/ui/records/{run_id}", record, methods=["GET"]),
        Route("/ui/whatif", whatif, methods=["GET"]),
        Route("/ui/review", review_page, methods=["GET"]),
        Route("/ui/review", review_form, methods=["POST"]),
        Route("/ui/review.js", review_script, methods=["GET"]),
        Route("/ui/agreement", agreement_page, methods=["GET"]),
        Route("/ui/probe", probe, methods=["GET"]),
        Route("/ui/login", login_form, methods=["GET"]),
        Route("/ui/login", login, methods=["POST"]),
        Route("/ui/logout", logout, methods=["POST"]),
    ]


async def overview(request: Request) -> Response:
    gateway = _gateway(request)  # once: a reload may publish another meanwhile
    viewer = _viewer(gateway, request)
    if viewer is None:
        return to_login(request)
    window = request.query_params.get("window", "24h")
    if window not in WINDOWS:
        window = "24h"
    seconds, bucket = WINDOWS[window]
    now = time.time()
    filters = viewer.scoped(ScoreQuery(since=now - seconds, until=now))
    scale = gateway.settings.judge.scale
    store = gateway.store

    async def grouped(group_by: Any) -> list[Any]:
        return await store.stats(StatsQuery(filters, group_by, scale))

    (total,) = await store.stats(StatsQuery(filters, scale=scale))
    # Every bucket of the window, empty ones too, so the time axis is the window's.
    counted = {float(group.key): group.verdicts for group in await grouped(bucket)}
    step = TIME_BUCKETS[bucket]
    first = int((now - seconds) // step) * step
    columns = [
        (_bucket_label(float(start), bucket), counted.get(float(start), {}))
        for start in range(first, int(now) + 1, step)
    ]
    distribution = {int(group.key): group.records for group in await grouped("score")}
    score_items = [
        (
            f"{index * scale / 10:g} to {(index + 1) * scale / 10:g}",
            float(distribution.get(index, 0)),
        )
        for index in range(10)
    ]
    categories = [(str(g.key), float(g.records)) for g in (await grouped("category"))[:10]]
    models = [(str(g.key or "none"), float(g.records)) for g in (await grouped("model"))[:10]]
    by_key = (await grouped("key"))[:10] if viewer.sees_all else []
    keys = [(str(g.key or "no key"), float(g.records)) for g in by_key]
    # Per key, the share overload left scored (only keys whose responses were shed).
    shares = [(str(g.key or "no key"), g.scored_share) for g in by_key if g.overload_sampled]
    return render_page(
        "overview.html",
        request,
        viewer,
        window=window,
        windows=list(WINDOWS),
        total=total,
        verdicts_chart=stacked_columns(columns, title="Verdicts over time", series=VERDICTS),
        scores_chart=bar_chart(score_items, title="Score distribution"),
        categories_chart=bar_chart(categories, title="Top categories", colour="#6a1b9a"),
        models_chart=bar_chart(models, title="Top models"),
        keys_chart=bar_chart(keys, title="Top keys", colour="#00695c") if viewer.sees_all else None,
        shares=shares,
    )


async def records(request: Request) -> Response:
    gateway = _gateway(request)
    viewer = _viewer(gateway, request)
    if viewer is None:
        return to_login(request)
    params = {name: value for name, value in request.query_params.items() if value != ""}
    params.setdefault("verdict", "flag,block")  # the latest flagged and blocked, by default
    params.setdefault("limit", "25")
    try:
        query = viewer.scoped(parse_score_query(params))
    except GatewayError as exc:
        return render_page("records.html", request, viewer, status=400, error=exc.message,
                           params=params, rows=[], next_url=None,
                           tamper_kinds=TAMPER_KINDS)  # fmt: skip
    found = await gateway.store.search(query)
    page, more = found[: query.limit], len(found) > query.limit
    next_url = None
    if more and page:
        following = {**params, "cursor": encode_cursor(page[-1].created_at, page[-1].run_id)}
        next_url = f"/ui/records?{urlencode(following)}"
    shown = {name: value for name, value in params.items() if name not in ("cursor", "limit")}
    return render_page("records.html", request, viewer, rows=page, params=shown,
                       next_url=next_url, error=None, tamper_kinds=TAMPER_KINDS)  # fmt: skip


async def record(request: Request) -> Response:
    gateway = _gateway(request)
    viewer = _viewer(gateway, request)
    if viewer is None:
        return to_login(request)
    run_id = request.path_params["run_id"]
    found = await gateway.store.get(run_id)
    if found is None or not viewer.may_see(found):
        error = NotFound(f"No bias score with run id `{run_id}`.")
        return render_page(
            "record.html", request, viewer, status=404, error=error.message, row=None
        )
    result = found.result or {}
    opinions = result.get("preprocessStepResult", {}).get("opinions") or []
    verdicts = result.get("analyzeStepResult", {}).get("results") or []
    judged = opinions if len(opinions) == len(verdicts) else ["(the whole text)"] * len(verdicts)
    return render_page("record.html", request, viewer, row=found, error=None,
                       verdicts=list(zip(judged, verdicts, strict=True)),
                       category_scores=result.get("categoryScores") or {})  # fmt: skip


async def whatif(request: Request) -> Response:
    gateway = _gateway(request)  # once: a reload swaps it for later requests
    viewer = _viewer(gateway, request)
    if viewer is None:
        return to_login(request)
    settings = gateway.settings
    # The form starts at the thresholds the viewer's requests are decided with today.
    _, policy = settings.policy_for(viewer.key)
    params = {name: value for name, value in request.query_params.items() if value != ""}
    params.setdefault("flag", f"{policy.flag_threshold:g}")
    params.setdefault("block", f"{policy.block_threshold:g}")
    if "flag" not in request.query_params:  # a form sent with a count emptied turns it off
        for name in ("flag_biased_opinions", "block_biased_opinions"):
            count = getattr(policy, name)
            if count is not None:
                params[name] = str(count)
    window = params.get("window", "24h")
    if window not in WINDOWS:
        window = "24h"
    params["window"] = window
    asked = {name: value for name, value in params.items() if name != "window"}
    asked["since"] = str(time.time() - WINDOWS[window][0])
    scale = settings.judge.scale
    context: dict[str, Any] = {"params": params, "windows": list(WINDOWS), "scale": scale,
                               "result": None, "error": None}  # fmt: skip
    try:
        query = parse_whatif_query(asked, scale=scale, viewer=viewer)
    except GatewayError as exc:
        return render_page(
            "whatif.html", request, viewer, status=400, **{**context, "error": exc.message}
        )
    result = await gateway.store.whatif(query)
    return render_page("whatif.html", request, viewer, **{**context, "result": result})


async def probe(request: Request) -> Response:
    gateway = _gateway(request)
    viewer = _viewer(gateway, request)
    if viewer is None:
        return to_login(request)
    config, caps = gateway.settings.probe, gateway.probe.caps
    context: dict[str, Any] = {"config": config, "windows": list(WINDOWS), "record": None,
                               "tokens": caps.tokens_last_minute()}  # fmt: skip
    if not viewer.sees_all:
        error = "Only an admin key may read the live probe's findings."
        return render_page("probe.html", request, viewer, status=403, error=error, **context)
    window = request.query_params.get("window", "24h")
    window = window if window in WINDOWS else "24h"
    now = time.time()
    pairs = await gateway.store.probe_pairs(ProbeQuery(now - WINDOWS[window][0], now))
    record = await asyncio.to_thread(probe_record, pairs)  # the permutation tests take a while
    found = sorted(record["findings"], key=lambda f: (not f["significant"], f["q_value"]))
    return render_page("probe.html", request, viewer, error=None, window=window,
                       **{**context, "record": record,
                          "charts": probe_charts(record["findings"]), "columns": FINDING_COLUMNS,
                          "rows": [finding_row(f) for f in found]})  # fmt: skip


def _bucket_label(epoch: float, bucket: str) -> str:
    pattern = {"minute": "%H:%M", "hour": "%d %H:00", "day": "%m-%d"}[bucket]
    return time.strftime(pattern, time.gmtime(epoch))
