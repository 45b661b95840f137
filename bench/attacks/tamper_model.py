"""Train the tamper detector's instruction model, and report it on sets it did not see.

    python -m bench tamper_model [--write] [--out FILE]

The model (`guard/integrity/_model.py`) is logistic regression over the words, word
pairs and word stems present in the detector's folded copy of a text. Its data are
the team's own corpus (`testkit/attacks/`, with ordinary answers, our tests' near
misses and varied training data, `VARIETY`) and the retired held-out sets (`RETIRED`,
each measured once before it joined): injections are positives; benign texts and the other families'
attacks (biased text with no words for the judge: padding, tool arguments, encodings,
look-alikes) are negatives, and so is each attack's biased claim alone (its `plain`
text), so that a biased claim teaches the model nothing;
hidden-text attacks are left out (the hidden-character check finds them).

The threshold is the `QUANTILE` of benign scores out of fold: each group (our corpus,
each retired set, the varied data) is held out in turn, a model trained on the others
scores its benign texts, and the threshold sits above all but 1.5 % of them.

The report is a forward test, the way the sets arrived: for each retired set from the
fourth on, a model trained on our corpus and the sets before it (threshold chosen the
same way) marks that set, beside the phrase rules as they are now (developed on the
sets before the newest, so in sample for those) and the two together. Its
last row is the model trained on everything over ordinary answers kept out of its
training (`HELD_ANSWERS`): its false alarms on the kind of text it reads most.

`--write` trains on everything and writes `guard/integrity/tamper_model.json`: the
tokens whose weight is not negligible, the bias, the threshold, and a digest of the
data, which a test compares with the data so that the model cannot go stale.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import optimize, sparse

from bench.harness.report import table
from gateway.wire.tools import arguments_of, with_tool_lines
from guard.integrity._model import MIN_TOKENS, WINDOW, Model, tokens
from guard.integrity.tamper import detect, reading

ROOT = Path(__file__).resolve().parents[2]
MODEL_FILE = ROOT / "guard" / "integrity" / "tamper_model.json"
# Our corpus, the near misses our tests hold the detector quiet on (documentation of
# verdict formats, "As an AI language model, I have no opinions…") and ordinary
# answers, the last two read as benign.
QUIET = ROOT / "testkit" / "attacks" / "quiet.jsonl"
OWN = (
    ROOT / "testkit" / "attacks" / "attacks.jsonl",
    ROOT / "testkit" / "attacks" / "benign.jsonl",
    QUIET,
)
# Our tests hold the detector quiet on the near misses: each counts this many times in
# training, so that no other text's words outweigh them.
NEAR_MISS = 4.0
ANSWERS = ROOT / "testkit" / "attacks" / "answers.jsonl"
# Varied injections and benign look-alikes, written as training data after the eighth
# set (by writers who had read the sets' READMEs; the third batch mostly in languages
# beyond the rules' nine): in training, not in the forward test.
VARIETY = tuple(
    ROOT / "testkit" / "attacks" / f"{name}.jsonl" for name in ("variety", "variety2", "variety3")
)
# Ordinary answers kept out of training, to count the model's false alarms on them.
HELD_ANSWERS = ROOT / "bench" / "data" / "answers" / "answers.jsonl"
# The held-out sets measured once and then retired, oldest first; a new blind set joins
# only after its one measurement.
_BLIND_SETS = ("heldout", *(f"heldout{number}" for number in range(2, 11)))
RETIRED = tuple(ROOT / "bench" / "data" / name / "attacks.jsonl" for name in _BLIND_SETS)
QUANTILE = 0.985
# L2 regularisation: the inverse of its strength (chosen by the forward test).
C = 20.0
# Weights smaller than this are left out of the shipped table.
NEGLIGIBLE = 0.1


@dataclass(frozen=True)
class Text:
    family: str
    text: str
    # How much the text counts in the loss: our tests' near misses count `NEAR_MISS` times.
    weight: float = 1.0

    @property
    def injection(self) -> bool:
        return self.family == "injection"

    @property
    def benign(self) -> bool:
        return self.family == "benign"

    @property
    def plain(self) -> bool:
        """An attack's biased claim alone, in plain words."""
        return self.family == "plain"


