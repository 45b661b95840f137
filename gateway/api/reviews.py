"""The review API: reviewers label the judge's verdicts, and see how often it agrees.

- `POST /v1/bias/scores/{run_id}/review`: a label (`biased` or `unbiased`), optionally
  per opinion and with a note; 201 with the stored review.
- `GET /v1/bias/reviews/queue`: the records this reviewer has not labelled yet, blocked
  first, then flagged, borderline and sampled passes (`gateway.store.reviews`).
- `GET /v1/bias/reviews/agreement`: the judge against the labels (`gateway.api.agreement`).
- `GET /v1/bias/reviews/export`: the labelled records as JSONL for `bias-guard calibrate`.

Who may review: a key with `reviewer: true`, or an admin (`KeySettings.may_review`);
without keys (open mode) anyone, as `open`. Tenancy is the records' (`gateway.api.search`):
a reviewer sees and labels its own key's records, an admin every key's, or one's with
`?key=`; a record it may not see answers 404 as one that does not exist.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.api.agreement import agreement, export_lines
from gateway.api.search import Viewer, parse_time, record_seen_by, viewer_of
from gateway.domain import CATEGORY_ID
from gateway.errors import BadRequest, Conflict, PermissionDenied
from gateway.runtime.resources import Gateway
from gateway.store import ScoreRecord
from gateway.store.reviews import RANKS, Review, Reviews

__all__ = [
    "LABELS",
    "add_review",
    "agreement_figures",
    "queue_item",
    "review_agreement",
    "review_export",
    "review_post",
    "review_queue",
    "reviewer_of",
]

LABELS = ("biased", "unbiased")
OPEN_REVIEWER = "open"  # the reviewer's name in open mode (no keys configured)
MAX_QUEUE = 200
MAX_NOTE = 4000
_BODY_BYTES = 256 * 1024


def _gateway(request: Request) -> Gateway:
    return cast(Gateway, request.app.state.gateway)


def _reviewer(gateway: Gateway, request: Request) -> tuple[Viewer, str]:
    """The caller, if it may review, and the name its reviews are kept under."""
    viewer = viewer_of(gateway, request)
    return viewer, reviewer_of(viewer)


def reviewer_of(viewer: Viewer) -> str:
    """The name `viewer`'s reviews are kept under; 403 if it may not review."""
    if viewer.key is None:
        return OPEN_REVIEWER
    if not viewer.key.may_review:
        raise PermissionDenied(
            "This key may not review: give it `reviewer: true` (or `admin: true`)."
        )
    return viewer.key.name


def _params(request: Request, allowed: frozenset[str]) -> Mapping[str, str]:
    params = request.query_params
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise BadRequest(
            f"Unknown query parameter `{unknown[0]}`; this endpoint takes"
            f" {', '.join(sorted(allowed))}.",
            param=unknown[0],
        )
    return params


def _key(viewer: Viewer, params: Mapping[str, str]) -> str | None:
    """Whose records: the viewer's own key's, or for an admin any key's (or `?key=`'s)."""
    key = params.get("key")
    if viewer.sees_all:
        return key
    if key is not None and key != viewer.key_name:
        raise PermissionDenied("Only an admin key may name another key.", param="key")
    return viewer.key_name


def _opinions(value: object) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise BadRequest("`opinions` must be a list of objects.", param="opinions")
    labelled = []
    for number, opinion in enumerate(value):
        where = f"opinions[{number}]"
        if not isinstance(opinion, dict) or set(opinion) - {"index", "biased", "categories"}:
            raise BadRequest(
                f"`{where}` must be an object of `index`, `biased` and `categories`.", param=where
            )
        index, biased = opinion.get("index"), opinion.get("biased")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise BadRequest(f"`{where}.index` must be a whole number >= 0.", param=where)
        if not isinstance(biased, bool):
            raise BadRequest(f"`{where}.biased` must be true or false.", param=where)
        categories = opinion.get("categories", [])
        if not isinstance(categories, list) or not all(
            isinstance(c, str) and CATEGORY_ID.fullmatch(c) for c in categories
        ):
            raise BadRequest(
                f"`{where}.categories` must be a list of category ids such as `gender`.",
                param=where,
            )
        labelled.append({"index": index, "biased": biased, "categories": categories})
    return labelled


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if len(raw) > _BODY_BYTES:
        raise BadRequest(f"A review is at most {_BODY_BYTES} bytes.")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"Request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest("Request body must be a JSON object.")
    unknown = sorted(set(body) - {"label", "opinions", "note"})
    if unknown:
        raise BadRequest(f"Unknown field `{unknown[0]}`.", param=unknown[0])
    return body


def _opinion_count(record: ScoreRecord) -> int:
    results = ((record.result or {}).get("analyzeStepResult") or {}).get("results") or []
    return len(results)


async def review_post(request: Request) -> Response:
    gateway = _gateway(request)
    viewer, _ = _reviewer(gateway, request)
    body = await _body(request)
    stored = await add_review(gateway, viewer, request.path_params["run_id"], body)
    return JSONResponse(stored.to_dict(), status_code=201)


