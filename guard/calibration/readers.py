"""One entry point for every labelled format `bias-guard calibrate` reads."""

from __future__ import annotations

from pathlib import Path

from guard.calibration.bbq import read_bbq
from guard.calibration.crows_pairs import read_crows_pairs
from guard.calibration.labelled import LabelledSet, read_labelled_jsonl
from guard.calibration.stereoset import read_stereoset

__all__ = ["FORMATS", "read_labelled"]

FORMATS = ("jsonl", "crows-pairs", "stereoset", "bbq")


def read_labelled(
    path: Path,
    format: str = "jsonl",
    *,
    scale: float = 1.0,
    label_cut: float | None = None,
    strict: bool = False,
) -> LabelledSet:
    """The labelled texts of `path`, read as `format` (one of `FORMATS`).

    `scale` and `label_cut` only matter to JSONL labels given as expected scores.
    Raises `LabelledDataError` for a file that cannot be read or holds no item.
    """
    if format == "jsonl":
        return read_labelled_jsonl(path, scale=scale, label_cut=label_cut, strict=strict)
    if format == "crows-pairs":
        return read_crows_pairs(path, strict=strict)
    if format == "stereoset":
        return read_stereoset(path, strict=strict)
    if format == "bbq":
        return read_bbq(path, strict=strict)
    raise ValueError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