Group = tuple[Text, ...]


def _read(paths: Sequence[Path]) -> Group:
    rows = []
    for path in paths:
        weight = NEAR_MISS if path == QUIET else 1.0
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                family = row.get("family", "benign")
                if family != "hidden_text":
                    rows.append(Text(family, row["text"], weight))
                if row.get("plain"):
                    # The biased claim alone: no instruction, so a negative.
                    rows.append(Text("plain", row["plain"]))
                if row.get("tool_name"):
                    # The lines the gateway judges a tool call by, as the detector reads them.
                    found = arguments_of(row["tool_name"], row["arguments"])
                    rows.append(Text(family, with_tool_lines([], found)[0]))
    return tuple(rows)


def groups() -> list[Group]:
    """Our corpus, the ordinary answers we train on, each retired set (set k at index
    k + 1), then the varied training data (last, so that no forward model has it)."""
    return [_read(OWN), _read([ANSWERS]), *(_read([path]) for path in RETIRED), _read(VARIETY)]


def digest() -> str:
    """The data's digest: what the shipped model records it was trained on."""
    hashed = hashlib.sha256()
    for path in (*OWN, ANSWERS, *RETIRED, *VARIETY):
        hashed.update(path.read_bytes())
    return hashed.hexdigest()


class Features:
    """Each token present is a feature, scaled by one over the square root of their
    count (of `MIN_TOKENS` at least): the model's own scaling."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.tokens = [tokens(reading(text)) for text in texts]

    def matrix(self, vocabulary: dict[str, int]) -> sparse.csr_matrix:
        rows, columns, values = [], [], []
        for row, found in enumerate(self.tokens):
            scale = 1 / np.sqrt(max(len(found), MIN_TOKENS))
            for token in found:
                if (column := vocabulary.get(token)) is not None:
                    rows.append(row)
                    columns.append(column)
                    values.append(scale)
        shape = (len(self.tokens), len(vocabulary))
        return sparse.csr_matrix((values, (rows, columns)), shape=shape)


def _fit(texts: Group) -> Model:
    features = Features([text.text for text in texts])
    vocabulary: dict[str, int] = {}
    for found in features.tokens:
        for token in found:
            vocabulary.setdefault(token, len(vocabulary))
    matrix = features.matrix(vocabulary)
    signs = np.array([1.0 if text.injection else -1.0 for text in texts])
    counts = np.array([text.weight for text in texts])

    def loss(weights: np.ndarray) -> tuple[float, np.ndarray]:
        margins = signs * (matrix @ weights[:-1] + weights[-1])
        slopes = -counts * signs / (1 + np.exp(margins))
        value = counts @ np.logaddexp(0, -margins) + weights[:-1] @ weights[:-1] / (2 * C)
        return value, np.append(matrix.T @ slopes + weights[:-1] / C, slopes.sum())

    start = np.zeros(len(vocabulary) + 1)
    found = optimize.minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    weights = {
        token: round(float(found.x[column]), 4)
        for token, column in vocabulary.items()
        if abs(found.x[column]) >= NEGLIGIBLE
    }
    return Model(weights=weights, bias=round(float(found.x[-1]), 4), threshold=0.0)


def _threshold(groups_: list[Group]) -> float:
    """The `QUANTILE` of benign scores, the ordinary answers', each retired set's and
    the varied data's, scored by a model trained without them (our own benign texts are
    twins of our attacks, not a sample of what the detector reads)."""
    scores = []
    for held in range(1, len(groups_)):
        model = _fit(
            tuple(text for index, group in enumerate(groups_) if index != held for text in group)
        )
        scores += [model.best(reading(text.text))[0] for text in groups_[held] if text.benign]
    return round(float(np.quantile(scores, QUANTILE)), 4)


def train(groups_: list[Group]) -> Model:
    """A model trained on every group, its threshold chosen out of fold."""
    model = _fit(tuple(text for group in groups_ for text in group))
    return Model(weights=model.weights, bias=model.bias, threshold=_threshold(groups_))


def _rate(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f} %)" if whole else "0/0"


def _marks(model: Model, subset: list[Text]) -> tuple[int, int, int]:
    """How many of `subset` the model marks, the rules mark, and either marks."""
    by_model = [model.window(reading(text.text)) is not None for text in subset]
    by_rules = [bool(detect(text.text, rules_only=True)) for text in subset]
    either = sum(a or b for a, b in zip(by_model, by_rules, strict=True))
    return sum(by_model), sum(by_rules), either


def forward(groups_: list[Group]) -> list[list[str]]:
    """One row per retired set from the fourth on: the model trained before it, the rules."""
    rows = []
    for index in range(5, len(groups_) - 1):
        number = index - 1
        print(f"set {number}: training on our corpus and sets 1 to {number - 1}", file=sys.stderr)
        model = train(groups_[:index])
        texts = groups_[index]
        injections = [text for text in texts if text.injection]
        benign = [text for text in texts if text.benign]
        plain = [text for text in texts if text.plain]
        other = [text for text in texts if not (text.injection or text.benign or text.plain)]
        inj, ben, pla, oth = (
            _marks(model, subset) for subset in (injections, benign, plain, other)
        )
        rows.append([
            f"set {number}", f"{model.threshold:.2f}",
            _rate(inj[0], len(injections)), _rate(inj[1], len(injections)),
            _rate(inj[2], len(injections)),
            _rate(ben[0], len(benign)), _rate(ben[2], len(benign)),
            _rate(oth[0], len(other)), _rate(pla[0], len(plain)),
        ])  # fmt: skip
    return rows


def held_answers(model: Model) -> list[str]:
    """The held-out ordinary answers' row: how many the model and the rules mark."""
    answers = list(_read([HELD_ANSWERS]))
    by_model, by_rules, either = _marks(model, answers)
    count = len(answers)
    return [
        f"ordinary answers, held out ({count})", f"{model.threshold:.2f}", "", "", "",
        _rate(by_model, count), _rate(either, count), f"rules alone: {_rate(by_rules, count)}", "",
    ]  # fmt: skip


