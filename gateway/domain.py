"""The gateway's domain values, each defined once and used everywhere by name.

They are `Literal` types, so a value is a plain string on the wire, in the store
and in a config file, and mypy still refuses a misspelt one. Each tuple lists a
type's values in their display order.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from guard.bias.categories import CATEGORY_ID
from guard.integrity.tamper import TamperKind

__all__ = [
    "APIS",
    "CATEGORY_ID",
    "FINAL_STATUSES",
    "HOLDS",
    "MODES",
    "ON_TAMPER",
    "STATUSES",
    "TAMPER_KINDS",
    "VERDICTS",
    "Api",
    "Hold",
    "Mode",
    "OnTamper",
    "PolicyVerdict",
    "Prejudge",
    "ReasonMode",
    "ReasonStatus",
    "SkipReason",
    "Status",
    "StreamPolicy",
    "TamperKind",
]

# What a policy decides for a scored response (a judge's verdict on one opinion is
# `guard.Verdict`, "yes" or "no").
PolicyVerdict = Literal["pass", "flag", "block"]
VERDICTS: Final[tuple[PolicyVerdict, ...]] = get_args(PolicyVerdict)

# What a policy does with an answer whose text addressed the judge (a tamper finding,
# `guard.integrity.tamper`): block it, flag it at least, or go by the score alone.
OnTamper = Literal["block", "flag", "ignore"]
ON_TAMPER: Final[tuple[OnTamper, ...]] = get_args(OnTamper)
# What a tamper finding says addressed the judge, in the detector's order.
TAMPER_KINDS: Final[tuple[TamperKind, ...]] = get_args(TamperKind)

# How a request is scored: not at all, off the request path, or in it.
Mode = Literal["off", "monitor", "enforce"]
MODES: Final[tuple[Mode, ...]] = get_args(Mode)

# The API a scored text came through (a record's `api`): one of the model APIs the
# gateway proxies (`gateway.proxy.surfaces`), or a text handed to it to judge
# (`/v1/moderations`, `/v1/bias/score`).
Api = Literal["chat.completions", "completions", "responses", "messages", "moderations", "score"]
APIS: Final[tuple[Api, ...]] = get_args(Api)

# How an enforced stream reaches the client.
StreamPolicy = Literal["buffer", "passthrough", "windowed"]

# What a windowed stream holds back: each window until it passed, or nothing.
Hold = Literal["window", "none"]
HOLDS: Final[tuple[Hold, ...]] = get_args(Hold)

# How an enforced whole answer is asked of an upstream: as a whole, or as a stream the
# gateway judges as it arrives and rebuilds into the whole answer (`prejudge: stream`).
Prejudge = Literal["off", "stream"]

# Where a record stands. Every status but `pending` is final: written once.
Status = Literal["pending", "scored", "error", "skipped", "dropped"]
STATUSES: Final[tuple[Status, ...]] = get_args(Status)
FINAL_STATUSES: Final[frozenset[Status]] = frozenset(STATUSES) - {"pending"}

# When a score's explanation is written: with the score, after it, or never.
ReasonMode = Literal["inline", "deferred", "off"]

# Where the explanation of a score stands: `pending` while a deferred one is
# generated, `done`, `off` (not asked for), `not_needed` (a passing answer under
# `judge.explanations.scope: flagged`), `error` (the judge failed it), `skipped` (too many
# waiting) or `dropped` (the gateway stopped first).
ReasonStatus = Literal["pending", "done", "off", "not_needed", "error", "skipped", "dropped"]

# Why a response was not scored (`x-bias-skip-reason`, a record's `status_reason`).
SkipReason = Literal[
    "no_text",  # the answer carried no text to judge
    "unreadable",  # the gateway could not read the answer
    "overloaded",  # the scoring queue was full
    "overload_sampled",  # not in the share scored while the judge cannot keep up
    "not_sampled",  # not in the policy's `sample_rate` share
    "upstream_error",  # the upstream answered with an error
    "no_model_text",  # a pass-through path that never carries model text
    "unscored_path",  # a pass-through path a policy allows unscored
]
