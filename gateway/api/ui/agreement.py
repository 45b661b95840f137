"""`/ui/agreement`: how the judge agrees with the reviewers, from the figures of
`GET /v1/bias/reviews/agreement` and with its filters (since, until, category, precision,
and key for admins): the confusion matrix, precision, recall, F1 and Cohen's kappa,
kappa over time (the same figures for each day or week of review time), the thresholds
chart (`guard.report.thresholds_chart`, the calibration report's) and the figures by
category. Only keys that may review see it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.reviews import agreement_figures, reviewer_of
from gateway.api.search import Viewer, parse_time
from gateway.api.ui.rendering import (
    gateway_of,
    render_page,
    to_login,
    viewer_of_cookie,
)
from gateway.errors import BadRequest, GatewayError, PermissionDenied, status_of
from guard.calibration import Counts, ThresholdRow
from guard.report import thresholds_chart
from guard.report.charts import BAR_COLOUR, CATEGORY_COLOUR, Series, line_chart

__all__ = ["BUCKETS", "agreement_page", "buckets"]

DAY = 86400
BUCKETS = {"day": DAY, "week": 7 * DAY}
_MONDAY = 4 * DAY  # the epoch was a Thursday: weeks start on Mondays, days at 00:00 UTC
_MOST_BUCKETS = 120
_WINDOW = 30 * DAY  # shown when `since` is not given
_FILTERS = ("since", "until", "category", "key", "precision", "bucket")


@dataclass(frozen=True, slots=True)
class Bucket:
    since: float
    label: str
    figures: dict[str, Any]  # the agreement API's, for this bucket's part of the window


def buckets(since: float, until: float, step: int) -> list[float]:
    """The starts of the day or week (`step`) buckets that meet [since, until).

    >>> [time.strftime("%a %d", time.gmtime(start)) for start in
    ...     buckets(DAY * 20068.5, DAY * 20080.5, 7 * DAY)]
    ['Mon 09', 'Mon 16', 'Mon 23']
    """
    offset = _MONDAY if step == BUCKETS["week"] else 0
    first = (since - offset) // step * step + offset
    return [float(first + n * step) for n in range(int((until - first - 1) // step) + 1)]


async def agreement_page(request: Request) -> Response:
    gateway = gateway_of(request)
    viewer = viewer_of_cookie(gateway, request)
    if viewer is None:
        return to_login(request)
    params = {name: request.query_params.get(name, "") for name in _FILTERS}
    params = {name: value for name, value in params.items() if value}
    params.setdefault("bucket", "day")
    context: dict[str, Any] = {"params": params, "buckets": list(BUCKETS), "refused": None,
                               "error": None, "figures": None}  # fmt: skip
    try:
        reviewer_of(viewer)  # the review API's rule of who may see these figures
    except PermissionDenied as refused:
        return render_page("agreement.html", request, viewer, status=status_of(refused)[0],
                           **{**context, "refused": refused.message})  # fmt: skip
    try:
        now = time.time()
        until = parse_time(params["until"], "until") if "until" in params else now
        since = parse_time(params["since"], "since") if "since" in params else until - _WINDOW
        step = BUCKETS.get(params["bucket"])
        if step is None:
            raise BadRequest("`bucket` must be day or week.", param="bucket")
        starts = buckets(since, until, step)
        if len(starts) > _MOST_BUCKETS:
            raise BadRequest(
                f"That window holds {len(starts)} {params['bucket']}s; kappa over time draws"
                f" at most {_MOST_BUCKETS}: choose a shorter window or weeks.",
                param="since",
            )
        asked = {**params, "since": str(since), "until": str(until)}
        figures = await _figures(request, viewer, asked)
        timeline = []
        for start in starts:
            end = min(start + step, until)
            part = await _figures(request, viewer, {**asked, "since": str(max(start, since)),
                                                    "until": str(end)})  # fmt: skip
            label = time.strftime("%Y-%m-%d", time.gmtime(start))
            timeline.append(Bucket(start, label, part))
    except GatewayError as exc:
        return render_page("agreement.html", request, viewer, status=status_of(exc)[0],
                           **{**context, "error": exc.message})  # fmt: skip
    context["figures"] = figures
    return render_page(
        "agreement.html", request, viewer, **context, timeline=timeline,
        kappa_chart=_kappa_chart(timeline, step, params["bucket"]),
        thresholds_chart=_thresholds_chart(figures),
    )  # fmt: skip


def _kappa_chart(timeline: list[Bucket], step: int, bucket: str) -> Markup:
    """Kappa and F1 of each bucket, at its number from the first."""
    first = timeline[0].since if timeline else 0.0

    def series(name: str, colour: str, figure: str, *, dashed: bool = False) -> Series:
        points = [((b.since - first) / step, b.figures["judge"][figure]) for b in timeline]
        return Series(name, colour, points, dashed=dashed)

    since = time.strftime("%Y-%m-%d", time.gmtime(first))
    return line_chart(
        [series("kappa", BAR_COLOUR, "kappa"), series("F1", CATEGORY_COLOUR, "f1", dashed=True)],
        title=f"Cohen's kappa by {bucket} (below 0 drawn at 0)",
        x_max=max(len(timeline) - 1, 1),
        x_label=f"{bucket}s from {since} (UTC)",
    )


def _thresholds_chart(figures: dict[str, Any]) -> Markup:
    """The calibration report's chart of the agreement's thresholds table."""

    def row(shown: dict[str, Any] | None) -> ThresholdRow | None:
        if shown is None:
            return None
        counts = Counts(tp=shown["tp"], fp=shown["fp"], fn=shown["fn"], tn=shown["tn"])
        return ThresholdRow(shown["threshold"], counts)

    rows = [row(shown) for shown in figures["thresholds"]]
    return thresholds_chart([r for r in rows if r is not None], scale=figures["scale"],
                            best=row(figures.get("best_f1")),
                            reaching=row(figures.get("reaching")))  # fmt: skip


async def _figures(request: Request, viewer: Viewer, params: dict[str, str]) -> dict[str, Any]:
    """The review API's figures (`GET /v1/bias/reviews/agreement`) for `params`."""
    asked = {name: value for name, value in params.items() if name != "bucket"}
    return await agreement_figures(gateway_of(request), viewer, asked)