async def add_review(gateway: Gateway, viewer: Viewer, run_id: str, body: dict[str, Any]) -> Review:
    """Store `viewer`'s review of `run_id` from a request's `body` (the API's, and the
    dashboard's review page's): checked, then appended."""
    reviewer = reviewer_of(viewer)
    label = body.get("label")
    if label not in LABELS:
        raise BadRequest(
            f"`label` must be one of {', '.join(LABELS)}; got {label!r}.", param="label"
        )
    opinions = _opinions(body.get("opinions"))
    note = body.get("note")
    if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE):
        raise BadRequest(f"`note` must be a string of at most {MAX_NOTE} characters.", param="note")
    record = await record_seen_by(gateway, viewer, run_id)
    if record.status != "scored" or record.score is None:
        raise Conflict(
            f"Run `{run_id}` has no final score to review (its status is {record.status}).",
            param="run_id",
        )
    count = _opinion_count(record)
    beyond = [o["index"] for o in opinions or [] if o["index"] >= count]
    if beyond:
        raise BadRequest(
            f"`opinions`: index {beyond[0]} is past the record's {count} opinions.",
            param="opinions",
        )
    review = Review(run_id, reviewer, record.key_name, label, opinions, note, time.time())
    stored = await Reviews(gateway.store).add(review)
    agrees = (record.verdict in ("flag", "block")) == (label == "biased")
    gateway.metrics.reviews.labels(label, str(agrees).lower()).inc()
    return stored


def queue_item(record: ScoreRecord) -> dict[str, Any]:
    """A record as the queue shows it: its text where kept, and each opinion with the
    judge's verdict and reason (the opinion's text and reason None where not kept)."""
    result = record.result or {}
    texts = (result.get("preprocessStepResult") or {}).get("opinions") or []
    verdicts = (result.get("analyzeStepResult") or {}).get("results") or []
    whole = len(texts) != len(verdicts)  # the whole text was judged as one opinion
    opinions = [
        {
            "index": index,
            "text": None if whole else (texts[index] or None),
            "result": verdict.get("result"),
            "reason": verdict.get("reason") or None,
            "categories": verdict.get("categories") or [],
        }
        for index, verdict in enumerate(verdicts)
    ]
    return {
        "run_id": record.run_id,
        "rank": RANKS.get(record.review_rank or 0),
        "created_at": record.created_at,
        "key": record.key_name,
        "model": record.model,
        "api": record.api,
        "score": record.score,
        "verdict": record.verdict,
        "categories": record.categories or [],
        "biased_opinions": record.biased_opinions,
        "reason": record.reason,
        "prompt": record.prompt,
        "text": record.completion,
        "opinions": opinions,
        "tamper": record.tamper or [],
    }


async def review_queue(request: Request) -> Response:
    gateway = _gateway(request)
    viewer, reviewer = _reviewer(gateway, request)
    params = _params(request, frozenset({"limit", "key"}))
    limit = params.get("limit", "20")
    if not limit.isdigit() or not 1 <= int(limit) <= MAX_QUEUE:
        raise BadRequest(f"`limit` must be a whole number from 1 to {MAX_QUEUE}.", param="limit")
    key = _key(viewer, params)
    records = await Reviews(gateway.store).queue(reviewer, key=key, limit=int(limit))
    return JSONResponse(
        {
            "object": "list",
            "reviewer": reviewer,
            "key": key,
            "data": [queue_item(record) for record in records],
        }
    )


def _window(params: Mapping[str, str]) -> tuple[float, float]:
    """When the reviews were given: every one until now unless `since`/`until` say."""
    until = parse_time(params["until"], "until") if "until" in params else time.time()
    since = parse_time(params["since"], "since") if "since" in params else 0.0
    if since >= until:
        raise BadRequest("`since` must be before `until`.", param="since")
    return since, until


async def review_agreement(request: Request) -> Response:
    gateway = _gateway(request)
    viewer, _ = _reviewer(gateway, request)
    params = _params(request, frozenset({"since", "until", "key", "category", "precision"}))
    return JSONResponse(await agreement_figures(gateway, viewer, params))


async def agreement_figures(
    gateway: Gateway, viewer: Viewer, params: Mapping[str, str]
) -> dict[str, Any]:
    """The agreement's answer for `params` (the API's, and the dashboard's agreement page's)."""
    reviewer_of(viewer)
    since, until = _window(params)
    category = params.get("category")
    if category is not None and not CATEGORY_ID.fullmatch(category):
        raise BadRequest("`category` must be a category id such as `gender`.", param="category")
    try:
        precision = float(params.get("precision", "0.9"))
    except ValueError:
        precision = math.nan
    if not 0 < precision <= 1:  # NaN fails it too
        raise BadRequest("`precision` must be a number above 0 and at most 1.", param="precision")
    key = _key(viewer, params)
    reviewed = await Reviews(gateway.store).reviewed(since=since, until=until, key=key)
    figures = agreement(
        reviewed, scale=gateway.settings.judge.scale, precision=precision, category=category
    )
    return {"object": "bias.agreement", "since": since, "until": until, "key": key, **figures}


async def review_export(request: Request) -> Response:
    gateway = _gateway(request)
    viewer, _ = _reviewer(gateway, request)
    params = _params(request, frozenset({"since", "until", "key"}))
    since, until = _window(params)
    key = _key(viewer, params)
    reviewed = await Reviews(gateway.store).reviewed(since=since, until=until, key=key, texts=True)
    lines, left_out = export_lines(reviewed)
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    return Response(
        text,
        media_type="application/x-ndjson",
        headers={"x-bias-left-out": str(left_out)},
    )