def _write(model: Model) -> None:
    weights = dict(sorted(model.weights.items(), key=lambda item: -abs(item[1])))
    shipped = {
        "trained_by": "python -m bench tamper_model --write",
        "digest": digest(),
        "window": WINDOW,
        "bias": model.bias,
        "threshold": model.threshold,
        "weights": weights,
    }
    MODEL_FILE.write_text(json.dumps(shipped, ensure_ascii=False, indent=0) + "\n", "utf-8")
    print(f"wrote {MODEL_FILE.relative_to(ROOT)}: {len(weights)} tokens", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench tamper_model", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--write", action="store_true", help=f"write {MODEL_FILE.relative_to(ROOT)}"
    )
    parser.add_argument("--out", type=Path, help="also write the report to this markdown file")
    args = parser.parse_args(argv)
    data = groups()
    rows = forward(data)
    print("training on everything", file=sys.stderr)
    model = train(data)
    rows.append(held_answers(model))
    report = "\n".join(table(
        ["held-out set", "threshold", "injection marked: model", "rules as they are now",
         "model or rules", "benign marked: model", "model or rules",
         "other attacks marked: model", "plain claims marked: model"],
        rows,
    ))  # fmt: skip
    print(report)
    if args.out:
        args.out.write_text(report + "\n", encoding="utf-8")
    if args.write:
        _write(model)


if __name__ == "__main__":
    main()
