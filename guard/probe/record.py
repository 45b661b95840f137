"""A probe run as JSON, and the cells an earlier run of it left in its file.

The shape: `{"findings": [...], "cells": [...], "model", "judge", "suite",
"samples"}`, each finding `Finding.to_json`, each cell `Cell.to_json`. The file is
rewritten as cells finish (its findings empty until the run ends), so that a run
stopped on the way resumes from it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from guard.probe.run import Cell, CellKey
from guard.probe.stats import Finding

__all__ = ["finished_cells", "probe_json", "write_record"]


def probe_json(
    cells: Sequence[Cell],
    found: Sequence[Finding],
    *,
    model: str,
    judge: str,
    suite: str,
    samples: int,
) -> dict[str, Any]:
    return {
        "findings": [finding.to_json() for finding in found],
        "cells": [cell.to_json() for cell in cells],
        "model": model,
        "judge": judge,
        "suite": suite,
        "samples": samples,
    }


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Write `record` to `path` whole or not at all (a temporary file, then a rename)."""
    temporary = path.with_name(f".{path.name}.partial")
    temporary.write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(temporary, path)


def finished_cells(path: Path, *, model: str, judge: str) -> dict[CellKey, Cell]:
    """The finished cells of the run recorded in `path` (none when there is no such file).

    Raises `ValueError` when the file is not a probe's record, or when it records another
    target model or judge: their answers are not this run's to reuse.
    """
    if not path.exists():
        return {}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        cells = [Cell.from_json(value) for value in record["cells"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a probe record to resume ({exc})") from exc
    for name, wanted in (("model", model), ("judge", judge)):
        if record.get(name) != wanted:
            raise ValueError(
                f"{path} records {name} {record.get(name)!r}, not {wanted!r}:"
                " give another file to start a new run"
            )
    return {cell.key: cell for cell in cells if cell.finished}
