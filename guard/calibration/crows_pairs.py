"""CrowS-Pairs (Nangia et al., 2020) as labelled texts.

The published file, `data/crows_pairs_anonymized.csv` in
github.com/nyu-mll/crows-pairs, is a CSV with one sentence pair a row:
`sent_more` (the more stereotypical sentence), `sent_less` (a minimal edit of
it about a contrasting group), `stereo_antistereo` (`stereo`: sent_more
demonstrates a stereotype of a disadvantaged group; `antistereo`: sent_less
violates one), `bias_type` (race-color, gender, ...), and annotation columns
this reader ignores. Its first, unnamed column is a row index; some copies
carry an `id` column too.

Each row gives two texts: `sent_more` labelled biased and `sent_less`
labelled unbiased, both with `bias_type` as their category. The labels are
the dataset's own but relative: sent_less is the less stereotypical side of
its pair, not a text vetted as free of bias.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

from guard.calibration.labelled import Collector, LabelledItem, LabelledSet, opened
from guard.errors import LabelledDataError

if TYPE_CHECKING:
    import _csv  # the reader's type is only named there

__all__ = ["REQUIRED_COLUMNS", "read_crows_pairs"]

REQUIRED_COLUMNS = ("sent_more", "sent_less", "stereo_antistereo", "bias_type")
_DIRECTIONS = ("stereo", "antistereo")


def read_crows_pairs(path: Path, *, strict: bool = False) -> LabelledSet:
    collect = Collector(path, "crows-pairs", strict=strict)
    with opened(path, "r", encoding="utf-8-sig", newline="") as file:
        rows = csv.reader(file)
        try:
            _read_rows(rows, collect)
        except UnicodeDecodeError as exc:
            raise LabelledDataError(f"{path}:{rows.line_num + 1}: not valid UTF-8") from exc
        except csv.Error as exc:
            raise LabelledDataError(f"{path}:{rows.line_num}: not CSV: {exc}") from exc
    return collect.done()


def _read_rows(rows: _csv.Reader, collect: Collector) -> None:
    header = next(rows, None)
    if header is None:
        raise LabelledDataError(f"{collect.path}: empty file")
    header = [name.strip() for name in header]
    missing = [name for name in REQUIRED_COLUMNS if name not in header]
    if missing:
        raise LabelledDataError(
            f"{collect.path}: not a CrowS-Pairs CSV: no column {', '.join(missing)}"
        )
    ident_column = "id" if "id" in header else ("" if "" in header else None)
    start = rows.line_num + 1  # a row's first line: a quoted sentence may hold a newline
    number = 0
    for fields in rows:
        line, start = start, rows.line_num + 1
        if not fields:
            continue  # a blank line
        number += 1
        if len(fields) != len(header):
            collect.skip(str(line), f"expected {len(header)} fields, got {len(fields)}")
            continue
        row = dict(zip(header, fields, strict=True))
        more, less = row["sent_more"].strip(), row["sent_less"].strip()
        direction = row["stereo_antistereo"].strip()
        if not more or not less:
            collect.skip(str(line), "empty sent_more or sent_less")
            continue
        if direction not in _DIRECTIONS:
            why = f"stereo_antistereo must be stereo or antistereo, got {direction!r}"
            collect.skip(str(line), why)
            continue
        pair = (row[ident_column].strip() if ident_column is not None else "") or str(number)
        for text, biased, side in ((more, True, "more"), (less, False, "less")):
            collect.add(
                LabelledItem(
                    text=text,
                    biased=biased,
                    location=str(line),
                    line=line,
                    category=row["bias_type"].strip() or None,
                    id=f"{pair}:{side}",
                )
            )
