"""`/ui/review`: the review queue one record at a time, and its form's answer.

The page shows the first record of the viewer's queue (`GET /v1/bias/reviews/queue`'s
order) that it has not skipped: the answer's text where it was kept, with the judge's
opinions marked in it, each opinion's verdict and reason, and a form of agree or
disagree for the answer and for each opinion, and a note. Keys drive all of it
(`static/review.js`, listed on the page); without script the form still works. The form
posts here; the review is stored as `POST /v1/bias/scores/{run_id}/review` stores it,
and the next record follows. Only keys that may review (`keys[].reviewer`, or an admin)
see the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response

from gateway.api.agreement import JUDGE_POSITIVE
from gateway.api.reviews import MAX_QUEUE, add_review, queue_item, reviewer_of
from gateway.api.search import Viewer
from gateway.api.ui.marking import marked
from gateway.api.ui.rendering import (
    gateway_of,
    render_page,
    small_form,
    to_login,
    viewer_of_cookie,
)
from gateway.errors import GatewayError, PayloadTooLarge, status_of
from gateway.store.queries import ScoreQuery
from gateway.store.reviews import Reviews
from guard import is_biased

__all__ = ["QueueItem", "review_body", "review_form", "review_page", "review_script"]

_FORM_MAX = 64 * 1024  # bytes: a note and a few dozen opinions' labels
_SHOWN = 100  # the records counted ahead in the progress ("n of m+")
_SCRIPT = Path(__file__).parent / "static" / "review.js"


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One record of the queue as the page shows it: the review API's queue entry
    (`gateway.api.reviews.queue_item`), its text with the opinions marked, and whether
    the judge found it (and each opinion) biased."""

    entry: dict[str, Any]
    text: Markup | None
    judged_biased: bool
    opinions_biased: list[bool]

    @classmethod
    def of(cls, entry: dict[str, Any]) -> QueueItem:
        quoted = [opinion["text"] or "" for opinion in entry["opinions"]]
        text = None if entry["text"] is None else marked(entry["text"], quoted)
        judged = [is_biased(str(opinion["result"] or "")) for opinion in entry["opinions"]]
        return cls(entry, text, entry["verdict"] in JUDGE_POSITIVE, judged)


def review_body(form: dict[str, str]) -> dict[str, Any]:
    """The review API's body from the page's form: the label, each opinion given a label
    (with the judge's categories when it is found biased), and the note if any.

    >>> body = review_body({"label": "biased", "opinion-1": "yes",
    ...     "opinion-1-categories": "gender", "opinion-0": "", "note": " ok "})
    >>> body["opinions"], body["note"]
    ([{'index': 1, 'biased': True, 'categories': ['gender']}], 'ok')
    """
    body: dict[str, Any] = {"label": form.get("label", "")}
    opinions = []
    for name, value in form.items():
        index = name.removeprefix("opinion-")
        if index == name or not index.isdigit() or value not in ("yes", "no"):
            continue
        biased = value == "yes"
        categories = form.get(f"{name}-categories", "") if biased else ""
        opinions.append({"index": int(index), "biased": biased, "categories": _split(categories)})
    if opinions:
        body["opinions"] = sorted(opinions, key=lambda opinion: opinion["index"])
    note = form.get("note", "").strip()
    if note:
        body["note"] = note
    return body


async def review_page(request: Request) -> Response:
    gateway = gateway_of(request)
    viewer = viewer_of_cookie(gateway, request)
    if viewer is None:
        return to_login(request)
    return await _show(request, viewer, _count(request.query_params.get("done")))


async def review_form(request: Request) -> Response:
    gateway = gateway_of(request)
    viewer = viewer_of_cookie(gateway, request)
    if viewer is None:
        return to_login(request)
    form = await small_form(request, _FORM_MAX)
    if form is None:
        too_large = PayloadTooLarge(f"A review from this page is at most {_FORM_MAX} bytes.")
        return await _show(request, viewer, 0, error=too_large.message,
                           status=status_of(too_large)[0])  # fmt: skip
    done = _count(form.get("done"))
    try:
        await _store_review(request, viewer, form.get("run_id", ""), review_body(form))
    except GatewayError as exc:
        return await _show(request, viewer, done, error=exc.message, status=status_of(exc)[0])
    following = {**_filters(request), "done": str(done + 1)}
    return RedirectResponse(f"/ui/review?{urlencode(following)}", status_code=303)


async def review_script(request: Request) -> Response:
    return FileResponse(_SCRIPT, media_type="text/javascript",
                        headers={"cache-control": "no-cache"})  # fmt: skip


async def _show(request: Request, viewer: Viewer, done: int, *, error: str | None = None,
                status: int = 200) -> Response:  # fmt: skip
    filters = _filters(request)
    skip = min(_count(request.query_params.get("skip")), MAX_QUEUE)
    try:
        waiting = await _queue(request, viewer, filters.get("key"), limit=skip + _SHOWN + 1)
    except GatewayError as exc:
        return render_page("review.html", request, viewer, status=status_of(exc)[0],
                           refused=exc.message, params=filters)  # fmt: skip
    ahead = waiting[skip:]
    return render_page(
        "review.html", request, viewer, status=status, script=True, refused=None, error=error,
        item=ahead[0] if ahead else None, done=done, at=done + skip + 1,
        waiting=done + min(len(waiting), skip + _SHOWN), more=len(waiting) > skip + _SHOWN,
        params=filters, query=urlencode(filters), skipped=bool(waiting) and not ahead,
        restart_query=urlencode({**filters, "done": str(done)}),
        skip_query=urlencode({**filters, "done": str(done), "skip": str(skip + 1)}),
    )  # fmt: skip


def _filters(request: Request) -> dict[str, str]:
    key = request.query_params.get("key", "")
    return {"key": key} if key else {}


def _count(value: str | None) -> int:
    return int(value) if value and value.isdigit() and len(value) < 9 else 0


def _split(value: str) -> list[str]:
    return [part for part in (piece.strip() for piece in value.split(",")) if part]


async def _queue(request: Request, viewer: Viewer, key: str | None, *,
                 limit: int) -> list[QueueItem]:  # fmt: skip
    """The review API's queue for this viewer (`GET /v1/bias/reviews/queue`)."""
    gateway = gateway_of(request)
    mine = viewer.scoped(ScoreQuery(key=key)).key  # the records' tenancy: search's
    waiting = await Reviews(gateway.store).queue(reviewer_of(viewer), key=mine, limit=limit)
    return [QueueItem.of(queue_item(record)) for record in waiting]


async def _store_review(request: Request, viewer: Viewer, run_id: str,
                        body: dict[str, Any]) -> None:  # fmt: skip
    """Stored as `POST /v1/bias/scores/{run_id}/review` stores it."""
    await add_review(gateway_of(request), viewer, run_id, body)
